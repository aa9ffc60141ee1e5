'use strict';
// holdfast - the Node binding of libholdfast (see README.md). The native
// addon (src/addon.c) wraps the C API one function at a time; this file
// gives it classes, options, Promise waits with AbortSignal, and Errors.

const fs = require('fs');
const path = require('path');

// The addon npm's install step compiled (build.sh); if it is not there, say
// why and what to do rather than just "Cannot find module".
const addonPath = process.env.HOLDFAST_ADDON || path.join(__dirname, 'build', 'holdfast.node');
let native;
try {
	native = require(addonPath);
} catch (e) {
	if (e.code !== 'MODULE_NOT_FOUND' || process.env.HOLDFAST_ADDON)
		throw e;
	throw new Error(`holdfast: no native addon ${addonPath}: the package's install step ` +
		'(build.sh, which compiles it) did not run or failed (npm install --ignore-scripts?); ' +
		'run `npm rebuild holdfast` and read its message', { cause: e });
}
const C = native.constants;

// ---- errors -------------------------------------------------------------------

// The code of a library return code is hf_error_name's name: "held",
// "timed_out", ... for the HF_E* outcomes, the errno's symbol ("ENOENT") for
// the rest - the JSON `error` of the CLI and Python's `.code`
// (docs/outcomes.md, checked by test/outcomes.test.js).

/** The stable code of a library return code: "held", "timed_out", "ENOENT", ... */
function codeOf(rc) {
	const name = native.errorName(rc);
	return name === 'unknown' ? `E${-rc}` : name;
}

function parse(json) {
	return json == null ? null : JSON.parse(json);
}

function describeHolder(h) {
	if (!h)
		return '';
	if (h.pid === undefined) // a failure's reason: etcd's, naming the endpoint
		return typeof h.reason === 'string' && h.reason ? `: ${h.reason}` : '';
	let s = h.name ? ` (held by ${h.name}, pid ${h.pid}` : ` (held by pid ${h.pid}`;
	if (h.host)
		s += ` on ${h.host}`;
	if (h.comm)
		s += `, ${h.comm}`;
	if (h.acquired)
		s += `, since ${h.acquired}`;
	return s + ')';
}

class HoldfastError extends Error {
	constructor(rc, { op, path: p, holder, record, message } = {}) {
		const what = native.strerror(rc);
		super(message || `${op ? op + ' ' : ''}${p ? p + ': ' : ''}${what}${describeHolder(holder || record)}`);
		this.name = 'HoldfastError';
		/** hf_error_name: "held", "timed_out", ..., or an errno symbol ("ENOENT"). */
		this.code = codeOf(rc);
		/** The library's return code (negative: codes.HF_EHELD, -2 for ENOENT). */
		this.errno = rc;
		if (op)
			this.op = op;
		if (p !== undefined)
			this.path = p;
		/** Who holds it (the owner record's fields), when known. */
		if (holder)
			this.holder = holder;
		/** Other evidence: an edit's refusal, a scope's conflict. */
		if (record)
			this.record = record;
	}
}

class AbortError extends Error {
	constructor(message = 'The operation was aborted', options = undefined) {
		super(message, options);
		this.name = 'AbortError';
		this.code = 'ABORT_ERR';
		this.errno = C.HF_ECANCELED;
	}
}

function abortError(signal) {
	return new AbortError(undefined, { cause: signal.reason });
}

function check(rc, ctx) {
	if (typeof rc === 'number' && rc < 0)
		throw new HoldfastError(rc, ctx);
	return rc;
}

// ---- options ----------------------------------------------------------------------

function ms(name, v, { allowInfinity = false } = {}) {
	if (v === undefined || v === null)
		return undefined;
	if (typeof v === 'bigint')
		v = Number(v);
	if (typeof v !== 'number' || Number.isNaN(v))
		throw new TypeError(`holdfast: ${name} must be a number of milliseconds`);
	if (v === Infinity && allowInfinity)
		return -1;
	if (v < 0 && allowInfinity)
		return -1;
	if (v < 0 || !Number.isFinite(v))
		throw new RangeError(`holdfast: ${name} must be >= 0`);
	return Math.ceil(v);
}

