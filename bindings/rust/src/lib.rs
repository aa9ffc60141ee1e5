//! Safe Rust bindings to libholdfast (`include/holdfast.h`).
//!
//! Three lock kinds, each released when its guard is dropped:
//!
//! - [`Lock`] → [`LockGuard`]: the short directory lock, fenced, bound to the
//!   life of a process (the caller by default); its readers and slot holders
//!   ([`Lock::read`], [`Lock::slot`]) → [`SharedGuard`], as
//!   `std::sync::RwLock`'s `read` and `write` across processes;
//! - [`Session`] → [`SessionGuard`]: one holder per work tree, by lane;
//! - [`Scope`] → [`ScopeGuard`]: path write scopes in the machine's registry,
//!   with sub-scopes delegated to children ([`ScopeGuard::delegate`]).
//!
//! Every failure is an [`Error`] with a stable [`ErrorKind`] and, where the
//! library knows one, the holder's record ([`Error::holder`]); its `Display`
//! names the path and the holder ("lock /p/build.lock: held by pid 4242
//! (make) on box, fence 17").
//!
//! A handle is used by one thread at a time (holdfast.h: "a handle is not
//! shared between threads without a lock of the caller's"), so the types here
//! are not `Sync`; [`Lock`], [`Session`], [`Scope`] and their guards are
//! `Send`: a guard may be moved to another thread, or held across an
//! `.await` in a multi-threaded async runtime, and released there (the
//! library's per-thread state - the inotify descriptor of waits, the random
//! pool - is the thread's, not the handle's). A wait can be ended from
//! another thread or a signal handler with a [`Canceller`].
//!
//! A lock's self-deadlock check (a thread waiting for a lock it holds itself
//! is refused with `EDEADLK`) counts a hold as the acquiring thread's even
//! after its guard moved ([`Lock::thread`] names another). In async code,
//! wait without blocking the runtime by trying once ([`Wait::Try`], the
//! default, which that check never refuses) and sleeping with the runtime's
//! timer between tries; with tokio, pass `tokio::time::sleep`:
//!
//! ```
//! use holdfast::{ErrorKind, Lock, LockGuard, Result};
//! use std::future::Future;
//! use std::path::Path;
//! use std::time::Duration;
//!
//! /// Acquire `path`, yielding to the runtime while another holds it.
//! async fn acquire<S, F>(path: &Path, mut sleep: S) -> Result<LockGuard>
//! where
//!     S: FnMut(Duration) -> F,
//!     F: Future<Output = ()>,
//! {
//!     let mut pause = Duration::from_millis(1);
//!     loop {
//!         match Lock::new(path)?.acquire() {
//!             Err(e) if e.kind() == ErrorKind::Held => {
//!                 sleep(pause).await; // other tasks run meanwhile
//!                 pause = (pause * 2).min(Duration::from_millis(50));
//!             }
//!             other => return other,
//!         }
//!     }
//! }
//! // with tokio: `let guard = acquire(path, tokio::time::sleep).await?;`
//! # fn block_on<T>(f: impl Future<Output = T>) -> T {
//! #     use std::task::{Context, Poll, Wake, Waker};
//! #     struct W(std::thread::Thread);
//! #     impl Wake for W { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
//! #     let waker = Waker::from(std::sync::Arc::new(W(std::thread::current())));
//! #     let mut f = std::pin::pin!(f);
//! #     loop {
//! #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) { return v; }
//! #         std::thread::park();
//! #     }
//! # }
//! # async fn ready(_: Duration) {}
//! # let dir = std::env::temp_dir().join(format!("holdfast-doc-async-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("a.lock");
//! # let g = block_on(acquire(&path, ready)).unwrap();
//! # let g = std::thread::spawn(move || { g.fence(); g }).join().unwrap(); // Send
//! # g.release().unwrap();
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! Or run a blocking wait on the runtime's blocking pool
//! (`tokio::task::spawn_blocking(move || lock.wait(Wait::For(d)).acquire())`),
//! the guard coming back to the task; there, give a deadline: a pool thread
//! that still counts an earlier hold as its own is refused a wait for that
//! lock with `EDEADLK`.
//!
//! ```no_run
//! use holdfast::{Lock, Wait};
//! use std::time::Duration;
//! let guard = Lock::new("build.lock")?.wait(Wait::For(Duration::from_secs(30))).acquire()?;
//! println!("fence {}", guard.fence()); // give it to the resource you protect
//! drop(guard); // released
//! # Ok::<(), holdfast::Error>(())
//! ```
use std::ffi::{CStr, CString};
use std::fmt;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::time::Duration;

mod ffi;

/// The library's version at run time ("0.2.0").
pub fn version() -> String {
    unsafe { cstr(ffi::hf_version()) }.unwrap_or_default()
}

unsafe fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(CStr::from_ptr(p).to_string_lossy().into_owned())
    }
}

fn c_path(op: &'static str, p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::invalid(op, p, "a path with a NUL byte"))
}

fn c_str(op: &'static str, what: &Path, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(op, what, "a string with a NUL byte"))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(if d.is_zero() { 0 } else { 1 })
}

/// The name a string option goes by in an error ("backend etcd://…").
fn opt_detail(opt: c_int, v: &str) -> String {
    let name = match opt {
        ffi::HF_OPT_BACKEND => "backend",
        ffi::HF_OPT_ETCD_USER => "etcd user",
        ffi::HF_OPT_ETCD_PASSWORD_FILE => "etcd password file",
        ffi::HF_OPT_ETCD_CA_FILE => "etcd CA file",
        _ => "option",
    };
    format!("{name} {v}")
}

fn path_str<'a>(op: &'static str, p: &'a Path) -> Result<&'a str> {
    p.to_str().ok_or_else(|| Error::invalid(op, p, "a path that is not UTF-8"))
}

/// How long an acquire, take or register waits while another holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Try once (the default): [`ErrorKind::Held`] / [`ErrorKind::Conflict`] at once.
    Try,
    /// Wait until it is free, however long (woken by the release).
    Forever,
    /// Wait at most this long, then [`ErrorKind::TimedOut`].
    For(Duration),
}

impl Wait {
    fn ms(self) -> i64 {
        match self {
            Wait::Try => 0,
            Wait::Forever => -1,
            Wait::For(d) => millis(d).max(1),
        }
    }
}

// ---------------------------------------------------------------------------
// Records and errors
// ---------------------------------------------------------------------------

/// A snapshot of a library record (an owner record, a session record, a
/// registry entry, a refusal's details): the whole record as JSON, and its
/// fields by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    json: String,
    strs: Vec<(String, String)>,
    ints: Vec<(String, i64)>,
    lists: Vec<(String, Vec<String>)>,
    holders: Vec<Record>,
}

const STR_FIELDS: &[&str] = &[
    "token", "host", "comm", "name", "lane", "owner", "state", "reason", "scope", "request",
    "registry", "refused", "started", "acquired", "boot_id", "delegated_from", "aside", "live",
    "returned_to", "socket", "registered", "fs", "request_fs", "file", "broke.lane",
    "broke.owner", "backend", "key", "path", "mode", "holder_reason", "lease_until",
];
const INT_FIELDS: &[&str] = &[
    "pid", "fence", "age_ms", "generation", "max_hold_ms", "depth", "others", "request_index",
    "mtime_ms", "claims", "in_claim", "partial", "pid_start", "boottime_ms", "pidns", "timens",
    "legacy", "broke.age_s", "ttl_ms", "lease", "lease_ms", "kept", "slots", "waiting",
    "lease_left_ms",
];
const LIST_FIELDS: &[&str] = &["scope_allow", "scope"];

