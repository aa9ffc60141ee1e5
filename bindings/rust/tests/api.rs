//! The safe API, driven the way a Rust program uses it, with the other
//! holder in another process (examples/holder.rs) where holders must differ.
mod common;
use common::{Holder, Tmp};
use holdfast::{cancel_pair, ErrorKind, Lock, Registry, Scope, ScopeState, Session, Wait};
use std::path::Path;
use std::time::Duration;

#[test]
fn constants_match_the_header() {
    // every HF_E* and HF_OPT_* value the bindings declare, against the C header
    let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/holdfast.h");
    let h = std::fs::read_to_string(&header).unwrap();
    let ffi = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi.rs")).unwrap();
    let mut checked = 0;
    let mut next_enum = None::<i64>;
    for line in h.lines() {
        let t = line.trim();
        let (name, value) = if let Some(rest) = t.strip_prefix("#define HF_E") {
            let mut it = rest.split_whitespace();
            let name = format!("HF_E{}", it.next().unwrap());
            let v = it.next().unwrap().trim_matches(|c| c == '(' || c == ')');
            (name, v.parse::<i64>().unwrap())
        } else if let Some(rest) = t.strip_prefix("#define HF_SLOTS_MAX") {
            ("HF_SLOTS_MAX".to_string(), rest.trim().parse::<i64>().unwrap())
        } else if t.starts_with("HF_OPT_") || t.starts_with("HF_SCOPE_") || (t.starts_with("HF_MODE_") && t.contains(" = ")) {
            let name: String = t.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let v = match t.split_once('=') {
                Some((_, v)) => v.trim().trim_end_matches(',').split_whitespace().next().unwrap().trim_end_matches(',').parse().unwrap(),
                None => next_enum.unwrap(),
            };
            next_enum = Some(v + 1);
            (name, v)
        } else {
            continue;
        };
        let decl = format!("pub const {name}: c_int = {value};");
        assert!(ffi.contains(&decl), "src/ffi.rs lacks `{decl}` (from {})", header.display());
        checked += 1;
    }
    assert!(checked >= 10 + 11 + 5 + 2 + 3 + 1, "only {checked} constants found in the header");
}

#[test]
fn held_lock_is_refused_naming_the_other_process_and_recovered_when_it_dies() {
    let t = Tmp::new("lock");
    let path = t.join("build.lock");
    let mut other = Holder::start(&["lock", path.to_str().unwrap()]);
    let their_fence: u64 = other.held().parse().unwrap();

    let e = Lock::new(&path).unwrap().acquire().err().expect("held by the other process");
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.name(), "held");
    assert_eq!(e.holder().unwrap().pid(), Some(other.pid()));
    assert_eq!(e.holder().unwrap().str("comm"), Some("holder"));
    let msg = e.to_string();
    assert!(msg.contains(path.to_str().unwrap()) && msg.contains(&format!("pid {}", other.pid())), "{msg}");
    assert!(e.holder().unwrap().json().contains("\"token\""));

    other.kill(); // SIGKILL: its lock is reaped at once by the next taker
    let g = Lock::new(&path).unwrap().acquire().unwrap();
    assert!(g.fence() > their_fence, "fence {} after {their_fence}", g.fence());
    assert_eq!(g.record().unwrap().pid(), Some(i64::from(std::process::id())));
    g.check().unwrap();
}

#[test]
fn drop_releases_and_fences_grow() {
    let t = Tmp::new("drop");
    let path = t.join("l");
    let mut last = 0;
    for _ in 0..3 {
        let g = Lock::new(&path).unwrap().acquire().unwrap();
        assert_eq!(Lock::status(&path).unwrap().str("state"), Some("held"));
        assert!(g.fence() > last);
        last = g.fence();
        drop(g);
        assert_eq!(Lock::status(&path).unwrap().str("state"), Some("free"));
    }
    // one handle kept across cycles
    let mut l = Some(Lock::new(&path).unwrap());
    for _ in 0..3 {
        let g = l.take().unwrap().acquire().unwrap();
        assert!(g.fence() > last);
        last = g.fence();
        l = Some(g.unlock().unwrap());
    }
}