// wait: 0 (default) tries once, a number waits at most that many ms,
// Infinity (or any negative number) waits until it gets it.
function waitMs(opts) {
	const w = ms('wait', opts && opts.wait, { allowInfinity: true });
	return w === undefined ? 0 : w;
}

function checkSignal(signal) {
	if (signal !== undefined && signal !== null &&
	    (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' ||
	     typeof signal.addEventListener !== 'function'))
		throw new TypeError('holdfast: signal must be an AbortSignal');
	return signal || undefined;
}

function setOpt(box, opt, value, ctx) {
	if (value !== undefined)
		check(native.set(box, opt, value), ctx);
}

// The backend of a handle and its options (holdfast.h HF_OPT_BACKEND, ...):
// backend "etcd://HOST:PORT[,...]" / "etcds://..." / "file" (the default),
// etcdUser, etcdPasswordFile, etcdCaFile (strings), ttlMs (lock, scope) and
// etcdTimeoutMs. The library reads no HOLDFAST_BACKEND (only the CLI does):
// pass process.env.HOLDFAST_BACKEND as backend to honour it.
const BACKEND_STRS = [['backend', C.OPT_BACKEND], ['etcdUser', C.OPT_ETCD_USER],
	['etcdPasswordFile', C.OPT_ETCD_PASSWORD_FILE], ['etcdCaFile', C.OPT_ETCD_CA_FILE]];
function setBackend(box, options, ctx) {
	for (const [k, opt] of BACKEND_STRS) {
		const v = options[k];
		if (v === undefined || v === null)
			continue;
		if (typeof v !== 'string')
			throw new TypeError(`holdfast: ${k} must be a string`);
		const rc = native.setStr(box, opt, v);
		if (rc < 0)
			throw new HoldfastError(rc, { ...ctx, message:
				`${ctx.op} ${ctx.path ? ctx.path + ': ' : ''}${native.strerror(rc)} (${k} ${v})` });
	}
	setOpt(box, C.OPT_TTL_MS, ms('ttlMs', options.ttlMs), ctx);
	setOpt(box, C.OPT_TIMEOUT_MS, ms('etcdTimeoutMs', options.etcdTimeoutMs), ctx);
}

// Run a job on libuv's pool (napi_async_work): resolves to the library's
// return code. An AbortSignal cancels it through the handle's cancel
// descriptor (HF_OPT_CANCEL_FD): the wait ends with HF_ECANCELED.
async function runJob(start, box, signal, extra) {
	if (signal && signal.aborted)
		throw abortError(signal);
	const r = extra === undefined ? start(box, !!signal) : start(box, false, extra);
	if (typeof r === 'number')
		return r;
	const [promise, job] = r;
	if (!signal)
		return promise;
	const onAbort = () => native.cancel(job);
	signal.addEventListener('abort', onAbort, { once: true });
	try {
		return await promise;
	} finally {
		signal.removeEventListener('abort', onAbort);
	}
}

// Set box's wait (HF_OPT_WAIT_MS) from options.wait; ctx names the call
// in an error.
function setWait(box, options, ctx) {
	check(native.set(box, C.OPT_WAIT_MS, waitMs(options)), ctx);
}

// A waiting call start(box) as a job (runJob) with its wait from
// options.wait, cancelled by options.signal: resolves to its return code;
// when the signal's abort ended it, rejects with the signal's AbortError.
async function waitJob(start, box, options, ctx) {
	const signal = checkSignal(options.signal);
	setWait(box, options, ctx);
	const rc = await runJob(start, box, signal);
	if (rc === C.HF_ECANCELED && signal && signal.aborted)
		throw abortError(signal);
	return rc;
}