/// The items of the array at the top-level key `key` of the JSON object
/// `json`, each as its own JSON text (none when the key is absent or not an
/// array). The library writes the JSON; this only cuts it at its commas.
fn json_items(json: &str, key: &str) -> Vec<String> {
    let b = json.as_bytes();
    let quoted = format!("\"{key}\"");
    let (mut depth, mut i) = (0usize, 0usize);
    let mut items = Vec::new();
    let mut start: Option<usize> = None; // the array's current item, at depth 2
    let mut in_array = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let s = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && !in_array && json.get(s..=i) == Some(quoted.as_str()) {
                    let rest = json[i + 1..].trim_start();
                    if let Some(v) = rest.strip_prefix(':') {
                        if v.trim_start().starts_with('[') {
                            in_array = true;
                        }
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if in_array && depth == 3 && start.is_none() {
                    start = Some(i);
                }
            }
            b'}' | b']' => {
                if in_array && depth == 2 {
                    if let Some(s) = start.take() {
                        items.push(json[s..i].trim().to_string());
                    }
                    return items; // the array's end
                }
                depth = depth.saturating_sub(1);
            }
            b',' if in_array && depth == 2 => {
                if let Some(s) = start.take() {
                    items.push(json[s..i].trim().to_string());
                }
            }
            c if in_array && depth == 2 && start.is_none() && !c.is_ascii_whitespace() => start = Some(i),
            _ => {}
        }
        i += 1;
    }
    items
}

impl Record {
    /// A copy of r (NULL: None).
    unsafe fn from_raw(r: *const ffi::hf_rec) -> Option<Record> {
        if r.is_null() {
            return None;
        }
        let json = cstr(ffi::hf_rec_json(r)).unwrap_or_default();
        let mut rec = Record::fields(r, "", json.clone());
        // a lock's status: every holder, its fields under "holders.<i>."
        let items = json_items(&json, "holders");
        let n = ffi::hf_rec_len(r, c"holders".as_ptr());
        for i in 0..n {
            let item = items.get(i).cloned().unwrap_or_default();
            rec.holders.push(Record::fields(r, &format!("holders.{i}."), item));
        }
        Some(rec)
    }

    /// The fields of r under prefix ("" or "holders.<i>."), json the text they came from.
    unsafe fn fields(r: *const ffi::hf_rec, prefix: &str, json: String) -> Record {
        let mut rec = Record { json, strs: Vec::new(), ints: Vec::new(), lists: Vec::new(), holders: Vec::new() };
        for f in STR_FIELDS {
            let cf = CString::new(format!("{prefix}{f}")).unwrap();
            if let Some(v) = cstr(ffi::hf_rec_str(r, cf.as_ptr())) {
                rec.strs.push((f.to_string(), v));
            }
        }
        for f in INT_FIELDS {
            let cf = CString::new(format!("{prefix}{f}")).unwrap();
            let mut v = 0i64;
            if ffi::hf_rec_int(r, cf.as_ptr(), &mut v) == 0 {
                rec.ints.push((f.to_string(), v));
            }
        }
        for f in LIST_FIELDS {
            let cf = CString::new(format!("{prefix}{f}")).unwrap();
            let n = ffi::hf_rec_len(r, cf.as_ptr());
            if n > 0 {
                let items = (0..n)
                    .filter_map(|i| cstr(ffi::hf_rec_str_at(r, cf.as_ptr(), i)))
                    .collect();
                rec.lists.push((f.to_string(), items));
            }
        }
        rec
    }

    /// A lock's holders, each with its own fields ("pid", "token", "fence",
    /// "mode", "state", "waiting": 1 for the one standing at the lock waiting
    /// for holders it cannot share with), as [`Lock::status`] and
    /// [`Lock::query`] list them; empty for any other record.
    pub fn holders(&self) -> &[Record] {
        &self.holders
    }

    /// The record as one line of JSON, every field included.
    pub fn json(&self) -> &str {
        &self.json
    }
    /// A string field ("host", "comm", "token", "name", "lane", "state",
    /// "reason", …; dotted paths reach into objects: "broke.lane").
    pub fn str(&self, field: &str) -> Option<&str> {
        self.strs.iter().find(|(k, _)| k == field).map(|(_, v)| v.as_str())
    }
    /// An integer field ("pid", "fence", "age_ms", "generation", …).
    pub fn int(&self, field: &str) -> Option<i64> {
        self.ints.iter().find(|(k, _)| k == field).map(|(_, v)| *v)
    }
    /// An array of strings ("scope_allow", "scope").
    pub fn list(&self, field: &str) -> Option<&[String]> {
        self.lists.iter().find(|(k, _)| k == field).map(|(_, v)| v.as_slice())
    }
    /// The holder's pid, when the record names one.
    pub fn pid(&self) -> Option<i64> {
        self.int("pid")
    }
    /// "pid 4242 (make) on box, 12 s old, fence 17" (the parts it knows);
    /// a scope conflict is named by its pod first.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if let Some(name) = self.str("name") {
            s.push_str(&format!("pod {name}"));
        } else if let Some(lane) = self.str("lane") {
            s.push_str(&format!("lane {lane}"));
        }
        if let Some(pid) = self.pid() {
            if !s.is_empty() {
                s.push_str(", ");
            }
            s.push_str(&format!("pid {pid}"));
            if let Some(comm) = self.str("comm") {
                s.push_str(&format!(" ({comm})"));
            }
        }
        if let Some(host) = self.str("host") {
            s.push_str(&format!(" on {host}"));
        }
        if let Some(age) = self.int("age_ms") {
            s.push_str(&format!(", {} s old", age / 1000));
        }
        if let Some(f) = self.int("fence") {
            s.push_str(&format!(", fence {f}"));
        }
        if let Some(scope) = self.str("scope") {
            s.push_str(&format!(", scope {scope}"));
        }
        if s.is_empty() {
            if let Some(r) = self.str("reason") {
                s.push_str(r);
            }
        }
        s.trim_start().to_string()
    }
}

/// What went wrong, stable across versions (the library's `hf_error_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Held by another; [`Error::holder`] says who.
    Held,
    /// A record or the registry is unreadable; the holder's "reason" says what.
    Unreadable,
    /// Nothing to release, or not held.
    NotHeld,
    /// Held, but by another lane, token or pod.
    NotYours,
    /// The wait reached its deadline (the last holder seen).
    TimedOut,
    /// A scope overlaps another pod's write scope (the deepest such pod).
    Conflict,
    /// Refused for permissions or safety (another user's, a symlink, …).
    Unsafe,
    /// A claim beside the lock denies entry.
    Barrier,
    /// The caller's lock or scope is gone (reaped, released, entered by another).
    Lost,
    /// The wait was cancelled ([`Canceller`]).
    Canceled,
    /// An operating-system error (errno).
    Os(i32),
}

