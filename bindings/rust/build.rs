//! Links libholdfast as pkg-config describes it. `PKG_CONFIG_PATH` may name a
//! meson build's `meson-uninstalled/` directory (pkg-config then prefers
//! `holdfast-uninstalled.pc`); `HOLDFAST_STATIC=1` links libholdfast.a.
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&prog).args(args).arg("holdfast").output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => panic!(
            "`{prog} {} holdfast` failed: {}\nInstall libholdfast (meson install) or set \
             PKG_CONFIG_PATH to a build's meson-uninstalled directory.",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("cannot run {prog}: {e} (install pkg-config)"),
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=HOLDFAST_STATIC");
    let static_link = env::var_os("HOLDFAST_STATIC").is_some_and(|v| v == "1");
    // a library rebuilt with other dependencies (Libs.private) relinks us
    let pcdir = pkg_config(&["--variable=pcfiledir"]);
    for name in ["holdfast-uninstalled.pc", "holdfast.pc"] {
        let pc = std::path::Path::new(&pcdir).join(name);
        if pc.exists() {
            println!("cargo:rerun-if-changed={}", pc.display());
            break;
        }
    }
    let version = pkg_config(&["--modversion"]);
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < (0, 2) {
        panic!("libholdfast {version} is too old: these bindings need 0.2 or later");
    }
    let libs = if static_link {
        pkg_config(&["--libs", "--static"])
    } else {
        pkg_config(&["--libs"])
    };
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            if !static_link {
                // tests and examples find an uninstalled library where it was built
                println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
            }
        } else if let Some(lib) = flag.strip_prefix("-l") {
            if lib == "holdfast" && static_link {
                println!("cargo:rustc-link-lib=static=holdfast");
            } else {
                println!("cargo:rustc-link-lib={lib}");
            }
        }
    }
}