// ---- directory lock ---------------------------------------------------------------

// Locks and scopes this process holds for itself, released when it exits
// normally (process.exit included, which runs no finalizer). One that dies
// (SIGKILL, a crash) needs nothing: its owner is proven dead and the next
// acquirer reaps it at once. A handle holding for another pid (options.pid)
// is left alone: that pid's life holds it.
const heldHere = new Set();
let exitHooked = false;
function track(h) {
	if (h._forOther)
		return;
	heldHere.add(h);
	if (!exitHooked) {
		exitHooked = true;
		process.on('exit', () => {
			for (const x of heldHere)
				try { native.free(x._box); } catch { /* exiting */ }
		});
	}
}

// The mode of a lock's acquisitions (holdfast.h HF_OPT_MODE, HF_OPT_SLOTS)
// from options.shared (true: beside other shared holders, no exclusive one)
// and options.slots (n: one of at most n holders, 1 to SLOTS_MAX); neither:
// exclusive. The two at once are refused, as a value of the wrong type
// (TypeError) or out of range (RangeError).
function lockMode(options) {
	const { shared, slots } = options;
	if (shared !== undefined && shared !== null && typeof shared !== 'boolean')
		throw new TypeError('holdfast: shared must be a boolean');
	if (slots === undefined || slots === null)
		return shared ? 'shared' : 'exclusive';
	if (shared)
		throw new TypeError('holdfast: shared and slots are two modes: give one of them');
	if (typeof slots !== 'number' || !Number.isInteger(slots))
		throw new TypeError('holdfast: slots must be an integer');
	if (slots < 1 || slots > C.SLOTS_MAX)
		throw new RangeError(`holdfast: slots must be 1 to ${C.SLOTS_MAX}`);
	return 'slots';
}

class Lock {
	/**
	 * @param {string} lockPath the lock directory
	 * @param {{stale?: number, maxHold?: number, pid?: number, lease?: number,
	 *   shared?: boolean, slots?: number, backend?: string,
	 *   etcdUser?: string, etcdPasswordFile?: string, etcdCaFile?: string,
	 *   ttlMs?: number, etcdTimeoutMs?: number}} [options]
	 */
	constructor(lockPath, options = {}) {
		if (typeof lockPath !== 'string')
			throw new TypeError('holdfast: the lock path must be a string');
		this.path = lockPath;
		const box = native.lockNew(lockPath);
		check(box, { op: 'lock', path: lockPath });
		this._box = box;
		const ctx = { op: 'lock', path: lockPath };
		setOpt(box, C.OPT_STALE_MS, ms('stale', options.stale), ctx);
		setOpt(box, C.OPT_MAX_HOLD_MS, ms('maxHold', options.maxHold), ctx);
		if (options.pid !== undefined)
			setOpt(box, C.OPT_PID, options.pid, ctx);
		setOpt(box, C.OPT_LEASE_MS, ms('lease', options.lease), ctx);
		this.mode = lockMode(options);
		if (this.mode === 'shared')
			setOpt(box, C.OPT_MODE, C.MODE_SHARED, ctx);
		else if (this.mode === 'slots')
			setOpt(box, C.OPT_SLOTS, options.slots, ctx);
		setBackend(box, options, ctx);
		this._forOther = options.pid !== undefined && options.pid !== process.pid;
		this._held = false;
	}

	_got() {
		this._held = true;
		track(this);
		return this;
	}

	_gone() {
		this._held = false;
		heldHere.delete(this);
	}

	_fail(rc, op) {
		const holder = rc === C.EBUSY ? null : parse(native.lockHolder(this._box));
		return new HoldfastError(rc, { op, path: this.path, holder: holder || undefined });
	}