impl ErrorKind {
    /// The kind of a library return code (`HF_E*`, else `Os(-rc)`).
    pub fn from_code(rc: i32) -> ErrorKind {
        ErrorKind::from_rc(rc)
    }
    /// The library's return code of this kind: `HF_E*`, or `-n` for `Os(n)`.
    pub fn code(&self) -> i32 {
        match *self {
            ErrorKind::Held => ffi::HF_EHELD,
            ErrorKind::Unreadable => ffi::HF_EUNREADABLE,
            ErrorKind::NotHeld => ffi::HF_ENOTHELD,
            ErrorKind::NotYours => ffi::HF_ENOTYOURS,
            ErrorKind::TimedOut => ffi::HF_ETIMEDOUT,
            ErrorKind::Conflict => ffi::HF_ECONFLICT,
            ErrorKind::Unsafe => ffi::HF_EUNSAFE,
            ErrorKind::Barrier => ffi::HF_EBARRIER,
            ErrorKind::Lost => ffi::HF_ELOST,
            ErrorKind::Canceled => ffi::HF_ECANCELED,
            ErrorKind::Os(n) => -n,
        }
    }
    /// Its stable name (`hf_error_name`): "held", "timed_out", …, or the
    /// errno's symbol ("ENOENT") - the CLI's JSON `error`, Node's
    /// `err.code`, Python's `.code` (docs/outcomes.md).
    pub fn name(&self) -> &'static str {
        // hf_error_name returns static strings (its table's, strerrorname_np's)
        let p = unsafe { ffi::hf_error_name(self.code()) };
        if p.is_null() {
            return "unknown";
        }
        unsafe { CStr::from_ptr::<'static>(p) }.to_str().unwrap_or("unknown")
    }
    /// The `std::io::ErrorKind` of the `io::Error` that `From<Error> for
    /// io::Error` makes: an `Os(n)` is std's kind of errno n
    /// (`io::Error::from_raw_os_error`: ENOENT `NotFound`, EACCES/EPERM
    /// `PermissionDenied`, EEXIST `AlreadyExists`, …); `Held`, `Conflict`
    /// and `Barrier` `WouldBlock`, `TimedOut` `TimedOut`, `Unsafe`
    /// `PermissionDenied`, `NotHeld` `NotFound`, `Canceled` `Interrupted`,
    /// the rest `Other`.
    pub fn io_kind(&self) -> io::ErrorKind {
        match *self {
            ErrorKind::Held | ErrorKind::Conflict | ErrorKind::Barrier => io::ErrorKind::WouldBlock,
            ErrorKind::TimedOut => io::ErrorKind::TimedOut,
            ErrorKind::Unsafe => io::ErrorKind::PermissionDenied,
            ErrorKind::NotHeld => io::ErrorKind::NotFound,
            ErrorKind::Canceled => io::ErrorKind::Interrupted,
            ErrorKind::Os(n) => io::Error::from_raw_os_error(n).kind(),
            ErrorKind::Unreadable | ErrorKind::NotYours | ErrorKind::Lost => io::ErrorKind::Other,
        }
    }
    fn from_rc(rc: c_int) -> ErrorKind {
        match rc {
            ffi::HF_EHELD => ErrorKind::Held,
            ffi::HF_EUNREADABLE => ErrorKind::Unreadable,
            ffi::HF_ENOTHELD => ErrorKind::NotHeld,
            ffi::HF_ENOTYOURS => ErrorKind::NotYours,
            ffi::HF_ETIMEDOUT => ErrorKind::TimedOut,
            ffi::HF_ECONFLICT => ErrorKind::Conflict,
            ffi::HF_EUNSAFE => ErrorKind::Unsafe,
            ffi::HF_EBARRIER => ErrorKind::Barrier,
            ffi::HF_ELOST => ErrorKind::Lost,
            ffi::HF_ECANCELED => ErrorKind::Canceled,
            e => ErrorKind::Os(-e),
        }
    }
}

/// A failure of the library: the operation, the path (or pod) it concerned,
/// the code and, where known, the holder.
#[derive(Clone, Debug)]
pub struct Error {
    code: i32,
    op: &'static str,
    what: String,
    holder: Option<Record>,
    detail: Option<String>,
}

/// `Result<T, holdfast::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn new(op: &'static str, what: impl Into<String>, code: c_int, holder: Option<Record>) -> Error {
        Error { code, op, what: what.into(), holder, detail: None }
    }
    fn invalid(op: &'static str, what: &Path, detail: &str) -> Error {
        Error {
            code: -22,
            op,
            what: what.display().to_string(),
            holder: None,
            detail: Some(detail.into()),
        }
    }
    fn with_detail(mut self, detail: String) -> Error {
        self.detail = Some(detail);
        self
    }
    /// The library's return code (negative: HF_E* or -errno).
    pub fn code(&self) -> i32 {
        self.code
    }
    /// The stable name of the code: "held", "timed_out", "conflict", …, or
    /// the errno's symbol ("ENOENT").
    pub fn name(&self) -> String {
        unsafe { cstr(ffi::hf_error_name(self.code)) }.unwrap_or_default()
    }
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_rc(self.code)
    }
    /// Who holds it (or what refused): the record the library gave.
    pub fn holder(&self) -> Option<&Record> {
        self.holder.as_ref()
    }
    /// The path or pod name the operation concerned.
    pub fn subject(&self) -> &str {
        &self.what
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = unsafe { cstr(ffi::hf_strerror(self.code)) }.unwrap_or_default();
        write!(f, "{} {}: {}", self.op, self.what, msg)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        if let Some(h) = &self.holder {
            let d = h.describe();
            if !d.is_empty() {
                let by = match self.kind() {
                    ErrorKind::Held | ErrorKind::TimedOut | ErrorKind::NotYours
                    | ErrorKind::Conflict | ErrorKind::Barrier => "held by ",
                    _ => "",
                };
                write!(f, "; {by}{d}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// An `Os(n)` becomes `io::Error::from_raw_os_error(n)`, so `raw_os_error()`
/// is `Some(n)` and its kind is std's for that errno (ENOENT `NotFound`, …);
/// any other kind becomes `io::Error::new(kind.io_kind(), e)`, the
/// `holdfast::Error` (path, holder) its inner error. The table of every
/// outcome: docs/outcomes.md in the repository.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e.kind() {
            ErrorKind::Os(n) => io::Error::from_raw_os_error(n),
            k => io::Error::new(k.io_kind(), e),
        }
    }
}

// ---------------------------------------------------------------------------
// Cancelling a wait
// ---------------------------------------------------------------------------

/// Ends waits from another thread (or a signal handler, through its raw
/// descriptor): [`Canceller::cancel`] makes every wait given its
/// [`CancelToken`] fail with [`ErrorKind::Canceled`].
pub struct Canceller {
    writer: io::PipeWriter,
}

/// The read end a wait polls (HF_OPT_CANCEL_FD); lives as long as the waits
/// that use it.
pub struct CancelToken {
    reader: io::PipeReader,
}

/// A new canceller and its token.
pub fn cancel_pair() -> io::Result<(Canceller, CancelToken)> {
    let (reader, writer) = io::pipe()?;
    Ok((Canceller { writer }, CancelToken { reader }))
}

impl Canceller {
    /// Cancel every wait using the token, now and from now on.
    pub fn cancel(&mut self) -> io::Result<()> {
        self.writer.write_all(b"x")
    }
    /// The descriptor to write a byte to (from a signal handler).
    pub fn as_raw_fd(&self) -> RawFd {
        self.writer.as_raw_fd()
    }
}

impl CancelToken {
    /// Whether a cancel was sent (does not consume it).
    pub fn is_canceled(&self) -> bool {
        let mut pfd = PollFd { fd: self.reader.as_raw_fd(), events: 1, revents: 0 };
        unsafe { poll(&mut pfd, 1, 0) > 0 }
    }
}

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}
extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: c_int) -> c_int;
    fn pread(fd: c_int, buf: *mut u8, n: usize, off: i64) -> isize;
}

// ---------------------------------------------------------------------------
// Directory lock
// ---------------------------------------------------------------------------

/// A directory lock at a path, not yet acquired: set its options, then
/// [`Lock::acquire`].
pub struct Lock {
    raw: *mut ffi::hf_lock,
    path: PathBuf,
}

/// The backend's builder methods, one set for Lock, Session and Scope
/// (each has `set` and `set_str`); `ttl` for those with a lease.
macro_rules! backend_options {
    ($noun:literal $(, $ttl:ident)?) => {
        /// Where it lives: `"etcd://HOST:PORT[,HOST:PORT…]"` (http) or
        /// `"etcds://…"` (https) for an etcd v3 cluster, its endpoints tried in
        /// turn; `"file"` (the default) for the file system. The library does not
        /// read `HOLDFAST_BACKEND` (only the CLI does): pass it here to honour it.
        /// `EINVAL`: not a backend URI; `EPROTONOSUPPORT`: a library built
        /// without the etcd client.
        pub fn backend(self, uri: &str) -> Result<Self> {
            self.set_str(ffi::HF_OPT_BACKEND, uri)
        }
        /// On etcd: authenticate as this user (with [`Self::etcd_password_file`]).
        pub fn etcd_user(self, user: &str) -> Result<Self> {
            self.set_str(ffi::HF_OPT_ETCD_USER, user)
        }
        /// On etcd: the file whose first line is the user's password (read at
        /// each authentication, never kept).
        pub fn etcd_password_file(self, path: impl AsRef<Path>) -> Result<Self> {
            let p = path_str($noun, path.as_ref())?.to_string();
            self.set_str(ffi::HF_OPT_ETCD_PASSWORD_FILE, &p)
        }
        /// On etcd: the CA bundle for https endpoints (default: the system's).
        pub fn etcd_ca_file(self, path: impl AsRef<Path>) -> Result<Self> {
            let p = path_str($noun, path.as_ref())?.to_string();
            self.set_str(ffi::HF_OPT_ETCD_CA_FILE, &p)
        }
        /// On etcd: the bound of one request (default 5 s; connecting to one
        /// endpoint at most 2 s of it); past it [`ErrorKind::Os`]`(EIO)`, the
        /// message naming the endpoint and what happened.
        pub fn etcd_timeout(self, d: Duration) -> Result<Self> {
            self.set(ffi::HF_OPT_TIMEOUT_MS, millis(d))
        }
        $(
        /// On etcd: the lease's TTL (default 10 s; rounded up to whole seconds,
        /// at least 1 s): how long a holder whose keep-alive stopped (its host
        /// died) still holds it.
        pub fn $ttl(self, d: Duration) -> Result<Self> {
            self.set(ffi::HF_OPT_TTL_MS, millis(d))
        }
        )?
    };
}

