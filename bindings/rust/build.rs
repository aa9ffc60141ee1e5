//! Builds the libholdfast this crate links.
//!
//! Default: compiles libholdfast from the C sources under `csrc/` (the
//! repository's `include/`, `src/base/` and `src/lib/`, reached through
//! symlinks in the repository and carried as files by `cargo package`) with
//! the system's C compiler (`$CC`, else `cc`), archives them (`$AR`, else
//! `ar`) and links the archive statically; jansson and libcurl are linked
//! dynamically (they are the system's: Debian's libjansson-dev and
//! libcurl4-openssl-dev to build, libjansson4 and libcurl4 to run). The
//! binary needs no libholdfast at run time. The fault engine
//! (src/base/faults.c) is left out, as from the installed library.
//!
//! No `cc` crate: crates.io is not reachable where this is built, and a
//! compiler call per file is all that is needed.
//!
//! Feature `system`: link libholdfast as pkg-config describes it.
//! `PKG_CONFIG_PATH` may name a meson build's `meson-uninstalled/` directory
//! (pkg-config then prefers `holdfast-uninstalled.pc`); `HOLDFAST_STATIC=1`
//! links libholdfast.a.
use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn main() {
    if env::var_os("CARGO_FEATURE_SYSTEM").is_some() {
        system();
    } else {
        bundled();
    }
}

// ---------------------------------------------------------------------------
// Bundled: compile csrc/
// ---------------------------------------------------------------------------

/// The library's C files: src/base and src/lib (its rooms included), minus
/// the fault engine (meson.build's base_sources, lib_sources and
/// libholdfast_etcdc).
fn is_library_source(dir: &str, name: &str) -> bool {
    name.ends_with(".c") && !(dir == "base" && name == "faults.c")
}

/// The directories of csrc/ that hold the library's C files and headers:
/// src/base, src/lib (above the backends), src/lib/fs and src/lib/etcd.
const C_DIRS: [&str; 4] = ["base", "lib", "lib/fs", "lib/etcd"];

fn sources(csrc: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in C_DIRS {
        let d = csrc.join(dir);
        let entries = fs::read_dir(&d).unwrap_or_else(|e| {
            panic!("holdfast: cannot read the bundled C sources in {}: {e}", d.display())
        });
        for e in entries {
            let e = e.expect("a directory entry");
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_file() && is_library_source(dir, &name) {
                out.push(d.join(&name));
            }
        }
    }
    out.sort();
    out
}

/// In the repository (meson.build two levels up), the sources chosen here
/// are the ones meson.build builds the library from, and the crate's version
/// is the project's.
fn check_against_meson(manifest: &Path, srcs: &[PathBuf]) {
    let meson = manifest.join("../../meson.build");
    let Ok(text) = fs::read_to_string(&meson) else { return };
    println!("cargo:rerun-if-changed={}", meson.display());
    let mut want = BTreeSet::new();
    for piece in text.split('\'') {
        for dir in C_DIRS {
            if let Some(name) = piece.strip_prefix(&format!("src/{dir}/")) {
                if !name.contains('/') && is_library_source(dir, name) {
                    want.insert(format!("{dir}/{name}"));
                }
            }
        }
    }
    let have: BTreeSet<String> = srcs
        .iter()
        .map(|p| p.strip_prefix(manifest.join("csrc")).unwrap().to_string_lossy().into_owned())
        .collect();
    if want != have {
        panic!(
            "holdfast: build.rs would compile {:?} but meson.build builds the library from {:?}",
            have.difference(&want).collect::<Vec<_>>(),
            want.difference(&have).collect::<Vec<_>>()
        );
    }
    let version = text
        .split("version :")
        .nth(1)
        .and_then(|s| s.split('\'').nth(1))
        .unwrap_or("");
    let ours = env::var("CARGO_PKG_VERSION").unwrap();
    if version != ours {
        panic!("holdfast: Cargo.toml's version {ours} is not meson.build's {version}");
    }
}

/// OUT_DIR/gen/holdfast-version.h from include/holdfast-version.h.in.
fn version_header(csrc: &Path, gen: &Path) {
    let input = csrc.join("include/holdfast-version.h.in");
    let text = fs::read_to_string(&input)
        .unwrap_or_else(|e| panic!("holdfast: cannot read {}: {e}", input.display()));
    let version = env::var("CARGO_PKG_VERSION").unwrap();
    let mut parts = version.split('.');
    let mut text = text.replace("@version@", &version);
    for key in ["@major@", "@minor@", "@patch@"] {
        text = text.replace(key, parts.next().unwrap_or("0"));
    }
    fs::create_dir_all(gen).unwrap();
    fs::write(gen.join("holdfast-version.h"), text).unwrap();
}