	/** Acquire, waiting as options.wait says; resolves to this lock. */
	async acquire(options = {}) {
		const rc = await waitJob(native.lockAcquire, this._box, options,
			{ op: 'acquire', path: this.path });
		if (rc < 0)
			throw this._fail(rc, 'acquire');
		return this._got();
	}

	/** Acquire on this thread (blocks it for the whole wait). */
	acquireSync(options = {}) {
		setWait(this._box, options, { op: 'acquire', path: this.path });
		const rc = native.lockAcquireSync(this._box);
		if (rc < 0)
			throw this._fail(rc, 'acquire');
		return this._got();
	}

	/** Release what this handle holds (or adopted). */
	release() {
		const rc = native.lockRelease(this._box);
		if (rc !== C.EBUSY)
			this._gone(); /* its descriptor is closed either way */
		if (rc < 0)
			throw this._fail(rc, 'release');
	}

	/** true while the handle still holds it; false when it was lost
	 * (reaped, or released elsewhere: holder says who has it now). */
	check() {
		const rc = native.lockCheck(this._box);
		if (rc === C.HF_ELOST)
			return false;
		if (rc < 0)
			throw this._fail(rc, 'check');
		return true;
	}

	/** Restart the lock's window - a lease's length (option lease), else its
	 * max-hold - keeping its fence. Throws HF_ELOST when it was reaped or
	 * released meanwhile, HF_ENOTYOURS when another holds it. */
	renew() {
		const rc = native.lockRenew(this._box);
		if (rc < 0)
			throw this._fail(rc, 'renew');
		return this;
	}

	/** Commit point: nobody can enter until unhold(). */
	hold() {
		const rc = native.lockHold(this._box);
		if (rc < 0)
			throw this._fail(rc, 'hold');
	}

	unhold() {
		native.lockUnhold(this._box);
	}

	/** Take over a lock acquired elsewhere, by its token. */
	adopt(token) {
		check(native.lockAdopt(this._box, String(token)), { op: 'adopt', path: this.path });
		this._held = true;
		return this;
	}

	/** Forget the lock without releasing it: its descriptor (now the
	 * caller's), or -1. */
	detach() {
		const fd = check(native.lockDetach(this._box), { op: 'detach', path: this.path });
		this._gone();
		return fd;
	}

	_info() {
		const i = native.lockInfo(this._box);
		check(i, { op: 'lock', path: this.path });
		return i;
	}

	/** The held lock's token, or null. */
	get token() { return this._info().token; }
	/** The held lock's fence (BigInt; 0n when none). */
	get fence() { return this._info().fence; }
	/** The lock directory's descriptor holding the owner's kernel lock, or -1. */
	get fd() { return this._info().fd; }
	/** After a failure: who holds it; after an acquire: our own record. */
	get holder() { return parse(this._info().holder); }
	/** This handle acquired (or adopted) it and has not released it since;
	 * check() says whether it is still so on disk. */
	get held() { return this._held; }

	/** Free the handle now (releasing a lock it still holds). */
	close() {
		check(native.free(this._box), { op: 'close', path: this.path });
		this._gone();
	}

	/** The lock's state through this handle, on its backend (etcd too,
	 * where Lock.status cannot look): Lock.status's record, plus "backend",
	 * "key" and "ttl_ms" on etcd. */
	query() {
		const r = native.lockQuery(this._box);
		if (typeof r === 'number')
			throw this._fail(r, 'status');
		if (r.rc < 0)
			throw this._fail(r.rc, 'status');
		return parse(r.json);
	}

	/** The lock's state, read-only: { state: "free" | "held" | "dead" |
	 * "leaked" | "partial" | "abandoned" | "skew", owner fields, age_ms, ... } */
	static status(lockPath) {
		const r = native.lockStatus(lockPath);
		check(r.rc, { op: 'status', path: lockPath });
		return parse(r.json);
	}
}
if (typeof Symbol.dispose === 'symbol')
	Lock.prototype[Symbol.dispose] = function () { this.close(); };