impl Lock {
    /// A handle for the lock directory `path` (its parent must exist; names
    /// ending in ".holdfast" are reserved). No I/O yet.
    pub fn new(path: impl AsRef<Path>) -> Result<Lock> {
        let path = path.as_ref().to_path_buf();
        let c = c_path("lock", &path)?;
        let mut raw = ptr::null_mut();
        let rc = unsafe { ffi::hf_lock_new(c.as_ptr(), &mut raw) };
        if rc < 0 {
            return Err(Error::new("lock", path.display().to_string(), rc, None));
        }
        Ok(Lock { raw, path })
    }

    fn set(self, opt: c_int, v: i64) -> Result<Lock> {
        let rc = unsafe { ffi::hf_lock_set(self.raw, opt, v) };
        if rc < 0 {
            return Err(Error::new("lock", self.path.display().to_string(), rc, None));
        }
        Ok(self)
    }
    fn set_str(self, opt: c_int, v: &str) -> Result<Lock> {
        let c = c_str("lock", &self.path, v)?;
        let rc = unsafe { ffi::hf_lock_set_str(self.raw, opt, c.as_ptr()) };
        if rc < 0 {
            let e = Error::new("lock", self.path.display().to_string(), rc, None);
            return Err(e.with_detail(opt_detail(opt, v)));
        }
        Ok(self)
    }
    backend_options!("lock", ttl);
    /// How long acquire waits (default [`Wait::Try`]).
    pub fn wait(self, w: Wait) -> Self {
        self.set(ffi::HF_OPT_WAIT_MS, w.ms()).expect("a wait is always valid")
    }
    /// The window after which a lock without a complete owner record is reaped.
    pub fn stale(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_STALE_MS, millis(d))
    }
    /// The holder's own ceiling: past it a live holder is taken for leaked.
    pub fn max_hold(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_MAX_HOLD_MS, millis(d))
    }
    /// Whose life holds the lock (default: this process).
    pub fn pid(self, pid: u32) -> Result<Self> {
        self.set(ffi::HF_OPT_PID, i64::from(pid))
    }
    /// Held by no process but a lease of `d` (1 s to 365 days): it expires
    /// that long after the acquisition or the last [`LockGuard::renew`] (state
    /// "expired"). For callers whose steps are separate processes: acquire,
    /// [`Lock::detach`], hand the token on, renew and release by it.
    pub fn lease(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_LEASE_MS, millis(d))
    }
    /// The thread (its Linux tid) that will release what this lock acquires
    /// (default: the thread that acquires). A thread's wait for a lock it
    /// holds itself is refused at once with EDEADLK, the holder named.
    pub fn thread(self, tid: i32) -> Result<Self> {
        self.set(ffi::HF_OPT_THREAD, i64::from(tid))
    }
    /// End the wait when `token` is cancelled (keep the token alive as long
    /// as the lock waits).
    pub fn cancel_on(self, token: &CancelToken) -> Self {
        self.set(ffi::HF_OPT_CANCEL_FD, i64::from(token.reader.as_raw_fd()))
            .expect("an open descriptor is always valid")
    }

    /// Take the lock; on success the guard holds it until dropped or
    /// released. [`ErrorKind::Held`] / [`ErrorKind::TimedOut`] name the
    /// holder. The same as [`Lock::write`].
    pub fn acquire(self) -> Result<LockGuard> {
        self.write()
    }

    /// Take the lock alone, as a writer ([`std::sync::RwLock::write`]'s
    /// counterpart, waiting as [`Lock::wait`] says: by default it tries once,
    /// like `try_write`): no reader and no slot holder beside it. A writer
    /// that waits for readers stands at the lock, so every reader that comes
    /// after it queues behind it.
    ///
    /// ```
    /// use holdfast::{ErrorKind, Lock, Wait};
    /// # let dir = std::env::temp_dir().join(format!("holdfast-doc-rw-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("data.lock");
    /// let r1 = Lock::new(&path)?.read()?;
    /// let r2 = Lock::new(&path)?.read()?; // readers share
    /// let e = Lock::new(&path)?.write().err().unwrap(); // tried once
    /// assert_eq!(e.kind(), ErrorKind::Held);
    /// assert_eq!(e.holder().unwrap().str("mode"), Some("shared"));
    /// assert_eq!(Lock::status(&path)?.holders().len(), 2);
    /// drop(r1);
    /// drop(r2);
    /// let w = Lock::new(&path)?.wait(Wait::For(std::time::Duration::from_secs(5))).write()?;
    /// assert!(w.fence() > 0);
    /// # drop(w);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), holdfast::Error>(())
    /// ```
    pub fn write(self) -> Result<LockGuard> {
        let lock = self.set(ffi::HF_OPT_MODE, i64::from(ffi::HF_MODE_EXCLUSIVE))?;
        lock.take().map(|lock| LockGuard { lock })
    }

    /// Take the lock as a reader ([`std::sync::RwLock::read`]'s
    /// counterpart, waiting as [`Lock::wait`] says: by default it tries once,
    /// like `try_read`): beside any number of readers, never beside a writer
    /// or a slot holder, and behind a writer already waiting. Each reader has
    /// its own token, fence and record; a reader that dies frees its place at
    /// once. On the file system only (etcd refuses it for now).
    pub fn read(self) -> Result<SharedGuard> {
        let lock = self.set(ffi::HF_OPT_MODE, i64::from(ffi::HF_MODE_SHARED))?;
        lock.take().map(|lock| SharedGuard { guard: LockGuard { lock }, slots: None })
    }

    /// Take one of `n` slots (1 to [`SLOTS_MAX`]): at most `n` holders at
    /// once that each ask for `n` - a counting semaphore across processes.
    /// Never beside a writer or a reader; waits as [`Lock::wait`] says. `n`
    /// out of range: [`ErrorKind::Os`]`(EINVAL)`.
    ///
    /// ```
    /// use holdfast::{ErrorKind, Lock};
    /// # let dir = std::env::temp_dir().join(format!("holdfast-doc-slots-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("gpu.lock");
    /// let a = Lock::new(&path)?.slot(2)?;
    /// let b = Lock::new(&path)?.slot(2)?;
    /// let e = Lock::new(&path)?.slot(2).err().unwrap(); // a third of two
    /// assert_eq!(e.kind(), ErrorKind::Held);
    /// let s = Lock::status(&path)?;
    /// assert_eq!((s.str("mode"), s.int("slots")), (Some("slots"), Some(2)));
    /// drop(a);
    /// let c = Lock::new(&path)?.slot(2)?; // a place came back
    /// # drop((b, c));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), holdfast::Error>(())
    /// ```
    pub fn slot(self, n: u32) -> Result<SharedGuard> {
        let lock = self.set(ffi::HF_OPT_SLOTS, i64::from(n))?;
        lock.take().map(|lock| SharedGuard { guard: LockGuard { lock }, slots: Some(n) })
    }

    /// hf_lock_acquire in the mode set: the lock back when held.
    fn take(self) -> Result<Lock> {
        let rc = unsafe { ffi::hf_lock_acquire(self.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.raw)) };
            return Err(Error::new("lock", self.path.display().to_string(), rc, holder));
        }
        Ok(self)
    }

    /// Take over a lock acquired elsewhere by its token (`lock acquire`
    /// printed it), to check or release it. No I/O.
    pub fn adopt(self, token: &str) -> Result<LockGuard> {
        let c = c_str("lock", &self.path, token.split_whitespace().next().unwrap_or(""))?;
        let rc = unsafe { ffi::hf_lock_adopt(self.raw, c.as_ptr()) };
        if rc < 0 {
            return Err(Error::new("lock", self.path.display().to_string(), rc, None));
        }
        Ok(LockGuard { lock: self })
    }

    /// The state of the lock through this handle, on its backend (on etcd
    /// too, where [`Lock::status`] cannot look): the record of
    /// [`Lock::status`], plus "backend" ("etcd"), "key" and "ttl_ms" on
    /// etcd. A failure of etcd is [`ErrorKind::Os`]`(EIO)` and the like, its
    /// message naming the endpoint.
    pub fn query(&self) -> Result<Record> {
        let mut r = ptr::null_mut();
        let rc = unsafe { ffi::hf_lock_query(self.raw, &mut r) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.raw)) };
            return Err(Error::new("lock status", self.path.display().to_string(), rc, holder));
        }
        let rec = unsafe { Record::from_raw(r) };
        unsafe { ffi::hf_rec_free(r) };
        Ok(rec.expect("a status record"))
    }

    /// The state of the lock at `path`, read-only: a record with "state"
    /// ("free", "held", "dead", "leaked", "partial", "abandoned", "skew", "expired") and
    /// the owner's fields.
    pub fn status(path: impl AsRef<Path>) -> Result<Record> {
        let path = path.as_ref();
        let c = c_path("lock status", path)?;
        let mut r = ptr::null_mut();
        let rc = unsafe { ffi::hf_lock_status(c.as_ptr(), &mut r) };
        if rc < 0 {
            return Err(Error::new("lock status", path.display().to_string(), rc, None));
        }
        let rec = unsafe { Record::from_raw(r) };
        unsafe { ffi::hf_rec_free(r) };
        Ok(rec.expect("a status record"))
    }
}

