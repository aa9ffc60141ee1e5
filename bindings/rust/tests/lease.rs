//! Scope leases and reasons: `Scope::lease`, `Scope::reason`, `renew`; a
//! leased pod registered by a process that exits outlives it.
mod common;
use common::{Holder, Tmp};
use holdfast::{ErrorKind, Registry, Scope, ScopeState};
use std::path::Path;
use std::time::{Duration, Instant};

/// Register a leased pod from examples/holder, which detaches and exits.
fn leased(reg: &Path, name: &str, parent: &str, spec: &str, lease_ms: u64, reason: &str) -> u64 {
    let mut h = Holder::start(&["leased", reg.to_str().unwrap(), name, parent, spec, &lease_ms.to_string(), reason]);
    let generation = h.held().parse().unwrap();
    h.release(); // it has exited already: reaped, exit status 0
    generation
}

#[test]
fn a_leased_pod_outlives_the_process_that_registered_it() {
    let t = Tmp::new("lease");
    let reg = t.join("reg/scope.lock");
    let d = holdfast::canonical(&t.0).unwrap();
    let generation = leased(&reg, "A", "-", &format!("{d}:write:recursive"), 60_000, "the parser");
    let r = Registry::read(Some(&reg)).unwrap();
    let a = r.find("A").expect("still registered after its process exited");
    assert_eq!(a.int("generation"), Some(generation as i64));
    assert_eq!(a.int("lease_ms"), Some(60_000));
    assert!(a.str("lease_until").is_some());
    assert_eq!(a.str("reason"), Some("the parser"));
    let e = Scope::new("B").unwrap().registry(&reg).unwrap().spec(&format!("{d}/src:write")).unwrap().register().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let h = e.holder().unwrap();
    assert_eq!(h.str("name"), Some("A"));
    assert_eq!(h.str("holder_reason"), Some("the parser"));
    assert_eq!(h.int("lease_ms"), Some(60_000));
    assert_eq!(Registry::reap(Some(&reg)).unwrap(), 0);
    Scope::new("A").unwrap().registry(&reg).unwrap().generation(generation).unwrap().release().unwrap();
    assert!(Registry::read(Some(&reg)).unwrap().find("A").is_none());
}

#[test]
fn renew_by_name_moves_the_end_and_refusals_name_why() {
    let t = Tmp::new("lease");
    let reg = t.join("reg/scope.lock");
    let d = holdfast::canonical(&t.0).unwrap();
    let generation = leased(&reg, "A", "-", &format!("{d}:write:recursive"), 60_000, "r");
    let before = Registry::read(Some(&reg)).unwrap().find("A").unwrap().int("lease_left_ms").unwrap();
    let mut s = Scope::new("A").unwrap().registry(&reg).unwrap().lease(Duration::from_secs(3600)).unwrap();
    s.renew().unwrap();
    let a = Registry::read(Some(&reg)).unwrap().find("A").unwrap();
    assert_eq!(a.int("lease_ms"), Some(3_600_000));
    assert_eq!(a.int("generation"), Some(generation as i64));
    assert!(a.int("lease_left_ms").unwrap() > before);
    let e = Scope::new("A").unwrap().registry(&reg).unwrap().generation(generation + 1).unwrap().renew().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotYours);
    drop(s); // a handle that renewed holds nothing: dropping it releases nothing
    assert!(Registry::read(Some(&reg)).unwrap().find("A").is_some());
    Scope::new("A").unwrap().registry(&reg).unwrap().release().unwrap();
    let e = Scope::new("A").unwrap().registry(&reg).unwrap().renew().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    // a pod its process holds is not leased: EINVAL
    let _p = Scope::new("P").unwrap().registry(&reg).unwrap().spec(&format!("{d}:write:recursive")).unwrap().register().unwrap();
    let e = Scope::new("P").unwrap().registry(&reg).unwrap().renew().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Os(22));
}

#[test]
fn an_expired_lease_is_reaped_and_its_part_returned_to_the_parent() {
    let t = Tmp::new("lease");
    let reg = t.join("reg/scope.lock");
    std::fs::create_dir_all(t.join("b/d")).unwrap();
    let d = holdfast::canonical(&t.0).unwrap();
    let a = Scope::new("A").unwrap().registry(&reg).unwrap().spec(&format!("{d}:write:recursive")).unwrap().register().unwrap();
    leased(&reg, "B", "A", &format!("{d}/b:write:recursive"), 1000, "short");
    let _dd = Scope::new("D").unwrap().registry(&reg).unwrap().from("B").unwrap().spec(&format!("{d}/b/d:write:recursive")).unwrap().register().unwrap();
    let x = format!("{d}/b/x");
    assert_eq!(Registry::read(Some(&reg)).unwrap().check(&x, "A", a.generation()).unwrap().0, ScopeState::Held);
    let t0 = Instant::now();
    loop {
        // B's 1 s lease ends: A gets b back, minus D's part
        Registry::reap(Some(&reg)).unwrap();
        let r = Registry::read(Some(&reg)).unwrap();
        if r.check(&x, "A", a.generation()).unwrap().0 == ScopeState::Yours {
            assert!(r.find("B").is_none());
            assert_eq!(r.find("D").unwrap().str("delegated_from"), Some("A"));
            assert_eq!(r.check(format!("{d}/b/d/y"), "A", a.generation()).unwrap().0, ScopeState::Held);
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "B's lease never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let e = Scope::new("B").unwrap().registry(&reg).unwrap().renew().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
}

#[test]
fn reasons_bounded_hostile_refused_and_a_guard_dropped_releases_its_lease() {
    let t = Tmp::new("lease");
    let reg = t.join("reg/scope.lock");
    let d = holdfast::canonical(&t.0).unwrap();
    let s = || Scope::new("A").unwrap().registry(&reg).unwrap().spec(&format!("{d}:write:recursive")).unwrap();
    assert_eq!(s().reason(&"x".repeat(257)).err().unwrap().kind(), ErrorKind::Os(22));
    assert_eq!(s().reason("a\u{1b}[2Jb").err().unwrap().kind(), ErrorKind::Os(22));
    assert_eq!(s().lease(Duration::from_millis(500)).err().unwrap().kind(), ErrorKind::Os(22));
    let why = "é".repeat(128);
    let g = s().lease(Duration::from_secs(60)).unwrap().reason(&why).unwrap().register().unwrap();
    assert_eq!(g.fd(), -1, "held by its lease: no liveness file");
    assert_eq!(Registry::read(Some(&reg)).unwrap().find("A").unwrap().str("reason"), Some(why.as_str()));
    drop(g);
    assert!(Registry::read(Some(&reg)).unwrap().find("A").is_none(), "dropping the guard releases it");
}