#[test]
fn bounded_wait_times_out_naming_the_holder() {
    let t = Tmp::new("wait");
    let path = t.join("l");
    let other = Holder::start(&["lock", path.to_str().unwrap()]);
    other.held();
    let e = Lock::new(&path).unwrap().wait(Wait::For(Duration::from_millis(200))).acquire().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    assert_eq!(e.holder().unwrap().pid(), Some(other.pid()));
}

#[test]
fn a_thread_never_waits_for_its_own_hold() {
    // HL5: this thread's wait for a lock it holds through another Lock could
    // never end: EDEADLK at once, the holder named; another thread's wait
    // for it is a wait, ended by the release
    const EDEADLK: i32 = 35; // Linux
    let t = Tmp::new("self");
    let path = t.join("l");
    let a = Lock::new(&path).unwrap().acquire().unwrap();
    for w in [Wait::Forever, Wait::For(Duration::from_secs(60))] { // the hold leaks after 10 min
        let e = Lock::new(&path).unwrap().wait(w).acquire().err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Os(EDEADLK));
        assert_eq!(e.holder().unwrap().pid(), Some(i64::from(std::process::id())));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let p2 = path.clone();
    let waiter = std::thread::spawn(move || {
        let l = Lock::new(&p2).unwrap().wait(Wait::Forever);
        tx.send(()).unwrap();
        l.acquire().map(|g| g.fence())
    });
    rx.recv().unwrap();
    let f = a.fence();
    drop(a);
    assert!(waiter.join().unwrap().unwrap() > f);
}

#[test]
fn canceller_ends_a_wait_forever_from_another_thread() {
    let t = Tmp::new("cancel");
    let path = t.join("l");
    let other = Holder::start(&["lock", path.to_str().unwrap()]);
    other.held();
    let (mut c, token) = cancel_pair().unwrap();
    assert!(!token.is_canceled());
    let p2 = path.clone();
    let waiter = std::thread::spawn(move || {
        let r = Lock::new(&p2).unwrap().wait(Wait::Forever).cancel_on(&token).acquire();
        (r.err().map(|e| e.kind()), token.is_canceled())
    });
    c.cancel().unwrap();
    let (kind, canceled) = waiter.join().unwrap();
    assert_eq!(kind, Some(ErrorKind::Canceled));
    assert!(canceled);
}

#[test]
fn release_after_a_reap_says_not_held() {
    let t = Tmp::new("reap");
    let path = t.join("l");
    let g = Lock::new(&path).unwrap().acquire().unwrap();
    let token = g.token();
    assert_eq!(token.len(), 32);
    // another handle adopting the token releases it: ours is gone
    Lock::new(&path).unwrap().adopt(&token).unwrap().release().unwrap();
    assert_eq!(g.check().err().unwrap().kind(), ErrorKind::Lost);
    assert_eq!(g.release().err().unwrap().kind(), ErrorKind::NotHeld);
}

#[test]
fn edit_replaces_the_file_atomically_under_the_lock() {
    let t = Tmp::new("edit");
    let file = t.join("counter");
    std::fs::write(&file, "41").unwrap();
    let mut g = Lock::new(t.join("counter.lock")).unwrap().acquire().unwrap();
    {
        let e = g.edit(&file).unwrap();
        assert!(e.exists());
        let n: u64 = String::from_utf8(e.contents().unwrap()).unwrap().trim().parse().unwrap();
        e.commit(format!("{}", n + 1).as_bytes()).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "42");
    let e = g.edit(t.join("new.json")).unwrap();
    assert!(!e.exists());
    assert!(e.contents().unwrap().is_empty());
    e.commit(b"{}").unwrap();
    assert_eq!(std::fs::read_to_string(t.join("new.json")).unwrap(), "{}");
}