// SAFETY: the handle is owned by this value and only reached through it
// (`&mut self`, or `&self` of a type that is not `Sync`), so one thread uses it
// at a time, which is all holdfast.h asks ("a handle is not shared between
// threads without a lock of the caller's"); it keeps no thread's state (the
// wait's inotify descriptor and the random pool are per thread, in the
// library; an etcd lease's keep-alive thread belongs to the handle and is
// joined by whichever thread releases or frees it).
unsafe impl Send for Lock {}

impl Drop for Lock {
    fn drop(&mut self) {
        unsafe { ffi::hf_lock_free(self.raw) } // releases what it still holds
    }
}

/// A held directory lock; dropping it releases the lock.
pub struct LockGuard {
    lock: Lock,
}

impl LockGuard {
    /// The token of this acquisition.
    pub fn token(&self) -> String {
        unsafe { cstr(ffi::hf_lock_token(self.lock.raw)) }.unwrap_or_default()
    }
    /// The fence: strictly greater than every earlier acquisition's of this
    /// path. Give it to the resource you protect.
    pub fn fence(&self) -> u64 {
        unsafe { ffi::hf_lock_fence(self.lock.raw) }
    }
    /// The descriptor holding the lock directory's kernel lock (-1 for an
    /// adopted token); owned by the guard.
    pub fn fd(&self) -> RawFd {
        unsafe { ffi::hf_lock_fd(self.lock.raw) }
    }
    /// The path of the lock.
    pub fn path(&self) -> &Path {
        &self.lock.path
    }
    /// The caller's own owner record.
    pub fn record(&self) -> Option<Record> {
        unsafe { Record::from_raw(ffi::hf_lock_holder(self.lock.raw)) }
    }
    /// Is it still ours? [`ErrorKind::Lost`] when it was reaped or released
    /// (the error's holder is who holds it now).
    pub fn check(&self) -> Result<()> {
        let rc = unsafe { ffi::hf_lock_check(self.lock.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.lock.raw)) };
            return Err(Error::new("lock check", self.lock.path.display().to_string(), rc, holder));
        }
        Ok(())
    }
    /// Restart the lock's window - a lease's length ([`Lock::lease`]), else
    /// its max-hold - keeping its fence (`hf_lock_renew`): `Lost` when it was
    /// reaped or released meanwhile, `NotYours` when another holds it.
    pub fn renew(&mut self) -> Result<()> {
        let rc = unsafe { ffi::hf_lock_renew(self.lock.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.lock.raw)) };
            return Err(Error::new("lock renew", self.lock.path.display().to_string(), rc, holder));
        }
        Ok(())
    }
    /// Commit under the lock: while the returned [`Hold`] lives nobody can
    /// enter, and the lock was ours when it was taken. Keep it brief.
    pub fn hold(&mut self) -> Result<Hold<'_>> {
        let rc = unsafe { ffi::hf_lock_hold(self.lock.raw) };
        if rc < 0 {
            return Err(Error::new("lock hold", self.lock.path.display().to_string(), rc, None));
        }
        Ok(Hold { guard: self })
    }
    /// Open `file` for a locked, atomic read-modify-write (`holdfast edit`).
    pub fn edit(&mut self, file: impl AsRef<Path>) -> Result<Edit<'_>> {
        let file = file.as_ref().to_path_buf();
        let c = c_path("edit", &file)?;
        let mut e = ptr::null_mut();
        let mut err = ptr::null_mut();
        let rc = unsafe { ffi::hf_edit_open(self.lock.raw, c.as_ptr(), &mut e, &mut err) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(err) };
            unsafe { ffi::hf_rec_free(err) };
            return Err(Error::new("edit", file.display().to_string(), rc, holder));
        }
        Ok(Edit { raw: e, file, _guard: self })
    }
    /// Release it now, and say how that went ([`ErrorKind::NotHeld`]: it was
    /// reaped meanwhile; [`ErrorKind::NotYours`]: another holds it now).
    pub fn release(self) -> Result<()> {
        let rc = unsafe { ffi::hf_lock_release(self.lock.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.lock.raw)) };
            return Err(Error::new("lock release", self.lock.path.display().to_string(), rc, holder));
        }
        Ok(())
    }
    /// Release it now and keep the handle (with its options) to acquire
    /// again: a program taking the same lock often saves a handle's setup.
    pub fn unlock(self) -> Result<Lock> {
        let rc = unsafe { ffi::hf_lock_release(self.lock.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_lock_holder(self.lock.raw)) };
            return Err(Error::new("lock release", self.lock.path.display().to_string(), rc, holder));
        }
        Ok(self.lock)
    }
    /// Hand the lock over without releasing it: its token and the
    /// descriptor that holds its kernel lock (keep it open as long as the
    /// owner lives, or pass it to the owner).
    pub fn detach(self) -> (String, Option<OwnedFd>) {
        let token = self.token();
        let fd = unsafe { ffi::hf_lock_detach(self.lock.raw) };
        let fd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
        (token, fd)
    }
}

/// HF_SLOTS_MAX: the most slots a lock can have ([`Lock::slot`]).
pub const SLOTS_MAX: u32 = ffi::HF_SLOTS_MAX as u32;

/// A held reader's or slot holder's place ([`Lock::read`], [`Lock::slot`]);
/// dropping it releases that place. Others may hold beside it, so it has no
/// [`LockGuard::edit`]: a file is replaced under a writer.
pub struct SharedGuard {
    guard: LockGuard,
    slots: Option<u32>,
}

