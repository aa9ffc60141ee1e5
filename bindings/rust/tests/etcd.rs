//! The etcd backend through the safe API, against an etcd of the test's own
//! (Debian's `etcd`, on free loopback ports, its data under /tmp, killed by
//! pid and its directory removed on drop - a failing test too: the guard
//! drops while the panic unwinds, and etcd dies with the test's thread
//! through PR_SET_PDEATHSIG when the harness is killed). The other holder is
//! the CLI (`$HOLDFAST_BIN lock acquire --pid SLEEPER --backend …`).
mod common;
use common::Tmp;
use holdfast::{ErrorKind, Lock, Scope, Session};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

extern "C" {
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
}
const PR_SET_PDEATHSIG: i32 = 1;
const SIGKILL: u64 = 9;
const EIO: i32 = 5;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A process killed by pid and reaped on drop.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One etcd member of this test's own; `uri` is its backend URI.
struct Etcd {
    child: Option<Child>,
    dir: Tmp,
    uri: String,
}

impl Etcd {
    fn start() -> Etcd {
        let dir = Tmp::new("etcd");
        let (port, peer) = (free_port(), free_port());
        let client = format!("http://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let mut cmd = Command::new("etcd");
        cmd.args(["--name", "t", "--data-dir"])
            .arg(dir.join("data"))
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .arg(format!("--initial-cluster=t={peer_url}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        unsafe {
            cmd.pre_exec(|| {
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start etcd (apt-get install etcd-server): {e}"));
        let mut e = Etcd { child: Some(child), dir, uri: format!("etcd://127.0.0.1:{port}") };
        // ready when /health says so; bounded
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(st)) = e.child.as_mut().unwrap().try_wait() {
                let log = std::fs::read_to_string(e.dir.join("log")).unwrap_or_default();
                panic!("etcd exited ({st}) before it was ready:\n{log}");
            }
            if health(port) {
                return e;
            }
            assert!(Instant::now() < deadline, "etcd on {port} not ready within 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        } // then self.dir is removed
    }
}

fn health(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.contains("\"health\":\"true\"")
}

fn cli() -> PathBuf {
    PathBuf::from(std::env::var_os("HOLDFAST_BIN").expect("HOLDFAST_BIN (bindings/rust/test.sh sets it)"))
}

fn sleeper() -> Proc {
    Proc(Command::new("sleep").arg("1000").stdin(Stdio::null()).spawn().unwrap())
}

/// `holdfast lock ARGS --backend URI`: (exit code, stdout, stderr).
fn hf(args: &[&str], uri: &str) -> (i32, String, String) {
    let o = Command::new(cli()).args(args).args(["--backend", uri]).stdin(Stdio::null()).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).trim().to_string(),
        String::from_utf8_lossy(&o.stderr).trim().to_string(),
    )
}

#[test]
fn etcd_lock_held_by_the_cli_is_refused_naming_it_then_taken_with_a_greater_fence() {
    let etcd = Etcd::start();
    let t = Tmp::new("etcdlock");
    let path = t.join("deploy.lock");
    let p = path.to_str().unwrap();
    let owner = sleeper();
    let pid = owner.0.id().to_string();
    let (rc, out, err) = hf(&["lock", "acquire", p, "-n", "--pid", &pid], &etcd.uri);
    assert_eq!(rc, 0, "holdfast lock acquire: {err}");
    let (token, fence) = out.split_once(' ').unwrap();
    let their_fence: u64 = fence.parse().unwrap();

    // refused, naming the CLI's holder (the sleeper)
    let e = Lock::new(&path).unwrap().backend(&etcd.uri).unwrap().acquire().err().expect("held on etcd");
    assert_eq!(e.kind(), ErrorKind::Held, "{e}");
    let h = e.holder().expect("the holder's record");
    assert_eq!(h.pid(), Some(i64::from(owner.0.id())));
    assert_eq!(h.str("comm"), Some("sleep"));
    assert_eq!(h.str("backend"), Some("etcd"), "{}", h.json());
    assert!(e.to_string().contains(&format!("held by pid {pid} (sleep)")), "{e}");
    // the file system knows nothing of it: the same path is free there
    assert!(!path.exists());
    let st = Lock::new(&path).unwrap().backend(&etcd.uri).unwrap().query().unwrap();
    assert_eq!(st.str("state"), Some("held"));
    assert_eq!(st.str("key").map(|k| k.ends_with("/deploy.lock")), Some(true), "{}", st.json());

    // released by its token: the binding takes it, fenced above the CLI's
    let (rc, _, err) = hf(&["lock", "release", p, "--token", token], &etcd.uri);
    assert_eq!(rc, 0, "holdfast lock release: {err}");
    let g = Lock::new(&path)
        .unwrap()
        .backend(&etcd.uri)
        .unwrap()
        .ttl(Duration::from_secs(3))
        .unwrap()
        .etcd_timeout(Duration::from_secs(5))
        .unwrap()
        .acquire()
        .expect("free once released");
    assert!(g.fence() > their_fence, "fence {} after {their_fence}", g.fence());
    let rec = g.record().unwrap();
    assert_eq!(rec.int("ttl_ms"), Some(3000), "{}", rec.json());
    assert_eq!(rec.pid(), Some(i64::from(std::process::id())));
    assert!(!path.exists(), "nothing made on the file system");

    // now the CLI is refused, naming this process
    let (rc, _, err) = hf(&["lock", "acquire", p, "-n", "--pid", &pid], &etcd.uri);
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
    g.release().unwrap();
    let (rc, _, err) = hf(&["lock", "check", p], &etcd.uri);
    assert_eq!(rc, 69, "free after release: {err}");
    drop(owner);
}

#[test]
fn etcd_session_by_lane_and_scope_conflict() {
    let etcd = Etcd::start();
    let t = Tmp::new("etcdsess");
    let file = t.join(".session.lock");

    // a session: one lane at a time
    let a = Session::new(Some(&file), "alpha").unwrap().backend(&etcd.uri).unwrap().take().unwrap();
    assert_eq!(a.record().unwrap().str("lane"), Some("alpha"));
    let e = Session::new(Some(&file), "beta").unwrap().backend(&etcd.uri).unwrap().take().err().expect("alpha's");
    assert_eq!(e.kind(), ErrorKind::Held, "{e}");
    assert_eq!(e.holder().and_then(|h| h.str("lane")), Some("alpha"), "{e}");
    assert!(e.to_string().contains("lane alpha"), "{e}");
    assert!(!file.exists(), "the session lives in etcd, not in the file");
    a.release().unwrap();
    let b = Session::new(Some(&file), "beta").unwrap().backend(&etcd.uri).unwrap().take().expect("free after alpha");
    assert_eq!(b.record().unwrap().str("lane"), Some("beta"));
    drop(b);

    // a scope: overlapping write scopes conflict, naming the pod
    let src = t.join("src");
    std::fs::create_dir_all(src.join("lib")).unwrap();
    let spec = |p: &Path, tail: &str| format!("{}{tail}", p.display());
    let one = Scope::new("one")
        .unwrap()
        .backend(&etcd.uri)
        .unwrap()
        .ttl(Duration::from_secs(5))
        .unwrap()
        .spec(&spec(&src, ":write:recursive"))
        .unwrap()
        .register()
        .unwrap();
    // "two": a write scope inside one's, on the same etcd
    let two = || {
        Scope::new("two")
            .unwrap()
            .backend(&etcd.uri)
            .unwrap()
            .spec(&spec(&src.join("lib"), ":write"))
            .unwrap()
            .register()
    };
    let e = two().err().expect("inside one's scope");
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(e.holder().and_then(|h| h.str("name")), Some("one"), "{e}");
    assert!(e.to_string().contains("pod one"), "{e}");
    // a delegated child is on the same backend
    let child = one.delegate("one.child").unwrap().spec(&spec(&src.join("lib"), ":write")).unwrap().register();
    let child = child.expect("delegated within one's scope, on etcd");
    drop(child);
    one.release().unwrap();
    drop(two().expect("free once one released"));
}

#[test]
fn etcd_unreachable_is_eio_naming_the_endpoint_within_the_timeout() {
    let port = free_port(); // closed: nobody listens
    let uri = format!("etcd://127.0.0.1:{port}");
    let t = Tmp::new("etcddown");
    let start = Instant::now();
    let e = Lock::new(t.join("x.lock"))
        .unwrap()
        .backend(&uri)
        .unwrap()
        .etcd_timeout(Duration::from_secs(2))
        .unwrap()
        .acquire()
        .err()
        .expect("no etcd there");
    // bounded (the timeout is 2 s; a generous margin for a loaded machine)
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
    assert_eq!(e.kind(), ErrorKind::Os(EIO), "{e}");
    assert_eq!(e.name(), "EIO");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = Session::new(Some(&t.join("s.lock")), "l").unwrap().backend(&uri).unwrap().take().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Os(EIO), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = Scope::new("p").unwrap().backend(&uri).unwrap().spec(&format!("{}:write", t.display())).unwrap().register().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Os(EIO), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");

    // not a backend URI: refused when set, naming it
    let e = Lock::new(t.join("y.lock")).unwrap().backend("zookeeper://h:1").err().expect("not a backend");
    assert_eq!(e.kind(), ErrorKind::Os(22), "{e}");
    assert!(e.to_string().contains("backend zookeeper://h:1"), "{e}");
    // "file" is the file system
    let g = Lock::new(t.join("z.lock")).unwrap().backend("file").unwrap().acquire().unwrap();
    assert!(t.join("z.lock").is_dir());
    drop(g);
}

#[test]
fn the_library_does_not_read_holdfast_backend() {
    // only the CLI reads HOLDFAST_BACKEND: a program passes it to .backend()
    // itself. The holder example, run with it naming a closed port, locks on
    // the file system.
    let t = Tmp::new("envbackend");
    let path = t.join("env.lock");
    let holder = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().join("examples/holder");
    let mut child = Proc(
        Command::new(holder)
            .args(["lock", path.to_str().unwrap()])
            .env("HOLDFAST_BACKEND", format!("etcd://127.0.0.1:{}", free_port()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    let mut out = child.0.stdout.take().unwrap();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0] as char);
    }
    assert!(line.starts_with("held "), "{line}");
    assert!(path.is_dir(), "the lock is a directory on the file system");
    drop(child);
}