#[test]
fn session_is_one_lane_at_a_time_and_drop_releases() {
    let t = Tmp::new("session");
    let file = t.join(".session.lock");
    let mut other = Holder::start(&["session", file.to_str().unwrap(), "data"]);
    other.held();
    let e = Session::new(Some(&file), "docs").unwrap().take().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Held);
    assert_eq!(e.holder().unwrap().str("lane"), Some("data"));
    assert!(e.to_string().contains("lane data"), "{e}");
    other.release(); // it releases as its stdin closes
    let g = Session::new(Some(&file), "docs").unwrap().take().unwrap();
    assert!(!g.broke_stale());
    assert_eq!(g.record().unwrap().str("lane"), Some("docs"));
    assert_eq!(Session::status(Some(&file)).unwrap().str("state"), Some("held"));
    drop(g);
    assert_eq!(Session::status(Some(&file)).unwrap().str("state"), Some("free"));
}

#[test]
fn scopes_conflict_delegate_and_return_to_the_parent_when_a_child_dies() {
    let t = Tmp::new("scope");
    let reg = t.join("reg/scope.lock");
    for d in ["src/core", "src/util"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    let src = holdfast::canonical(&t.join("src")).unwrap();
    let a = Scope::new("a").unwrap().registry(&reg).unwrap().spec(&format!("{src}:write:recursive")).unwrap().register().unwrap();
    assert!(a.generation() > 0);

    let e = Scope::new("intruder").unwrap().registry(&reg).unwrap().spec(&format!("{src}/core:write")).unwrap().register().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(e.holder().unwrap().str("name"), Some("a"));

    // a delegated spec outside the parent's scope is refused
    let outside = holdfast::canonical(&t.0).unwrap();
    let e = a.delegate("wide").unwrap().spec(&format!("{outside}:write:recursive")).unwrap().register().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotYours);

    let b = a.delegate("b").unwrap().spec(&format!("{src}/core:write:recursive")).unwrap().register().unwrap();
    assert!(b.generation() > a.generation());
    let r = Registry::read(Some(&reg)).unwrap();
    assert_eq!(r.check(format!("{src}/core/x.c"), "b", b.generation()).unwrap().0, ScopeState::Yours);
    assert_eq!(r.check(format!("{src}/core/x.c"), "a", a.generation()).unwrap().0, ScopeState::Held);
    assert_eq!(r.find("b").unwrap().str("delegated_from"), Some("a"));

    // a child pod in another process takes src/util and crashes
    let spec = format!("{src}/util:write:recursive");
    let mut c = Holder::start(&["scope", reg.to_str().unwrap(), "c", "a", &spec]);
    c.held();
    let denied = a.effective().unwrap().json().to_string();
    assert!(denied.contains("\"name\":\"c\""), "{denied}");
    c.kill();
    assert_eq!(Registry::reap(Some(&reg)).unwrap(), 1);
    let eff = a.effective().unwrap().json().to_string();
    assert!(!eff.contains("\"name\":\"c\"") && eff.contains("\"name\":\"b\""), "{eff}");

    drop(b); // returns to a
    assert!(!a.effective().unwrap().json().contains("\"name\":\"b\""));
    a.release().unwrap();
    assert!(Registry::read(Some(&reg)).unwrap().find("a").is_none());
}

#[test]
fn lease_outlives_its_handle_and_renews_by_its_token() {
    let t = Tmp::new("lease");
    let path = t.join("l");
    assert!(Lock::new(&path).unwrap().lease(Duration::from_millis(500)).is_err(), "under 1 s");
    let g = Lock::new(&path).unwrap().lease(Duration::from_secs(60)).unwrap().acquire().unwrap();
    let (token, fd) = g.detach();
    drop(fd); // no descriptor, no handle: only the lease holds it
    let st = Lock::status(&path).unwrap();
    assert_eq!(st.str("state"), Some("held"));
    assert_eq!(st.int("lease_ms"), Some(60_000));
    let e = Lock::new(&path).unwrap().acquire().err().expect("the lease holds it");
    assert_eq!(e.kind(), ErrorKind::Held);
    let mut mine = Lock::new(&path).unwrap().adopt(&token).unwrap();
    mine.renew().unwrap();
    mine.release().unwrap();
    assert_eq!(Lock::status(&path).unwrap().str("state"), Some("free"));
}