impl SharedGuard {
    /// This holder's own token.
    pub fn token(&self) -> String {
        self.guard.token()
    }
    /// This holder's fence: above every writer's before it (a resource that
    /// keeps the highest writer's fence it saw can refuse readers from before).
    pub fn fence(&self) -> u64 {
        self.guard.fence()
    }
    /// The descriptor holding this holder's kernel lock (-1 for an adopted token).
    pub fn fd(&self) -> RawFd {
        self.guard.fd()
    }
    /// The path of the lock.
    pub fn path(&self) -> &Path {
        self.guard.path()
    }
    /// The slots it holds one of; None for a reader.
    pub fn slots(&self) -> Option<u32> {
        self.slots
    }
    /// The caller's own owner record ("mode": "shared" or "slots").
    pub fn record(&self) -> Option<Record> {
        self.guard.record()
    }
    /// Is this place still ours? As [`LockGuard::check`].
    pub fn check(&self) -> Result<()> {
        self.guard.check()
    }
    /// Restart this holder's window, keeping its fence. As [`LockGuard::renew`].
    pub fn renew(&mut self) -> Result<()> {
        self.guard.renew()
    }
    /// While the returned [`Hold`] lives no writer enters. As [`LockGuard::hold`].
    pub fn hold(&mut self) -> Result<Hold<'_>> {
        self.guard.hold()
    }
    /// Release this place now, and say how that went.
    pub fn release(self) -> Result<()> {
        self.guard.release()
    }
    /// Release it and keep the handle (its mode included) to take again.
    pub fn unlock(self) -> Result<Lock> {
        self.guard.unlock()
    }
    /// Hand this place over without releasing it: its token and descriptor.
    pub fn detach(self) -> (String, Option<OwnedFd>) {
        self.guard.detach()
    }
}

/// [`LockGuard::hold`]: nobody enters the lock while it lives.
pub struct Hold<'a> {
    guard: &'a mut LockGuard,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        unsafe { ffi::hf_lock_unhold(self.guard.lock.raw) }
    }
}

/// A file opened under a lock for an atomic replace.
pub struct Edit<'a> {
    raw: *mut ffi::hf_edit,
    file: PathBuf,
    _guard: &'a mut LockGuard,
}

impl Edit<'_> {
    /// Whether the file exists.
    pub fn exists(&self) -> bool {
        unsafe { ffi::hf_edit_fd(self.raw) >= 0 }
    }
    /// The file's contents as opened (empty when it does not exist).
    pub fn contents(&self) -> io::Result<Vec<u8>> {
        let fd = unsafe { ffi::hf_edit_fd(self.raw) };
        let mut out = Vec::new();
        if fd < 0 {
            return Ok(out);
        }
        let mut buf = [0u8; 65536];
        loop {
            let n = unsafe { pread(fd, buf.as_mut_ptr(), buf.len(), out.len() as i64) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
    }
    /// Replace the file with `data`: all of it or nothing, only while the
    /// lock is still ours ([`ErrorKind::Lost`] otherwise, file untouched).
    pub fn commit(self, data: &[u8]) -> Result<()> {
        let rc = unsafe { ffi::hf_edit_commit(self.raw, data.as_ptr(), data.len()) };
        if rc < 0 {
            let notes = unsafe { Record::from_raw(ffi::hf_edit_notes(self.raw)) };
            return Err(Error::new("edit", self.file.display().to_string(), rc, notes));
        }
        Ok(())
    }
}

impl Drop for Edit<'_> {
    fn drop(&mut self) {
        unsafe { ffi::hf_edit_free(self.raw) }
    }
}

// ---------------------------------------------------------------------------
// Session lock
// ---------------------------------------------------------------------------

/// A session of a work tree, by lane, not yet taken.
pub struct Session {
    raw: *mut ffi::hf_session,
    what: String,
}

impl Session {
    /// A handle for `lane` at the lock file `path` (None: `.session.lock` at
    /// the top of the enclosing git work tree).
    pub fn new(path: Option<&Path>, lane: &str) -> Result<Session> {
        let what = path.map(|p| p.display().to_string()).unwrap_or_else(|| ".session.lock".into());
        let cp = path.map(|p| c_path("session", p)).transpose()?;
        let cl = c_str("session", Path::new(&what), lane)?;
        let mut raw = ptr::null_mut();
        let rc = unsafe {
            ffi::hf_session_new(cp.as_ref().map_or(ptr::null(), |c| c.as_ptr()), cl.as_ptr(), &mut raw)
        };
        if rc < 0 {
            return Err(Error::new("session", what, rc, None));
        }
        Ok(Session { raw, what })
    }
    fn set(self, opt: c_int, v: i64) -> Result<Session> {
        let rc = unsafe { ffi::hf_session_set(self.raw, opt, v) };
        if rc < 0 {
            return Err(Error::new("session", self.what.clone(), rc, None));
        }
        Ok(self)
    }
    fn set_str(self, opt: c_int, v: &str) -> Result<Session> {
        let c = c_str("session", Path::new(&self.what), v)?;
        let rc = unsafe { ffi::hf_session_set_str(self.raw, opt, c.as_ptr()) };
        if rc < 0 {
            let e = Error::new("session", self.what.clone(), rc, None);
            return Err(e.with_detail(opt_detail(opt, v)));
        }
        Ok(self)
    }
    backend_options!("session");
    /// How long take waits (default [`Wait::Try`]).
    pub fn wait(self, w: Wait) -> Self {
        self.set(ffi::HF_OPT_WAIT_MS, w.ms()).expect("a wait is always valid")
    }
    /// A session's age before it is stale (default 90 min).
    pub fn stale(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_STALE_MS, millis(d))
    }
    /// The owner token to record (take) or require (release).
    pub fn owner(self, token: &str) -> Result<Self> {
        let c = c_str("session", Path::new(&self.what), token)?;
        let rc = unsafe { ffi::hf_session_set_str(self.raw, ffi::HF_OPT_OWNER, c.as_ptr()) };
        if rc < 0 {
            return Err(Error::new("session", self.what.clone(), rc, None));
        }
        Ok(self)
    }
    /// End the wait when `token` is cancelled.
    pub fn cancel_on(self, token: &CancelToken) -> Self {
        self.set(ffi::HF_OPT_CANCEL_FD, i64::from(token.reader.as_raw_fd()))
            .expect("an open descriptor is always valid")
    }
    /// Take the session for the lane.
    pub fn take(self) -> Result<SessionGuard> {
        let rc = unsafe { ffi::hf_session_take(self.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_session_holder(self.raw)) };
            return Err(Error::new("session", self.what.clone(), rc, holder));
        }
        Ok(SessionGuard { s: self, broke_stale: rc == 1, released: false })
    }
    /// The session at `path`, read-only ("state": "free", "held", "stale",
    /// "skew", "unreadable").
    pub fn status(path: Option<&Path>) -> Result<Record> {
        let cp = path.map(|p| c_path("session status", p)).transpose()?;
        let mut r = ptr::null_mut();
        let rc = unsafe { ffi::hf_session_status(cp.as_ref().map_or(ptr::null(), |c| c.as_ptr()), 0, &mut r) };
        let what = path.map(|p| p.display().to_string()).unwrap_or_else(|| ".session.lock".into());
        if rc < 0 {
            return Err(Error::new("session status", what, rc, None));
        }
        let rec = unsafe { Record::from_raw(r) };
        unsafe { ffi::hf_rec_free(r) };
        Ok(rec.expect("a status record"))
    }
}

// SAFETY: the handle is owned by this value and only reached through it
// (`&mut self`, or `&self` of a type that is not `Sync`), so one thread uses it
// at a time, which is all holdfast.h asks ("a handle is not shared between
// threads without a lock of the caller's"); it keeps no thread's state (the
// wait's inotify descriptor and the random pool are per thread, in the
// library; an etcd lease's keep-alive thread belongs to the handle and is
// joined by whichever thread releases or frees it).
unsafe impl Send for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { ffi::hf_session_free(self.raw) }
    }
}

/// A taken session; dropping it releases the session.
pub struct SessionGuard {
    s: Session,
    broke_stale: bool,
    released: bool,
}

impl SessionGuard {
    /// The owner token recorded.
    pub fn owner(&self) -> String {
        unsafe { cstr(ffi::hf_session_owner(self.s.raw)) }.unwrap_or_default()
    }
    /// Whether the take broke a stale session (named under "broke" in the record).
    pub fn broke_stale(&self) -> bool {
        self.broke_stale
    }
    /// The record written.
    pub fn record(&self) -> Option<Record> {
        unsafe { Record::from_raw(ffi::hf_session_holder(self.s.raw)) }
    }
    /// Release it now, and say how that went.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        let rc = unsafe { ffi::hf_session_release(self.s.raw) };
        if rc < 0 {
            let holder = unsafe { Record::from_raw(ffi::hf_session_holder(self.s.raw)) };
            return Err(Error::new("session release", self.s.what.clone(), rc, holder));
        }
        Ok(())
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if !self.released {
            unsafe { ffi::hf_session_release(self.s.raw) };
        }
    }
}