// ---- edit: a locked, atomic read-modify-write of a file -----------------------------

function readAll(fd) {
	if (fd < 0)
		return null;
	const chunks = [];
	let pos = 0;
	for (;;) {
		const buf = Buffer.allocUnsafe(65536);
		const n = fs.readSync(fd, buf, 0, buf.length, pos);
		if (n === 0)
			break;
		chunks.push(n === buf.length ? buf : buf.subarray(0, n));
		pos += n;
	}
	return Buffer.concat(chunks);
}

function toBuffer(out, encoding) {
	if (Buffer.isBuffer(out))
		return out;
	if (out instanceof Uint8Array)
		return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
	if (typeof out === 'string')
		return Buffer.from(out, encoding || 'utf8');
	throw new TypeError('holdfast edit: the function must return a string, a Buffer, a Uint8Array or undefined');
}

function editSetup(file, options) {
	if (typeof file !== 'string')
		throw new TypeError('holdfast edit: file must be a string');
	return new Lock(options.lockPath || `${file}.lock`,
		{ stale: options.stale, maxHold: options.maxHold });
}

function editOpen(lock, file) {
	const r = native.editOpen(lock._box, file);
	if (r.rc < 0) {
		const record = parse(r.json);
		throw new HoldfastError(r.rc, { op: 'edit', path: file, record: record || undefined });
	}
	return r;
}

function editResult(rc, ebox, file, lock, written) {
	const notes = parse(native.editNotes(ebox));
	if (rc < 0)
		throw new HoldfastError(rc, { op: 'edit', path: file, record: notes || undefined,
			holder: rc === C.HF_ELOST ? (lock.check(), lock.holder) || undefined : undefined });
	return { written, notes, fence: lock.fence };
}

/* fn's input: the opened file's contents (null: it does not exist), a
 * string with options.encoding. */
function editInput(r, options) {
	const data = readAll(r.fd);
	return data && options.encoding ? data.toString(options.encoding) : data;
}

/* What edit returns when fn returned undefined: nothing written. */
function editUnwritten(lock) {
	return { written: false, notes: null, fence: lock.fence };
}

/* Ends an edit however it went: frees the edit's handle ebox (once the
 * file was opened), releases and closes the lock. A failing release is
 * thrown only when the edit itself succeeded (failed false) and had its
 * file open; otherwise the failure already thrown says more. */
function editEnd(lock, ebox, failed) {
	if (!ebox) {
		try { lock.release(); } catch { /* the failure thrown says more */ }
		lock.close();
		return;
	}
	native.free(ebox);
	try {
		lock.release();
	} catch (e) {
		if (!failed)
			throw e;
	} finally {
		lock.close();
	}
}

/**
 * Replace file under the directory lock file.lock: fn gets its contents
 * (a Buffer, a string with options.encoding, or null when it does not exist)
 * and returns the new contents, or undefined to leave it as it is. The file
 * changes only by the rename of a complete, fsynced temporary, and only
 * while the lock is still ours.
 */
async function edit(file, fn, options = {}) {
	const steps = editSteps(file, fn, options, false);
	let r = steps.next();
	while (!r.done) {
		let v;
		try {
			v = await r.value;
		} catch (e) {
			r = steps.throw(e);
			continue;
		}
		r = steps.next(v);
	}
	return r.value;
}

/** edit() on this thread: fn is called synchronously. */
function editSync(file, fn, options = {}) {
	const steps = editSteps(file, fn, options, true);
	let r = steps.next();
	while (!r.done)
		r = steps.next(r.value);
	return r.value;
}