fn hint(stderr: &str) -> &'static str {
    if stderr.contains("jansson.h") {
        "\nholdfast: the jansson headers are missing: install libjansson-dev (Debian, Ubuntu) \
         or jansson-devel (Fedora), or build with --features system"
    } else if stderr.contains("curl/curl.h") {
        "\nholdfast: the libcurl headers are missing: install libcurl4-openssl-dev (Debian, \
         Ubuntu) or libcurl-devel (Fedora), or build with --features system"
    } else {
        ""
    }
}

fn bundled() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let csrc = manifest.join("csrc");
    let srcs = sources(&csrc);
    check_against_meson(&manifest, &srcs);
    let gen = out.join("gen");
    version_header(&csrc, &gen);

    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let ar = env::var("AR").unwrap_or_else(|_| "ar".into());
    for v in ["CC", "AR", "CFLAGS"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    for dir in ["include"].iter().chain(C_DIRS.iter()) {
        println!("cargo:rerun-if-changed={}", csrc.join(dir).display());
        for e in fs::read_dir(csrc.join(dir)).unwrap().flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }
    if let Err(e) = Command::new(&cc).arg("--version").stdout(Stdio::null()).status() {
        panic!(
            "holdfast: cannot run the C compiler `{cc}` ({e}): install gcc (Debian: apt install \
             gcc libc6-dev) or set CC, or build with --features system"
        );
    }

    // meson.build's flags: gnu11, _GNU_SOURCE, hidden visibility (only what
    // holdfast.h declares is public); PIC for Rust's PIE executables.
    let mut flags: Vec<String> = [
        "-std=gnu11", "-O2", "-fPIC", "-pthread", "-D_GNU_SOURCE", "-fvisibility=hidden",
        "-Wall", "-Wextra", "-Wno-unused-parameter",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if env::var("DEBUG").is_ok_and(|d| d == "true") {
        flags.push("-g".into());
    }
    if let Ok(extra) = env::var("CFLAGS") {
        flags.extend(extra.split_whitespace().map(String::from));
    }
    let mut inc = vec![gen.clone(), csrc.join("include")];
    inc.extend(C_DIRS.iter().map(|d| csrc.join(d)));
    for dir in inc {
        flags.push(format!("-I{}", dir.display()));
    }

    // one compiler per job cargo allows
    let jobs: usize = env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let objdir = out.join("obj");
    fs::create_dir_all(&objdir).unwrap();
    let mut objs = Vec::new();
    let mut running: Vec<(PathBuf, Child)> = Vec::new();
    let wait_one = |running: &mut Vec<(PathBuf, Child)>| {
        let (src, child) = running.remove(0);
        let o = child.wait_with_output().expect("the C compiler's status");
        let err = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() {
            panic!("holdfast: `{cc}` failed on {}:\n{err}{}", src.display(), hint(&err));
        }
        if !err.trim().is_empty() {
            println!("cargo:warning={}: {}", src.display(), err.lines().next().unwrap_or(""));
        }
    };
    for src in &srcs {
        let obj = objdir.join(src.file_name().unwrap()).with_extension("o");
        if running.len() >= jobs {
            wait_one(&mut running);
        }
        let child = Command::new(&cc)
            .args(&flags)
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg(&obj)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("holdfast: cannot run `{cc}`: {e}"));
        running.push((src.clone(), child));
        objs.push(obj);
    }
    while !running.is_empty() {
        wait_one(&mut running);
    }

    let lib = out.join("libholdfast.a");
    let _ = fs::remove_file(&lib);
    let st = Command::new(&ar)
        .arg("crs")
        .arg(&lib)
        .args(&objs)
        .status()
        .unwrap_or_else(|e| panic!("holdfast: cannot run `{ar}` (install binutils): {e}"));
    if !st.success() {
        panic!("holdfast: `{ar} crs {}` failed", lib.display());
    }
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=holdfast");
    println!("cargo:rustc-link-lib=jansson");
    println!("cargo:rustc-link-lib=curl");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:include={}", csrc.join("include").display());
}

// ---------------------------------------------------------------------------
// Feature `system`: pkg-config
// ---------------------------------------------------------------------------

fn pkg_config(args: &[&str]) -> String {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&prog).args(args).arg("holdfast").output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => panic!(
            "`{prog} {} holdfast` failed: {}\nInstall libholdfast (meson install) or set \
             PKG_CONFIG_PATH to a build's meson-uninstalled directory, or build without \
             --features system (the crate then compiles libholdfast itself).",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("cannot run {prog}: {e} (install pkg-config)"),
    }
}

fn system() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=HOLDFAST_STATIC");
    let static_link = env::var_os("HOLDFAST_STATIC").is_some_and(|v| v == "1");
    // a library rebuilt with other dependencies (Libs.private) relinks us
    let pcdir = pkg_config(&["--variable=pcfiledir"]);
    for name in ["holdfast-uninstalled.pc", "holdfast.pc"] {
        let pc = Path::new(&pcdir).join(name);
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