// ---------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------

/// A pod's scope, not yet registered: specs "PATH:MODE[:recursive]" (MODE
/// read or write).
pub struct Scope {
    raw: *mut ffi::hf_scope,
    name: String,
    registry: Option<PathBuf>,
    /// The backend's options, for a delegated sub-scope ([`ScopeGuard::delegate`]).
    backend_strs: Vec<(c_int, String)>,
    backend_ints: Vec<(c_int, i64)>,
}

impl Scope {
    /// A handle for the pod `name`.
    pub fn new(name: &str) -> Result<Scope> {
        let c = c_str("scope", Path::new(name), name)?;
        let mut raw = ptr::null_mut();
        let rc = unsafe { ffi::hf_scope_new(c.as_ptr(), &mut raw) };
        if rc < 0 {
            return Err(Error::new("scope", name, rc, None));
        }
        Ok(Scope { raw, name: name.to_string(), registry: None, backend_strs: Vec::new(), backend_ints: Vec::new() })
    }
    fn err(&self, op: &'static str, rc: c_int) -> Error {
        let holder = unsafe { Record::from_raw(ffi::hf_scope_holder(self.raw)) };
        Error::new(op, self.name.clone(), rc, holder)
    }
    fn set_str(mut self, opt: c_int, v: &str) -> Result<Scope> {
        if matches!(opt, ffi::HF_OPT_BACKEND | ffi::HF_OPT_ETCD_USER | ffi::HF_OPT_ETCD_PASSWORD_FILE | ffi::HF_OPT_ETCD_CA_FILE) {
            self.backend_strs.retain(|(o, _)| *o != opt);
            self.backend_strs.push((opt, v.to_string()));
        }
        let c = c_str("scope", Path::new(&self.name), v)?;
        let rc = unsafe { ffi::hf_scope_set_str(self.raw, opt, c.as_ptr()) };
        if rc < 0 {
            let e = self.err("scope", rc);
            return Err(match opt {
                ffi::HF_OPT_BACKEND | ffi::HF_OPT_ETCD_USER | ffi::HF_OPT_ETCD_PASSWORD_FILE
                | ffi::HF_OPT_ETCD_CA_FILE => e.with_detail(opt_detail(opt, v)),
                _ => e,
            });
        }
        Ok(self)
    }
    fn set(mut self, opt: c_int, v: i64) -> Result<Scope> {
        if matches!(opt, ffi::HF_OPT_TTL_MS | ffi::HF_OPT_TIMEOUT_MS) {
            self.backend_ints.retain(|(o, _)| *o != opt);
            self.backend_ints.push((opt, v));
        }
        let rc = unsafe { ffi::hf_scope_set(self.raw, opt, v) };
        if rc < 0 {
            return Err(self.err("scope", rc));
        }
        Ok(self)
    }

    backend_options!("scope", ttl);
    /// Add a spec ("/p/src:write:recursive").
    pub fn spec(self, spec: &str) -> Result<Self> {
        let c = c_str("scope", Path::new(&self.name), spec)?;
        let rc = unsafe { ffi::hf_scope_add(self.raw, c.as_ptr()) };
        if rc < 0 {
            return Err(self.err("scope", rc));
        }
        Ok(self)
    }
    /// The registry file (default: `$HOLDFAST_REGISTRY`, else the specs' tree's).
    pub fn registry(mut self, path: impl AsRef<Path>) -> Result<Self> {
        let p = path.as_ref().to_path_buf();
        let s = p.to_str().ok_or_else(|| Error::invalid("scope", &p, "a registry path that is not UTF-8"))?.to_string();
        self = self.set_str(ffi::HF_OPT_REGISTRY, &s)?;
        self.registry = Some(p);
        Ok(self)
    }
    /// Delegate from the parent pod `parent` (its effective scope must cover
    /// every spec).
    pub fn from(self, parent: &str) -> Result<Self> {
        self.set_str(ffi::HF_OPT_FROM, parent)
    }
    /// Whose life holds the registration (default: this process).
    pub fn pid(self, pid: u32) -> Result<Self> {
        self.set(ffi::HF_OPT_PID, i64::from(pid))
    }
    /// An absolute socket path to record for the pod.
    pub fn socket(self, path: &str) -> Result<Self> {
        self.set_str(ffi::HF_OPT_SOCKET, path)
    }
    /// The bound on waiting for the registry's own lock (default 5 s).
    pub fn lock_wait(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_LOCK_WAIT_MS, millis(d))
    }
    /// Release only this registration of the name (for [`Scope::release`]).
    pub fn generation(self, generation: u64) -> Result<Self> {
        self.set(ffi::HF_OPT_GENERATION, i64::try_from(generation).unwrap_or(-1))
    }
    /// Held by no process but a lease of `d` (1 s to 365 days): register,
    /// [`ScopeGuard::detach`], then renew ([`Scope::renew`]) or release it by
    /// name from any later process. It ends that long after the registration
    /// or the last renewal; then it is reaped, its scope back to its parent.
    /// Dropping a guard (or a handle) that still holds it releases it: detach
    /// to leave it to its lease. At [`Scope::renew`]: the new length.
    pub fn lease(self, d: Duration) -> Result<Self> {
        self.set(ffi::HF_OPT_LEASE_MS, millis(d))
    }
    /// Why the pod registers (at most 256 bytes of text without control
    /// characters, else `EINVAL`): kept with the registration ("reason") and
    /// named by every refusal it causes ("holder_reason").
    pub fn reason(self, why: &str) -> Result<Self> {
        self.set_str(ffi::HF_OPT_REASON, why)
    }
    /// Renew the leased pod of this name, registered here or by any process
    /// (with [`Scope::generation`], only that registration): its lease now
    /// ends [`Scope::lease`] from now (unset: its own length); nothing else
    /// changes (`hf_scope_renew`). `NotHeld`: no such pod; `Lost`: its lease
    /// had ended (it is reaped now); `NotYours`: the name is another
    /// registration's; `EINVAL`: the pod is not leased.
    pub fn renew(&mut self) -> Result<()> {
        let rc = unsafe { ffi::hf_scope_renew(self.raw) };
        if rc < 0 {
            return Err(self.err("scope renew", rc));
        }
        Ok(())
    }
    /// Release a registration made elsewhere (by name, and by
    /// [`Scope::generation`] when set).
    pub fn release(self) -> Result<()> {
        let rc = unsafe { ffi::hf_scope_release(self.raw) };
        if rc < 0 {
            return Err(self.err("scope release", rc));
        }
        Ok(())
    }
    /// How long register waits out a conflict (default [`Wait::Try`]).
    pub fn wait(self, w: Wait) -> Self {
        self.set(ffi::HF_OPT_WAIT_MS, w.ms()).expect("a wait is always valid")
    }
    /// End the wait when `token` is cancelled.
    pub fn cancel_on(self, token: &CancelToken) -> Self {
        self.set(ffi::HF_OPT_CANCEL_FD, i64::from(token.reader.as_raw_fd()))
            .expect("an open descriptor is always valid")
    }
    /// Register every spec or none. [`ErrorKind::Conflict`]: the holder is
    /// the deepest live pod whose write spec overlaps ("name", "scope");
    /// [`ErrorKind::NotYours`]: a delegated spec outside the parent's scope.
    pub fn register(self) -> Result<ScopeGuard> {
        let rc = unsafe { ffi::hf_scope_register(self.raw) };
        if rc < 0 {
            return Err(self.err("scope register", rc));
        }
        Ok(ScopeGuard { scope: self })
    }
}

// SAFETY: the handle is owned by this value and only reached through it
// (`&mut self`, or `&self` of a type that is not `Sync`), so one thread uses it
// at a time, which is all holdfast.h asks ("a handle is not shared between
// threads without a lock of the caller's"); it keeps no thread's state (the
// wait's inotify descriptor and the random pool are per thread, in the
// library; an etcd lease's keep-alive thread belongs to the handle and is
// joined by whichever thread releases or frees it).
unsafe impl Send for Scope {}

impl Drop for Scope {
    fn drop(&mut self) {
        unsafe { ffi::hf_scope_free(self.raw) } // releases what it still holds
    }
}

