//! Readers, writers and slots ([`Lock::read`], [`Lock::write`],
//! [`Lock::slot`]) against other processes (examples/holder.rs read, write,
//! slot). A child that must wait says so on its stdout ("waiting PID":
//! refused by PID's hold), as it says "held FENCE" when it holds; that it
//! then stands at the lock waiting is read in the lock's status (its record
//! there, "waiting": 1) every 2 ms, bounded on the monotonic clock
//! (common::until) - never a spin, never a sleep instead of a look.
mod common;
use common::{until, Holder, Tmp};
use holdfast::{ErrorKind, Lock, SLOTS_MAX};
use std::path::Path;

/// Its "held FENCE": the fence.
fn fence(h: &Holder) -> u64 {
    let f = h.held();
    f.parse().unwrap_or_else(|_| panic!("holder {}: held {f}", h.pid()))
}

/// Until h, which said "waiting", stands at the lock p waiting (its record
/// there, "waiting": 1).
fn waiting(p: &Path, h: &Holder) {
    let pid = h.pid();
    until(&format!("pid {pid} waits at {}", p.display()), || {
        Lock::status(p).unwrap().holders().iter().any(|x| x.pid() == Some(pid) && x.int("waiting") == Some(1))
    });
}

#[test]
fn readers_share_while_a_writer_waits_and_it_enters_after_the_last_reader() {
    let t = Tmp::new("modes-rw");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut r2 = Holder::start(&["read", ps]);
    let r2_fence = fence(&r2);
    let mut w = Holder::start(&["write", ps]);
    let by = w.refused();
    assert!(by == i64::from(std::process::id()) || by == r2.pid(), "the writer was refused by a reader, not {by}");
    waiting(&p, &w);
    r1.release().unwrap();
    let s = Lock::status(&p).unwrap();
    assert!(s.holders().iter().any(|h| h.pid() == Some(r2.pid()) && h.str("mode") == Some("shared")), "{}", s.json());
    assert!(s.holders().iter().any(|h| h.pid() == Some(w.pid()) && h.int("waiting") == Some(1)), "{}", s.json());
    assert_eq!(w.said(), None, "the writer waits while a reader reads");
    r2.release();
    let wf = fence(&w);
    assert!(wf > r2_fence, "the writer's fence {wf} is above the reader's {r2_fence}");
    assert_eq!(Lock::status(&p).unwrap().pid(), Some(w.pid()));
    w.release();
    assert_eq!(Lock::status(&p).unwrap().str("state"), Some("free"));
}

#[test]
fn a_reader_coming_after_a_waiting_writer_queues_behind_it() {
    let t = Tmp::new("modes-queue");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut w = Holder::start(&["write", ps]);
    assert_eq!(w.refused(), i64::from(std::process::id()));
    waiting(&p, &w);
    let e = Lock::new(&p).unwrap().read().err().expect("tried once, behind the writer");
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.holder().unwrap().pid(), Some(w.pid()), "naming the waiting writer: {e}");
    let mut r2 = Holder::start(&["read", ps]);
    assert_eq!(r2.refused(), w.pid(), "the reader was refused naming the waiting writer");
    // its wait has begun once its staged directory (dirlock.c DA0, kept
    // while it waits) is in the state directory: the writer is at the lock,
    // r1 in its r- entry, so an n- entry is r2's (a waiting reader has no
    // record in the status)
    let state = t.join("L.holdfast");
    until("the second reader waits", || {
        std::fs::read_dir(&state)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().starts_with("n-"))
    });
    drop(r1);
    let wf = fence(&w);
    assert_eq!(r2.said(), None, "the reader did not pass the writer");
    w.release();
    let rf = fence(&r2);
    assert!(rf > wf, "the reader's fence {rf} is above the writer's {wf}");
    r2.release();
}

#[test]
fn two_slots_admit_two_and_the_third_waits_for_a_place() {
    let t = Tmp::new("modes-slots");
    let p = t.join("L");
    let ps = p.to_str().unwrap();
    let a = Lock::new(&p).unwrap().slot(2).unwrap();
    assert_eq!(a.slots(), Some(2));
    let mut b = Holder::start(&["slot", ps, "2"]);
    fence(&b);
    let e = Lock::new(&p).unwrap().slot(2).err().expect("a third of two");
    assert_eq!(e.kind(), ErrorKind::Held);
    let e = Lock::new(&p).unwrap().read().err().expect("a reader beside slot holders");
    assert_eq!(e.kind(), ErrorKind::Held);
    let mut c = Holder::start(&["slot", ps, "2"]);
    let by = c.refused();
    assert!(by == i64::from(std::process::id()) || by == b.pid(), "the third was refused by a slot holder, not {by}");
    waiting(&p, &c);
    let s = Lock::status(&p).unwrap();
    assert_eq!((s.str("mode"), s.int("slots")), (Some("slots"), Some(2)), "{}", s.json());
    assert_eq!(c.said(), None, "the third waits for a place");
    a.release().unwrap();
    fence(&c);
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
    let t = Tmp::new("modes-range");
    let p = t.join("L");
    for n in [0, SLOTS_MAX + 1] {
        let e = Lock::new(&p).unwrap().slot(n).err().expect("out of range");
        assert_eq!(e.code(), -22, "slot({n}): {e}");
    }
    assert_eq!(Lock::new(&p).unwrap().slot(SLOTS_MAX).unwrap().slots(), Some(SLOTS_MAX));
}

#[test]
fn a_killed_reader_frees_its_place_at_once() {
    let t = Tmp::new("modes-kill");
    let p = t.join("L");
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    let mut r2 = Holder::start(&["read", p.to_str().unwrap()]);
    fence(&r2);
    r2.kill(); // SIGKILL, reaped
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
    let t = Tmp::new("modes-status");
    let p = t.join("L");
    let r1 = Lock::new(&p).unwrap().read().unwrap();
    assert_eq!(r1.record().unwrap().str("mode"), Some("shared"));
    assert_eq!(r1.slots(), None);
    let mut r2 = Holder::start(&["read", p.to_str().unwrap()]);
    let f2 = fence(&r2);
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