// edit's one body for both: it yields each step that may wait (the
// acquire, fn's result, the commit); edit awaits each, editSync (sync)
// has each value at once.
function* editSteps(file, fn, options, sync) {
	const signal = sync ? undefined : checkSignal(options.signal);
	const lock = editSetup(file, options);
	let failed = true;
	try {
		yield sync ? lock.acquireSync({ wait: options.wait })
			: lock.acquire({ wait: options.wait, signal });
	} catch (e) {
		lock.close();
		throw e;
	}
	let ebox;
	try {
		const r = editOpen(lock, file);
		ebox = r.edit;
		const out = yield fn(editInput(r, options));
		if (sync && out && typeof out.then === 'function')
			throw new TypeError('holdfast editSync: the function returned a Promise (use edit)');
		let res;
		if (out === undefined) {
			res = editUnwritten(lock);
		} else {
			const buf = toBuffer(out, options.encoding);
			const rc = yield sync ? native.editCommitSync(ebox, buf)
				: runJob(native.editCommit, ebox, undefined, buf);
			res = editResult(rc, ebox, file, lock, true);
		}
		failed = false;
		return res;
	} finally {
		editEnd(lock, ebox, failed);
	}
}

// ---- session lock ---------------------------------------------------------------------

class Session {
	/**
	 * @param {string|null} file the session file (null: .session.lock at the
	 *   top of the enclosing git work tree)
	 * @param {string} lane
	 * @param {{stale?: number, owner?: string, backend?: string, etcdUser?: string,
	 *   etcdPasswordFile?: string, etcdCaFile?: string, etcdTimeoutMs?: number}} [options]
	 */
	constructor(file, lane, options = {}) {
		this.path = file == null ? null : String(file);
		this.lane = lane;
		const box = native.sessionNew(this.path, lane);
		check(box, { op: 'session', path: this.path || undefined });
		this._box = box;
		this.broke = false;
		const ctx = { op: 'session', path: this.path || undefined };
		setOpt(box, C.OPT_STALE_MS, ms('stale', options.stale), ctx);
		if (options.owner !== undefined)
			check(native.setStr(box, C.OPT_OWNER, options.owner), ctx);
		setBackend(box, options, ctx);
	}

	_fail(rc, op) {
		const holder = rc === C.EBUSY ? null : parse(native.sessionInfo(this._box).holder);
		return new HoldfastError(rc, { op, path: this.path || undefined, holder: holder || undefined });
	}

	_taken(rc) {
		if (rc < 0)
			throw this._fail(rc, 'take');
		this.broke = rc === 1;
		return this;
	}

	/** Take the session (broke: it broke a stale one). */
	async take(options = {}) {
		return this._taken(await waitJob(native.sessionTake, this._box, options, { op: 'take' }));
	}

	takeSync(options = {}) {
		setWait(this._box, options, { op: 'take' });
		return this._taken(native.sessionTakeSync(this._box));
	}

	release() {
		const rc = native.sessionRelease(this._box);
		if (rc < 0)
			throw this._fail(rc, 'release');
	}

	/** The owner token recorded by the take, or null. */
	get owner() { return check(native.sessionInfo(this._box), {}).owner; }
	get holder() { return parse(check(native.sessionInfo(this._box), {}).holder); }

	close() {
		check(native.free(this._box), { op: 'close' });
	}

	/** { state: "free" | "held" | "stale" | "skew" | "unreadable", ... } */
	static status(file = null, options = {}) {
		const r = native.sessionStatus(file, ms('stale', options.stale) || 0);
		check(r.rc, { op: 'status', path: file || undefined });
		return parse(r.json);
	}

	static defaultPath() {
		return check(native.sessionDefaultPath(), { op: 'session' });
	}
}

// ---- scopes and the registry --------------------------------------------------------------

