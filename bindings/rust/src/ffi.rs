//! The C API of include/holdfast.h, as it is declared there: opaque handles
//! and functions only (no struct layout is copied, so none can drift).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_long};

pub enum hf_rec {}
pub enum hf_lock {}
pub enum hf_edit {}
pub enum hf_session {}
pub enum hf_scope {}
pub enum hf_registry {}

pub const HF_EHELD: c_int = -4097;
pub const HF_EUNREADABLE: c_int = -4098;
pub const HF_ENOTHELD: c_int = -4099;
pub const HF_ENOTYOURS: c_int = -4100;
pub const HF_ETIMEDOUT: c_int = -4101;
pub const HF_ECONFLICT: c_int = -4102;
pub const HF_EUNSAFE: c_int = -4103;
pub const HF_EBARRIER: c_int = -4104;
pub const HF_ELOST: c_int = -4105;
pub const HF_ECANCELED: c_int = -4106;

pub const HF_OPT_WAIT_MS: c_int = 1;
pub const HF_OPT_STALE_MS: c_int = 2;
pub const HF_OPT_MAX_HOLD_MS: c_int = 3;
pub const HF_OPT_PID: c_int = 4;
pub const HF_OPT_CANCEL_FD: c_int = 5;
pub const HF_OPT_LOCK_WAIT_MS: c_int = 6;
pub const HF_OPT_GENERATION: c_int = 7;
pub const HF_OPT_TTL_MS: c_int = 8;
pub const HF_OPT_TIMEOUT_MS: c_int = 9;
// The CLI's option (a detached acquisition's calling chain); the Rust API does
// not offer it, the value is kept so that the numbering reads as holdfast.h's.
#[allow(dead_code)]
pub const HF_OPT_CHAIN_PID: c_int = 10;
pub const HF_OPT_THREAD: c_int = 11;
pub const HF_OPT_LEASE_MS: c_int = 12;
#[allow(dead_code)]
pub const HF_OPT_DEPTH: c_int = 13;
pub const HF_OPT_MODE: c_int = 14;
pub const HF_OPT_SLOTS: c_int = 15;
pub const HF_OPT_OWNER: c_int = 100;
pub const HF_OPT_REGISTRY: c_int = 101;
pub const HF_OPT_SOCKET: c_int = 102;
pub const HF_OPT_FROM: c_int = 103;
pub const HF_OPT_BACKEND: c_int = 104;
pub const HF_OPT_ETCD_USER: c_int = 105;
pub const HF_OPT_ETCD_PASSWORD_FILE: c_int = 106;
pub const HF_OPT_ETCD_CA_FILE: c_int = 107;
pub const HF_OPT_REASON: c_int = 108;

pub const HF_MODE_EXCLUSIVE: c_int = 0;
pub const HF_MODE_SHARED: c_int = 1;
#[allow(dead_code)]
pub const HF_MODE_SLOTS: c_int = 2;
pub const HF_SLOTS_MAX: c_int = 1024;

pub const HF_SCOPE_FREE: c_int = 0;
pub const HF_SCOPE_HELD: c_int = 1;
pub const HF_SCOPE_YOURS: c_int = 2;
pub const HF_SCOPE_OUTSIDE: c_int = 3;
pub const HF_SCOPE_LOST: c_int = 4;

