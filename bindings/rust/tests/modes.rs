//! Readers, writers and slots ([`Lock::read`], [`Lock::write`],
//! [`Lock::slot`]) against other processes (examples/holder.rs read, write,
//! slot). A waiter is seen waiting in the lock's status (its record at the
//! lock with "waiting"), never by sleeping; a child's entry comes on its
//! stdout pipe.
use holdfast::{ErrorKind, Lock, SLOTS_MAX};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// A temporary directory removed on drop.
struct Tmp(PathBuf);
impl Tmp {
    fn new(tag: &str) -> Tmp {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("holdfast-rs-modes-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// examples/holder KIND PATH [N]: waits for the lock, says "held FENCE" on
/// its stdout (read by a thread into a channel), releases when its stdin
/// closes; killed and reaped on drop.
struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
    line: Receiver<String>,
    fence: Option<u64>,
}
impl Holder {
    fn start(args: &[&str]) -> Holder {
        let exe = std::env::current_exe().unwrap();
        let exe = exe.parent().unwrap().parent().unwrap().join("examples/holder");
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the holder example (cargo test builds it)");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut l = String::new();
            if BufReader::new(out).read_line(&mut l).is_ok() {
                let _ = tx.send(l.trim().to_string());
            }
        });
        Holder { stdin: child.stdin.take(), child, line: rx, fence: None }
    }
    fn pid(&self) -> i64 {
        i64::from(self.child.id())
    }
    fn parse(&mut self, l: String) -> u64 {
        let f = l.strip_prefix("held ").and_then(|f| f.parse().ok()).unwrap_or_else(|| panic!("holder: {l}"));
        self.fence = Some(f);
        f
    }
    /// Its fence once it holds (bounded: 30 s).
    fn held(&mut self) -> u64 {
        if let Some(f) = self.fence {
            return f;
        }
        let l = self.line.recv_timeout(Duration::from_secs(30)).expect("the holder holds within 30 s");
        self.parse(l)
    }
    /// Whether it said it holds, without waiting.
    fn entered(&mut self) -> bool {
        match self.line.try_recv() {
            Ok(l) => {
                self.parse(l);
                true
            }
            Err(TryRecvError::Empty) => self.fence.is_some(),
            Err(TryRecvError::Disconnected) => self.fence.is_some(),
        }
    }
    /// Close its stdin: it releases and exits 0.
    fn release(&mut self) {
        self.stdin = None;
        let st = self.child.wait().unwrap();
        assert!(st.success(), "holder {} exited {st}", self.pid());
    }
}
impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Until pred (bounded: 30 s on the monotonic clock), looking again at once.
fn until(what: &str, mut pred: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !pred() {
        assert!(t0.elapsed() < Duration::from_secs(30), "not within 30 s: {what}");
        std::thread::yield_now();
    }
}

/// Until h stands at the lock p waiting (its record there, "waiting": 1).
fn waiting(p: &Path, h: &Holder) {
    let pid = h.pid();
    until(&format!("pid {pid} waits at {}", p.display()), || {
        Lock::status(p).unwrap().holders().iter().any(|x| x.pid() == Some(pid) && x.int("waiting") == Some(1))
    });
}

#[test]
fn readers_share_while_a_writer_waits_and_it_enters_after_the_last_reader() {
    let t = Tmp::new("rw");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut r2 = Holder::start(&["read", ps]);
    let r2_fence = r2.held();
    let mut w = Holder::start(&["write", ps]);
    waiting(&p, &w);
    r1.release().unwrap();
    let s = Lock::status(&p).unwrap();
    assert!(s.holders().iter().any(|h| h.pid() == Some(r2.pid()) && h.str("mode") == Some("shared")), "{}", s.json());
    assert!(s.holders().iter().any(|h| h.pid() == Some(w.pid()) && h.int("waiting") == Some(1)), "{}", s.json());
    assert!(!w.entered(), "the writer waits while a reader reads");
    r2.release();
    let wf = w.held();
    assert!(wf > r2_fence, "the writer's fence {wf} is above the reader's {r2_fence}");
    assert_eq!(Lock::status(&p).unwrap().pid(), Some(w.pid()));
    w.release();
    assert_eq!(Lock::status(&p).unwrap().str("state"), Some("free"));
}

