//! A process that holds something until its stdin closes or it is killed
//! (the tests' and the cross-language test's other process):
//!   holder lock PATH                       prints "held FENCE"
//!   holder read PATH | write PATH | slot PATH N
//!                                          a reader, a writer, one of N slots:
//!                                          tries once; refused, prints
//!                                          "waiting HOLDER-PID" and waits as
//!                                          long as it takes; then prints
//!                                          "held FENCE"
//!   holder session PATH LANE               prints "held OWNER"
//!   holder scope REGISTRY NAME PARENT SPEC prints "held GENERATION" (PARENT "-": none)
//!   holder leased REGISTRY NAME PARENT SPEC LEASE_MS REASON
//!                                          registers a pod held by a lease of
//!                                          LEASE_MS with REASON, detaches it,
//!                                          prints "held GENERATION" and exits
//!                                          at once (the pod outlives it)
//! `--backend URI` anywhere among the arguments puts it there (etcd://…).
//! On a refusal it prints the error's name and message on one line and
//! exits 1.
use holdfast::{ErrorKind, Lock, Scope, Session, Wait};
use std::io::{Read, Write};
use std::path::Path;

/// read, write, slot: take(lock) tried once; refused, "waiting HOLDER-PID"
/// on stdout (the tests' sign that it must wait), then take it waiting as
/// long as it takes.
fn queued<G>(path: &str, be: &str, take: impl Fn(Lock) -> holdfast::Result<G>) -> holdfast::Result<G> {
    match Lock::new(path).and_then(|l| l.backend(be)).and_then(&take) {
        Err(e) if e.kind() == ErrorKind::Held => {
            println!("waiting {}", e.holder().and_then(|h| h.pid()).unwrap_or(0));
            std::io::stdout().flush().unwrap();
            Lock::new(path).and_then(|l| l.backend(be)).map(|l| l.wait(Wait::Forever)).and_then(take)
        }
        r => r,
    }
}

fn main() {
    let mut a: Vec<String> = std::env::args().skip(1).collect();
    let backend = match a.iter().position(|x| x == "--backend") {
        Some(i) if i + 1 < a.len() => Some(a.drain(i..i + 2).nth(1).unwrap()),
        _ => None,
    };
    let be = backend.as_deref().unwrap_or("file");
    let held = match a.first().map(String::as_str) {
        Some("lock") => Lock::new(&a[1]).and_then(|l| l.backend(be)).and_then(|l| l.acquire()).map(|g| (g.fence().to_string(), Box::new(g) as Box<dyn std::any::Any>)),
        Some("read") => queued(&a[1], be, |l| l.read()).map(|g| (g.fence().to_string(), Box::new(g) as Box<dyn std::any::Any>)),
        Some("write") => queued(&a[1], be, |l| l.write()).map(|g| (g.fence().to_string(), Box::new(g) as Box<dyn std::any::Any>)),
        Some("slot") => queued(&a[1], be, |l| l.slot(a[2].parse().unwrap_or(0))).map(|g| (g.fence().to_string(), Box::new(g) as Box<dyn std::any::Any>)),
        Some("session") => Session::new(Some(Path::new(&a[1])), &a[2]).and_then(|s| s.backend(be)).and_then(|s| s.take()).map(|g| (g.owner(), Box::new(g) as Box<dyn std::any::Any>)),
        Some("scope") => {
            let mut s = Scope::new(&a[2]).and_then(|s| s.backend(be)).and_then(|s| s.registry(&a[1]));
            if a[3] != "-" {
                s = s.and_then(|s| s.from(&a[3]));
            }
            s.and_then(|s| s.spec(&a[4])).and_then(|s| s.register()).map(|g| (g.generation().to_string(), Box::new(g) as Box<dyn std::any::Any>))
        }
        Some("leased") => {
            let mut s = Scope::new(&a[2]).and_then(|s| s.backend(be)).and_then(|s| s.registry(&a[1]));
            if a[3] != "-" {
                s = s.and_then(|s| s.from(&a[3]));
            }
            let lease = std::time::Duration::from_millis(a[5].parse().unwrap_or(0));
            match s.and_then(|s| s.spec(&a[4])).and_then(|s| s.lease(lease)).and_then(|s| s.reason(&a[6])).and_then(|s| s.register()) {
                Ok(g) => {
                    let (generation, _) = g.detach(); // left to its lease
                    println!("held {generation}");
                    std::process::exit(0)
                }
                Err(e) => Err(e),
            }
        }
        _ => {
            eprintln!("usage: holder lock PATH | read PATH | write PATH | slot PATH N | session PATH LANE | scope REGISTRY NAME PARENT SPEC | leased REGISTRY NAME PARENT SPEC LEASE_MS REASON [--backend URI]");
            std::process::exit(64)
        }
    };
    match held {
        Ok((what, guard)) => {
            println!("held {what}");
            std::io::stdout().flush().unwrap();
            let mut rest = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut rest); // until stdin closes
            drop(guard);
        }
        Err(e) => {
            println!("{} {e}", e.name());
            std::process::exit(1)
        }
    }
}