extern "C" {
    pub fn hf_version() -> *const c_char;
    pub fn hf_strerror(rc: c_int) -> *const c_char;
    pub fn hf_error_name(rc: c_int) -> *const c_char;

    pub fn hf_rec_str(r: *const hf_rec, field: *const c_char) -> *const c_char;
    pub fn hf_rec_int(r: *const hf_rec, field: *const c_char, ret: *mut i64) -> c_int;
    pub fn hf_rec_len(r: *const hf_rec, field: *const c_char) -> usize;
    pub fn hf_rec_str_at(r: *const hf_rec, field: *const c_char, i: usize) -> *const c_char;
    pub fn hf_rec_json(r: *const hf_rec) -> *const c_char;
    pub fn hf_rec_free(r: *mut hf_rec);

    pub fn hf_lock_new(path: *const c_char, ret: *mut *mut hf_lock) -> c_int;
    pub fn hf_lock_set(l: *mut hf_lock, opt: c_int, value: i64) -> c_int;
    pub fn hf_lock_set_str(l: *mut hf_lock, opt: c_int, value: *const c_char) -> c_int;
    pub fn hf_lock_acquire(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_release(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_adopt(l: *mut hf_lock, token: *const c_char) -> c_int;
    pub fn hf_lock_check(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_renew(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_detach(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_token(l: *const hf_lock) -> *const c_char;
    pub fn hf_lock_fence(l: *const hf_lock) -> u64;
    pub fn hf_lock_fd(l: *const hf_lock) -> c_int;
    pub fn hf_lock_holder(l: *const hf_lock) -> *const hf_rec;
    pub fn hf_lock_hold(l: *mut hf_lock) -> c_int;
    pub fn hf_lock_unhold(l: *mut hf_lock);
    pub fn hf_lock_free(l: *mut hf_lock);
    pub fn hf_lock_status(path: *const c_char, ret: *mut *mut hf_rec) -> c_int;
    pub fn hf_lock_query(l: *mut hf_lock, ret: *mut *mut hf_rec) -> c_int;

    pub fn hf_edit_open(
        l: *mut hf_lock,
        file: *const c_char,
        ret: *mut *mut hf_edit,
        reterr: *mut *mut hf_rec,
    ) -> c_int;
    pub fn hf_edit_fd(e: *const hf_edit) -> c_int;
    pub fn hf_edit_commit(e: *mut hf_edit, data: *const u8, len: usize) -> c_int;
    pub fn hf_edit_notes(e: *const hf_edit) -> *const hf_rec;
    pub fn hf_edit_free(e: *mut hf_edit);

    pub fn hf_session_new(path: *const c_char, lane: *const c_char, ret: *mut *mut hf_session)
        -> c_int;
    pub fn hf_session_set(s: *mut hf_session, opt: c_int, value: i64) -> c_int;
    pub fn hf_session_set_str(s: *mut hf_session, opt: c_int, value: *const c_char) -> c_int;
    pub fn hf_session_take(s: *mut hf_session) -> c_int;
    pub fn hf_session_release(s: *mut hf_session) -> c_int;
    pub fn hf_session_owner(s: *const hf_session) -> *const c_char;
    pub fn hf_session_holder(s: *const hf_session) -> *const hf_rec;
    pub fn hf_session_free(s: *mut hf_session);
    pub fn hf_session_status(path: *const c_char, stale_ms: i64, ret: *mut *mut hf_rec) -> c_int;

    pub fn hf_scope_new(name: *const c_char, ret: *mut *mut hf_scope) -> c_int;
    pub fn hf_scope_add(s: *mut hf_scope, spec: *const c_char) -> c_int;
    pub fn hf_scope_set(s: *mut hf_scope, opt: c_int, value: i64) -> c_int;
    pub fn hf_scope_set_str(s: *mut hf_scope, opt: c_int, value: *const c_char) -> c_int;
    pub fn hf_scope_register(s: *mut hf_scope) -> c_int;
    pub fn hf_scope_release(s: *mut hf_scope) -> c_int;
    pub fn hf_scope_detach(s: *mut hf_scope) -> c_int;
    pub fn hf_scope_renew(s: *mut hf_scope) -> c_int;
    pub fn hf_scope_generation(s: *const hf_scope) -> u64;
    pub fn hf_scope_fd(s: *const hf_scope) -> c_int;
    pub fn hf_scope_holder(s: *const hf_scope) -> *const hf_rec;
    pub fn hf_scope_free(s: *mut hf_scope);

    pub fn hf_path_canonical(path: *const c_char, buf: *mut c_char, n: usize) -> c_int;
    pub fn hf_registry_path(buf: *mut c_char, n: usize) -> c_int;
    pub fn hf_registry_read(
        path: *const c_char,
        ret: *mut *mut hf_registry,
        reterr: *mut *mut hf_rec,
    ) -> c_int;
    pub fn hf_registry_reap(
        path: *const c_char,
        ret: *mut *mut hf_registry,
        reterr: *mut *mut hf_rec,
    ) -> c_int;
    pub fn hf_registry_count(r: *const hf_registry) -> usize;
    pub fn hf_registry_generation(r: *const hf_registry) -> u64;
    pub fn hf_registry_get(r: *const hf_registry, i: usize) -> *const hf_rec;
    pub fn hf_registry_find(r: *const hf_registry, name: *const c_char) -> c_long;
    pub fn hf_registry_effective(
        r: *const hf_registry,
        name: *const c_char,
        ret: *mut *mut hf_rec,
    ) -> c_int;
    pub fn hf_registry_check(
        r: *const hf_registry,
        canonical_path: *const c_char,
        pod: *const c_char,
        pod_generation: u64,
        ret: *mut *mut hf_rec,
    ) -> c_int;
    pub fn hf_registry_free(r: *mut hf_registry);
}