#[test]
fn a_reader_coming_after_a_waiting_writer_queues_behind_it() {
    let t = Tmp::new("queue");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut w = Holder::start(&["write", ps]);
    waiting(&p, &w);
    let e = Lock::new(&p).unwrap().read().err().expect("tried once, behind the writer");
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.holder().unwrap().pid(), Some(w.pid()), "naming the waiting writer: {e}");
    let mut r2 = Holder::start(&["read", ps]);
    // its acquisition has begun once its staged directory (dirlock.c DA0,
    // kept while it waits) is in the state directory: the writer is at the
    // lock, r1 in its r- entry, so an n- entry is r2's
    let state = t.join("L.holdfast");
    until("the second reader began", || {
        std::fs::read_dir(&state)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().starts_with("n-"))
    });
    drop(r1);
    let wf = w.held();
    assert!(!r2.entered(), "the reader did not pass the writer");
    w.release();
    let rf = r2.held();
    assert!(rf > wf, "the reader's fence {rf} is above the writer's {wf}");
    r2.release();
}

#[test]
fn two_slots_admit_two_and_the_third_waits_for_a_place() {
    let t = Tmp::new("slots");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let a = Lock::new(&p).unwrap().slot(2).unwrap();
    assert_eq!(a.slots(), Some(2));
    let mut b = Holder::start(&["slot", ps, "2"]);
    b.held();
    let e = Lock::new(&p).unwrap().slot(2).err().expect("a third of two");
    assert_eq!(e.kind(), ErrorKind::Held);
    let e = Lock::new(&p).unwrap().read().err().expect("a reader beside slot holders");
    assert_eq!(e.kind(), ErrorKind::Held);
    let mut c = Holder::start(&["slot", ps, "2"]);
    waiting(&p, &c);
    let s = Lock::status(&p).unwrap();
    assert_eq!((s.str("mode"), s.int("slots")), (Some("slots"), Some(2)), "{}", s.json());
    assert!(!c.entered());
    a.release().unwrap();
    c.held();
    let mut pids: Vec<_> = Lock::status(&p).unwrap().holders().iter().filter_map(|h| h.pid()).collect();
    pids.sort();
    let mut want = vec![b.pid(), c.pid()];
    want.sort();
    assert_eq!(pids, want);
    b.release();
    c.release();
}

#[test]
fn slots_out_of_range_are_refused() {
    let t = Tmp::new("range");
    let p = t.join("L");
    for n in [0, SLOTS_MAX + 1] {
        let e = Lock::new(&p).unwrap().slot(n).err().expect("out of range");
        assert_eq!(e.code(), -22, "slot({n}): {e}");
    }
    assert_eq!(Lock::new(&p).unwrap().slot(SLOTS_MAX).unwrap().slots(), Some(SLOTS_MAX));
}

#[test]
fn a_killed_reader_frees_its_place_at_once() {
    let t = Tmp::new("kill");
    let p = t.join("L");
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut r2 = Holder::start(&["read", p.to_str().unwrap()]);
    r2.held();
    r2.child.kill().unwrap(); // SIGKILL
    r2.child.wait().unwrap();
    let e = Lock::new(&p).unwrap().write().err().expect("the live reader keeps the writer out");
    assert_eq!(e.holder().unwrap().pid(), Some(i64::from(std::process::id())), "{e}");
    drop(r1);
    let w = Lock::new(&p).unwrap().write().expect("tried once: the dead reader's place is reaped");
    let hs: Vec<_> = Lock::status(&p).unwrap().holders().iter().filter_map(|h| h.pid()).collect();
    assert_eq!(hs, vec![i64::from(std::process::id())]);
    drop(w);
}

#[test]
fn the_status_lists_every_holder_with_its_own_record() {
    let t = Tmp::new("status");
    let p = t.join("L");
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    assert_eq!(r1.record().unwrap().str("mode"), Some("shared"));
    assert_eq!(r1.slots(), None);
    let mut r2 = Holder::start(&["read", p.to_str().unwrap()]);
    let f2 = r2.held();
    let s = Lock::status(&p).unwrap();
    assert_eq!((s.str("state"), s.str("mode")), (Some("held"), Some("shared")), "{}", s.json());
    let hs = s.holders();
    assert_eq!(hs.len(), 2, "{}", s.json());
    let me = hs.iter().find(|h| h.pid() == Some(i64::from(std::process::id()))).expect("this process");
    let other = hs.iter().find(|h| h.pid() == Some(r2.pid())).expect("the other reader");
    assert_eq!(me.str("token"), Some(r1.token().as_str()));
    assert_eq!(me.int("fence"), Some(r1.fence() as i64));
    assert_eq!(other.int("fence"), Some(f2 as i64));
    for h in hs {
        assert_eq!((h.str("mode"), h.str("state")), (Some("shared"), Some("held")));
        assert!(h.json().starts_with('{') && h.json().contains(&format!("\"pid\":{}", h.pid().unwrap())), "{}", h.json());
    }
    let q = Lock::new(&p).unwrap().query().unwrap();
    assert_eq!(q.holders().len(), 2);
    drop(r1);
    r2.release();
    assert!(Lock::status(&p).unwrap().holders().is_empty());
}
