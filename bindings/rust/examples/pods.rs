//! Seed 001's case: a pod registers its write scope when it is built
//! (`Pod::from_manifest`) and releases it on `Drop`; a child pod gets a
//! delegated sub-scope; a crashed child's scope returns to its parent.
//!
//! usage: cargo run --offline --example pods [PROJECT_DIR]
//! (the registry is a private file in a temporary directory; a child runs
//! as another process: this example started again with `child`).
use holdfast::{Registry, Scope, ScopeGuard};
use std::env;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a manifest says of a pod: its name and the paths it writes.
struct Manifest {
    name: String,
    writes: Vec<PathBuf>,
}

struct Pod {
    scope: ScopeGuard,
    registry: PathBuf,
}

impl Pod {
    /// Register the pod's scope as it is built: all specs or none; a
    /// conflict names the pod that holds the path.
    fn from_manifest(m: &Manifest, registry: &Path) -> holdfast::Result<Pod> {
        let mut s = Scope::new(&m.name)?.registry(registry)?;
        for w in &m.writes {
            s = s.spec(&format!("{}:write:recursive", w.display()))?;
        }
        Ok(Pod { scope: s.register()?, registry: registry.to_path_buf() })
    }

    /// A child pod in this process, with part of this pod's scope.
    fn spawn_child(&self, m: &Manifest) -> holdfast::Result<Pod> {
        let mut s = self.scope.delegate(&m.name)?;
        for w in &m.writes {
            s = s.spec(&format!("{}:write:recursive", w.display()))?;
        }
        Ok(Pod { scope: s.register()?, registry: self.registry.clone() })
    }

    fn effective(&self) -> String {
        let e = self.scope.effective().expect("effective scope");
        let denied = e.json().split("\"denied\":").nth(1).unwrap_or("[]").trim_end_matches('}').to_string();
        format!("{} (denied {})", e.list("scope").map(|s| s.join(", ")).unwrap_or_default(), denied)
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        println!("pod {}: released on drop", self.scope.name());
    }
}

/// `pods child REGISTRY PARENT NAME PATH`: register a delegated scope for
/// this process, say so on stdout, then wait to be killed.
fn child(args: &[String]) -> ! {
    let (registry, parent, name, path) = (&args[0], &args[1], &args[2], &args[3]);
    let g = Scope::new(name)
        .and_then(|s| s.registry(registry))
        .and_then(|s| s.from(parent))
        .and_then(|s| s.spec(&format!("{path}:write:recursive")))
        .and_then(|s| s.register());
    match g {
        Ok(_g) => {
            println!("registered");
            std::io::stdout().flush().unwrap();
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("child: {e}");
            std::process::exit(1)
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        child(&args[1..]);
    }
    let tmp = env::temp_dir().join(format!("holdfast-pods-example.{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let project = match args.first() {
        Some(p) => PathBuf::from(p),
        None => {
            let p = tmp.join("project");
            for d in ["src/core", "src/util", "docs"] {
                std::fs::create_dir_all(p.join(d))?;
            }
            p
        }
    };
    let registry = tmp.join("registry/scope.lock");
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let a = Pod::from_manifest(&Manifest { name: "a".into(), writes: vec![project.join("src")] }, &registry)?;
        println!("pod a: {}", a.effective());

        // a second, unrelated pod that wants the same tree is refused, naming a
        let other = Manifest { name: "intruder".into(), writes: vec![project.join("src/core")] };
        match Pod::from_manifest(&other, &registry) {
            Err(e) => println!("pod intruder refused: {e}"),
            Ok(_) => return Err("two writers of src/core".into()),
        }

        let b = a.spawn_child(&Manifest { name: "b".into(), writes: vec![project.join("src/core")] })?;
        println!("pod b (from a): {}", b.effective());
        println!("pod a now: {}", a.effective());

        // a child in another process takes src/util, then crashes
        let exe = env::current_exe()?;
        let mut c = Command::new(exe)
            .args(["child", registry.to_str().unwrap(), "a", "c", project.join("src/util").to_str().unwrap()])
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(c.stdout.take().unwrap()).read_line(&mut line)?;
        if line.trim() != "registered" {
            c.wait()?;
            return Err("the child pod did not register".into());
        }
        println!("pod c (pid {}, from a): registered; a now: {}", c.id(), a.effective());
        c.kill()?;
        c.wait()?;
        let reaped = Registry::reap(Some(&registry))?;
        println!("pod c killed; reaped {reaped}; a regains it: {}", a.effective());
        drop(b);
        println!("pod a after b's drop: {}", a.effective());
        Ok(())
    })();
    std::fs::remove_dir_all(&tmp)?;
    result
}