class Scope {
	/**
	 * @param {string} name the pod name
	 * @param {{specs?: string[], pid?: number, from?: string, registry?: string,
	 *   socket?: string, lockWait?: number, generation?: bigint|number,
	 *   backend?: string, etcdUser?: string, etcdPasswordFile?: string,
	 *   etcdCaFile?: string, ttlMs?: number, etcdTimeoutMs?: number,
	 *   lease?: number, reason?: string}} [options]
	 * lease (ms, 1 s to 365 days): held by no process but a lease - register,
	 * detach(), then renew() or release() by name from any later process; it
	 * ends that long after the registration or the last renewal, then is
	 * reaped, its scope back to its parent. close() (and the exit of this
	 * process) releases a leased pod it registered unless detached first.
	 * reason: why the pod registers (at most 256 bytes of text without
	 * control characters), kept with the registration, in the registry's
	 * entries ("reason") and every refusal it causes ("holder_reason").
	 */
	constructor(name, options = {}) {
		this.name = name;
		const box = native.scopeNew(name);
		check(box, { op: 'scope', path: String(name) });
		this._box = box;
		const ctx = { op: 'scope', path: String(name) };
		if (options.pid !== undefined)
			setOpt(box, C.OPT_PID, options.pid, ctx);
		setOpt(box, C.OPT_LOCK_WAIT_MS, ms('lockWait', options.lockWait), ctx);
		if (options.generation !== undefined)
			setOpt(box, C.OPT_GENERATION, options.generation, ctx);
		setOpt(box, C.OPT_LEASE_MS, ms('lease', options.lease), ctx);
		if (options.reason !== undefined && typeof options.reason !== 'string')
			throw new TypeError('holdfast: reason must be a string');
		if (options.reason !== undefined) {
			const rc = native.setStr(box, C.OPT_REASON, options.reason);
			if (rc < 0)
				throw this._fail(rc, 'reason');
		}
		for (const [k, opt] of [['from', C.OPT_FROM], ['registry', C.OPT_REGISTRY], ['socket', C.OPT_SOCKET]])
			if (options[k] !== undefined)
				check(native.setStr(box, opt, options[k]), ctx);
		setBackend(box, options, ctx);
		for (const spec of options.specs || [])
			this.add(spec);
		this._forOther = options.pid !== undefined && options.pid !== process.pid;
	}

	_fail(rc, op) {
		const rec = rc === C.EBUSY ? null : parse(native.scopeInfo(this._box).holder);
		// the record names the conflicting pod (or the one holding the name)
		const holder = rec && rec.pid !== undefined ? rec : undefined;
		return new HoldfastError(rc, { op, path: this.name, holder, record: rec || undefined });
	}

	/** Add a spec "PATH:MODE[:recursive]" (MODE read or write). */
	add(spec) {
		const rc = native.scopeAdd(this._box, spec);
		if (rc < 0)
			throw this._fail(rc, 'add');
		return this;
	}

	async register(options = {}) {
		return this._registered(await waitJob(native.scopeRegister, this._box, options,
			{ op: 'register' }));
	}

	registerSync(options = {}) {
		setWait(this._box, options, { op: 'register' });
		return this._registered(native.scopeRegisterSync(this._box));
	}

	_registered(rc) {
		if (rc < 0)
			throw this._fail(rc, 'register');
		track(this);
		return this;
	}

	release() {
		const rc = native.scopeRelease(this._box);
		if (rc !== C.EBUSY)
			heldHere.delete(this);
		if (rc < 0)
			throw this._fail(rc, 'release');
	}

	/** Renew the leased pod of this name (registered here or by any process;
	 * with option generation, only that registration): its lease now ends
	 * lease ms from now (the option lease, or this argument; neither: the
	 * pod's own length). Throws HF_ENOTHELD (no such pod), HF_ELOST (its lease
	 * had ended: reaped now), HF_ENOTYOURS (another registration has the
	 * name), EINVAL (the pod is not leased). */
	renew(lease) {
		const ctx = { op: 'renew', path: this.name };
		setOpt(this._box, C.OPT_LEASE_MS, ms('lease', lease), ctx);
		const rc = native.scopeRenew(this._box);
		if (rc === C.HF_ELOST || rc === C.HF_ENOTHELD)
			heldHere.delete(this);
		if (rc < 0)
			throw this._fail(rc, 'renew');
		return this;
	}