/// A registered scope; dropping it releases the registration (its scope
/// returns to its parent, its live children are re-parented).
pub struct ScopeGuard {
    scope: Scope,
}

impl ScopeGuard {
    /// The pod's name.
    pub fn name(&self) -> &str {
        &self.scope.name
    }
    /// The registry's generation granted to this registration (its fence).
    pub fn generation(&self) -> u64 {
        unsafe { ffi::hf_scope_generation(self.scope.raw) }
    }
    /// The registration's liveness descriptor (owned by the guard).
    pub fn fd(&self) -> RawFd {
        unsafe { ffi::hf_scope_fd(self.scope.raw) }
    }
    /// Renew this leased registration (as [`Scope::renew`]).
    pub fn renew(&mut self) -> Result<()> {
        self.scope.renew()
    }
    /// Forget the registration without releasing it: its generation and
    /// liveness descriptor (keep it open as long as the owner lives; none
    /// for a leased pod, which its lease holds).
    pub fn detach(self) -> (u64, Option<OwnedFd>) {
        let generation = self.generation();
        let fd = unsafe { ffi::hf_scope_detach(self.scope.raw) };
        (generation, (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) }))
    }
    /// A sub-scope for a child pod: a [`Scope`] delegated from this one, in
    /// the same registry (on the same backend, with its options). Add its specs and register it (for the child's pid
    /// when the child is another process).
    pub fn delegate(&self, child: &str) -> Result<Scope> {
        let mut s = Scope::new(child)?;
        if let Some(r) = &self.scope.registry {
            s = s.registry(r)?;
        }
        for (opt, v) in &self.scope.backend_strs {
            s = s.set_str(*opt, v)?;
        }
        for (opt, v) in &self.scope.backend_ints {
            s = s.set(*opt, *v)?;
        }
        s.from(&self.scope.name)
    }
    /// The pod's effective scope now: its specs minus its live descendants'
    /// ("scope", "denied").
    pub fn effective(&self) -> Result<Record> {
        Registry::read(self.scope.registry.as_deref())?.effective(&self.scope.name)
    }
    /// Release now, and say how that went.
    pub fn release(self) -> Result<()> {
        let rc = unsafe { ffi::hf_scope_release(self.scope.raw) };
        if rc < 0 {
            return Err(self.scope.err("scope release", rc));
        }
        Ok(())
    }
}

/// How a path stands in the registry for a pod ([`Registry::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeState {
    /// No live write spec covers it.
    Free,
    /// Another pod's.
    Held,
    /// The pod's effective write scope.
    Yours,
    /// Nobody's, and not the pod's.
    Outside,
    /// The pod (or that generation) is gone.
    Lost,
}

/// A read of the scope registry (nothing changed by reading).
pub struct Registry {
    raw: *mut ffi::hf_registry,
    what: String,
}

impl Registry {
    fn open(path: Option<&Path>, reap: bool) -> Result<(Registry, i32)> {
        let what = match path {
            Some(p) => p.display().to_string(),
            None => default_registry_path().unwrap_or_else(|_| "registry".into()),
        };
        let cp = path.map(|p| c_path("registry", p)).transpose()?;
        let mut raw = ptr::null_mut();
        let mut err = ptr::null_mut();
        let pp = cp.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        let rc = unsafe {
            if reap {
                ffi::hf_registry_reap(pp, &mut raw, &mut err)
            } else {
                ffi::hf_registry_read(pp, &mut raw, &mut err)
            }
        };
        if rc < 0 {
            let rec = unsafe { Record::from_raw(err) };
            unsafe { ffi::hf_rec_free(err) };
            return Err(Error::new("registry", what, rc, rec));
        }
        Ok((Registry { raw, what }, rc))
    }
    /// Read the registry (None: the default one) without changing it.
    pub fn read(path: Option<&Path>) -> Result<Registry> {
        Ok(Self::open(path, false)?.0)
    }
    /// Reap every pod proven dead; how many were reaped.
    pub fn reap(path: Option<&Path>) -> Result<usize> {
        let (r, n) = Self::open(path, true)?;
        drop(r);
        Ok(n as usize)
    }
    /// The registry's generation.
    pub fn generation(&self) -> u64 {
        unsafe { ffi::hf_registry_generation(self.raw) }
    }
    /// Every allocation ("name", "pid", "scope_allow", "delegated_from",
    /// "generation", "live", "depth", …).
    pub fn pods(&self) -> Vec<Record> {
        let n = unsafe { ffi::hf_registry_count(self.raw) };
        (0..n).filter_map(|i| unsafe { Record::from_raw(ffi::hf_registry_get(self.raw, i)) }).collect()
    }
    /// Pod `name`'s allocation, if it has one.
    pub fn find(&self, name: &str) -> Option<Record> {
        let c = CString::new(name).ok()?;
        let i = unsafe { ffi::hf_registry_find(self.raw, c.as_ptr()) };
        if i < 0 {
            return None;
        }
        unsafe { Record::from_raw(ffi::hf_registry_get(self.raw, i as usize)) }
    }
    /// Pod `name`'s effective scope.
    pub fn effective(&self, name: &str) -> Result<Record> {
        let c = c_str("registry", Path::new(name), name)?;
        let mut r = ptr::null_mut();
        let rc = unsafe { ffi::hf_registry_effective(self.raw, c.as_ptr(), &mut r) };
        if rc < 0 {
            return Err(Error::new("scope effective", name, rc, None));
        }
        let rec = unsafe { Record::from_raw(r) };
        unsafe { ffi::hf_rec_free(r) };
        Ok(rec.expect("an effective scope"))
    }
    /// May pod (with generation; 0: any) write `path`? The state, and the
    /// record of who holds it when another does.
    pub fn check(&self, path: impl AsRef<Path>, pod: &str, generation: u64) -> Result<(ScopeState, Option<Record>)> {
        let canon = canonical(path.as_ref())?;
        let cp = c_str("scope check", Path::new(&canon), &canon)?;
        let cn = c_str("scope check", Path::new(pod), pod)?;
        let mut r = ptr::null_mut();
        let rc = unsafe { ffi::hf_registry_check(self.raw, cp.as_ptr(), cn.as_ptr(), generation, &mut r) };
        let rec = unsafe { Record::from_raw(r) };
        unsafe { ffi::hf_rec_free(r) };
        let state = match rc {
            ffi::HF_SCOPE_FREE => ScopeState::Free,
            ffi::HF_SCOPE_HELD => ScopeState::Held,
            ffi::HF_SCOPE_YOURS => ScopeState::Yours,
            ffi::HF_SCOPE_OUTSIDE => ScopeState::Outside,
            ffi::HF_SCOPE_LOST => ScopeState::Lost,
            rc => return Err(Error::new("scope check", self.what.clone(), rc, rec)),
        };
        Ok((state, rec))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        unsafe { ffi::hf_registry_free(self.raw) }
    }
}

/// The absolute canonical form of a path (symlinks of the existing part
/// resolved), as scopes compare paths.
pub fn canonical(path: &Path) -> Result<String> {
    let c = c_path("canonical", path)?;
    let mut buf = vec![0 as c_char; 4097];
    let rc = unsafe { ffi::hf_path_canonical(c.as_ptr(), buf.as_mut_ptr(), buf.len()) };
    if rc < 0 {
        return Err(Error::new("canonical", path.display().to_string(), rc, None));
    }
    Ok(unsafe { cstr(buf.as_ptr()) }.unwrap_or_default())
}

/// The working directory's registry: `$HOLDFAST_REGISTRY`, else its tree's
/// (`hf_registry_path_for`: the git common directory's `holdfast/scope.lock`,
/// else the mount root's `.holdfast/scope.lock`; none: an error).
pub fn default_registry_path() -> Result<String> {
    let mut buf = vec![0 as c_char; 4097];
    let rc = unsafe { ffi::hf_registry_path(buf.as_mut_ptr(), buf.len()) };
    if rc < 0 {
        return Err(Error::new("registry", "path", rc, None));
    }
    Ok(unsafe { cstr(buf.as_ptr()) }.unwrap_or_default())
}

