//! What the crate's tests share (each says `mod common;` and uses a part):
//! temporary directories removed on drop, other processes (examples/holder)
//! driven through pipes and killed by pid and reaped on drop, and a bounded
//! wait that sleeps between its looks. A failing test's drops run too.
#![allow(dead_code)] // not every test uses every part

use std::io::{BufRead, BufReader};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A temporary directory, holdfast-rs-TAG-PID-N under the system's,
/// removed on drop.
pub struct Tmp(pub PathBuf);
impl Tmp {
    pub fn new(tag: &str) -> Tmp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("holdfast-rs-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    pub fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}
impl Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The holder example, built by `cargo test` beside the tests.
pub fn holder_exe() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    deps.parent().unwrap().parent().unwrap().join("examples/holder")
}

/// Another process: examples/holder ARGS. Its stdout lines come through a
/// channel (a thread reads them as they come); closing its stdin releases
/// what it holds; killed by pid and reaped on drop.
pub struct Holder {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    args: String,
}
impl Holder {
    pub fn start(args: &[&str]) -> Holder {
        let mut child = Command::new(holder_exe())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the holder example (cargo test builds it)");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l.trim().to_string()).is_err() {
                    break;
                }
            }
        });
        Holder { stdin: child.stdin.take(), child, lines: rx, args: args.join(" ") }
    }
    pub fn pid(&self) -> i64 {
        i64::from(self.child.id())
    }
    /// Its next line (bounded: 30 s; a blocking read of the channel).
    pub fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("holder {}: no line within 30 s ({e})", self.args))
    }
    /// Its next line if it has said one, without waiting.
    pub fn said(&self) -> Option<String> {
        self.lines.try_recv().ok()
    }
    /// Its "held X" (it holds): X.
    pub fn held(&self) -> String {
        let l = self.line();
        l.strip_prefix("held ").unwrap_or_else(|| panic!("holder {}: {l}", self.args)).to_string()
    }
    /// Its "waiting PID" (read, write, slot: refused by PID's hold, it now
    /// waits as long as it takes): PID.
    pub fn refused(&self) -> i64 {
        let l = self.line();
        l.strip_prefix("waiting ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("holder {}: {l} (not waiting)", self.args))
    }
    /// Close its stdin: it releases and exits 0.
    pub fn release(&mut self) {
        self.stdin = None;
        let st = self.child.wait().unwrap();
        assert!(st.success(), "holder {} (pid {}) exited {st}", self.args, self.pid());
    }
    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Until pred (bounded: 30 s on the monotonic clock), looking again every
/// 2 ms: for what only a look can tell (a process standing at a lock), never
/// a spin.
pub fn until(what: &str, mut pred: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !pred() {
        assert!(t0.elapsed() < Duration::from_secs(30), "not within 30 s: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}
