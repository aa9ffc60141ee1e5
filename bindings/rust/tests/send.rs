//! The guards are `Send`: moved to another thread and released there, and
//! held across an `.await` in a future that a multi-threaded runtime may
//! resume on another thread (the compile-time checks fail to build without
//! the `unsafe impl Send`s in src/lib.rs).
mod common;
use common::Tmp;
use holdfast::{Lock, LockGuard, Scope, ScopeGuard, Session, SessionGuard};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

fn assert_send<T: Send>() {}
fn assert_send_val<T: Send>(_: &T) {}

#[test]
fn guards_and_handles_are_send() {
    assert_send::<Lock>();
    assert_send::<LockGuard>();
    assert_send::<Session>();
    assert_send::<SessionGuard>();
    assert_send::<Scope>();
    assert_send::<ScopeGuard>();
}

#[test]
fn each_guard_is_released_by_another_thread() {
    let t = Tmp::new("send-move");
    let lock = t.0.join("l");
    let file = t.0.join(".session.lock");
    let reg = t.0.join("reg/scope.lock");
    std::fs::create_dir_all(t.0.join("src")).unwrap();
    let src = holdfast::canonical(&t.0.join("src")).unwrap();

    let l = Lock::new(&lock).unwrap().acquire().unwrap();
    let fence = l.fence();
    let s = Session::new(Some(&file), "data").unwrap().take().unwrap();
    let sc = Scope::new("a").unwrap().registry(&reg).unwrap().spec(&format!("{src}:write:recursive")).unwrap().register().unwrap();
    let me = std::thread::current().id();
    let released = std::thread::spawn(move || {
        assert_ne!(std::thread::current().id(), me);
        (l.release(), s.release(), sc.release())
    })
    .join()
    .unwrap();
    assert!(released.0.is_ok(), "{:?}", released.0.err());
    assert!(released.1.is_ok(), "{:?}", released.1.err());
    assert!(released.2.is_ok(), "{:?}", released.2.err());

    // each is free again, seen from the first thread
    assert_eq!(Lock::status(&lock).unwrap().str("state"), Some("free"));
    assert!(Lock::new(&lock).unwrap().acquire().unwrap().fence() > fence);
    assert_eq!(Session::status(Some(&file)).unwrap().str("state"), Some("free"));
    let again = Scope::new("b").unwrap().registry(&reg).unwrap().spec(&format!("{src}:write:recursive")).unwrap().register();
    assert!(again.is_ok(), "{:?}", again.err());
}

/// Pending once, then ready: an `.await` point.
struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

struct Nop;
impl Wake for Nop {
    fn wake(self: Arc<Self>) {}
}

#[test]
fn a_lock_held_across_an_await_is_released_on_the_thread_that_resumes() {
    let t = Tmp::new("send-await");
    let lock = t.0.join("l");
    let p = lock.clone();
    let task = async move {
        let g = Lock::new(&p).unwrap().acquire().unwrap();
        let first = std::thread::current().id();
        YieldOnce(false).await; // the guard lives across it
        assert_ne!(std::thread::current().id(), first);
        g.release()
    };
    assert_send_val(&task); // what tokio::spawn requires
    let mut task: Pin<Box<dyn Future<Output = holdfast::Result<()>> + Send>> = Box::pin(task);
    let waker = Waker::from(Arc::new(Nop));
    // first poll here: acquired, then pending
    assert!(task.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    assert_eq!(Lock::status(&lock).unwrap().str("state"), Some("held"));
    // resumed on another thread, as a work-stealing runtime may
    let done = std::thread::spawn(move || {
        let waker = Waker::from(Arc::new(Nop));
        match task.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(r) => r,
            Poll::Pending => panic!("the task did not finish"),
        }
    })
    .join()
    .unwrap();
    assert!(done.is_ok(), "{:?}", done.err());
    assert_eq!(Lock::status(&lock).unwrap().str("state"), Some("free"));
}