	/** Forget the registration without releasing it: its descriptor, or -1
	 * (a leased pod has none: it stays, held by its lease). */
	detach() {
		const fd = native.scopeDetach(this._box);
		if (fd < -1) // -1: no descriptor (a leased pod, or nothing held); below: the box's error
			check(fd, { op: 'detach', path: this.name });
		heldHere.delete(this);
		return fd;
	}

	/** The generation granted (BigInt; 0n: none). */
	get generation() { return check(native.scopeInfo(this._box), {}).generation; }
	/** The registration's liveness descriptor, or -1. */
	get fd() { return check(native.scopeInfo(this._box), {}).fd; }
	/** After a failure: what went wrong (the conflicting pod, ...). */
	get holder() { return parse(check(native.scopeInfo(this._box), {}).holder); }

	close() {
		check(native.free(this._box), { op: 'close', path: this.name });
		heldHere.delete(this);
	}
}

const VERDICTS = ['free', 'held', 'yours', 'outside', 'lost'];

class Registry {
	constructor(r) {
		this._box = r.registry;
		/** The registry's generation (BigInt). */
		this.generation = r.generation;
		/** Every allocation, as records. */
		this.entries = r.entries.map(parse);
	}

	static _call(fn, file, op) {
		const r = fn(file == null ? null : file);
		if (r.rc < 0)
			throw new HoldfastError(r.rc, { op, path: file || undefined, record: parse(r.json) || undefined });
		const reg = new Registry(r);
		reg.reaped = op === 'reap' ? r.rc : 0;
		return reg;
	}

	/** Read the registry (default: hf_registry_path) without changing it. */
	static read(file) { return Registry._call(native.registryRead, file, 'read'); }
	/** Reap every pod proven dead; entries are the reaped ones. */
	static reap(file) { return Registry._call(native.registryReap, file, 'reap'); }
	static path() { return check(native.registryPath(), { op: 'registry' }); }

	find(name) {
		return this.entries.find((e) => e.name === name);
	}

	/** A pod's effective scope: { name, pid, generation, scope, denied }. */
	effective(name) {
		const r = native.registryEffective(this._box, name);
		check(r.rc, { op: 'effective', path: name });
		return parse(r.json);
	}

	/** May pod (default: anyone) write at p? { verdict, state, holder, ... } */
	check(p, options = {}) {
		const canon = canonicalPath(p);
		const r = native.registryCheck(this._box, canon, options.pod == null ? null : options.pod,
			options.generation === undefined ? 0 : options.generation);
		check(r.rc, { op: 'check', path: canon });
		const rec = parse(r.json) || {};
		rec.verdict = VERDICTS[r.rc];
		return rec;
	}

	close() {
		native.free(this._box);
	}
}

function canonicalPath(p) {
	return check(native.pathCanonical(String(p)), { op: 'canonical', path: String(p) });
}

function canonicalSpec(spec) {
	return check(native.scopeCanonical(String(spec)), { op: 'canonical', path: String(spec) });
}

function pathIdentity(canonical) {
	return check(native.pathIdentity(String(canonical)), { op: 'identity', path: String(canonical) });
}

const codes = {};
for (const k of Object.keys(C))
	if (k.startsWith('HF_E'))
		codes[k] = C[k];
Object.freeze(codes);

module.exports = {
	Lock,
	Session,
	Scope,
	Registry,
	edit,
	editSync,
	HoldfastError,
	AbortError,
	codes,
	codeOf,
	/** The most slots a lock can have (holdfast.h HF_SLOTS_MAX). */
	SLOTS_MAX: C.SLOTS_MAX,
	strerror: native.strerror,
	errorName: native.errorName,
	version: native.version,
	canonicalPath,
	canonicalSpec,
	pathIdentity,
};
