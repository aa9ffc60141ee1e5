'use strict';
// holdfast/proper-lockfile - proper-lockfile 4's API, taking proper-lockfile's
// own lock, with holdfast's record and fence beside it. Written from
// proper-lockfile 4's documented behaviour; its code is not copied.
//
// On-disk artifacts (L is options.lockfilePath, default `${file}.lock`)
// ---------------------------------------------------------------------
//   L                  the lock: a directory made by mkdir, its mtime kept
//                      fresh every `update` ms while held - exactly
//                      proper-lockfile's lock, so either tool sees the other's
//   L.hf-record        who holds it: one line of JSON {token, pid, host,
//                      comm, argv, acquired, fence, dev, ino, birth}; written
//                      under a temporary name and renamed in (complete or
//                      absent); removed by its holder's release
//   L.hf-fence         the fence counter, "<decimal>\n", replaced by rename;
//                      never removed (a new one starts at the wall clock in
//                      microseconds)
//   L.hf-judge         a holdfast directory lock (index.js Lock), held only
//                      while a front judges and removes a stale L; with its
//                      state directory L.hf-judge.holdfast/
//   L.hf-tmp-<pid>-<hex>   a record or counter being written
//
// Steps
// -----
//   PA1 mkdir L. Made: PA4. EEXIST: PA2 (if stale > 0), else ELOCKED.
//   PA2 stat L: gone -> PA1 once more with stale 0; mtime not older than
//       `stale` ms -> ELOCKED (naming the holder from L.hf-record when it
//       matches L, PL3). Older: PA3.
//   PA3 take the judge (L.hf-judge, waiting at most JUDGE_WAIT_MS), stat L
//       again: gone -> PA1 with stale 0; still the same directory (ino,
//       birth) and still stale -> rmdir L, PA1 once more with stale 0; else
//       ELOCKED. The judge is released after.
//   PA4 utimes L to now, stat L: its mtime is ours, its (dev, ino, birth)
//       name this directory
//   PA5 fence = max(counter + 1, 1) (counter missing: the wall clock in
//       microseconds); write L.hf-fence, then L.hf-record
//   PU  every `update` ms: stat L; its mtime not ours -> compromised; else
//       utimes L to now. A failure (not ENOENT) is retried after 1 s until
//       `stale` ms passed since the last good update -> compromised.
//   PR  release: stop the timer, unlink L.hf-record, rmdir L (ENOENT ignored)
//
// Invariants
// ----------
//   (PL1) The lock is L and only L: the front holds it exactly when its mkdir
//         of L succeeded and no one removed L since; proper-lockfile
//         processes and fronts exclude each other in both directions.
//   (PL2) Nothing of holdfast's is ever inside L: a proper-lockfile process
//         removing a stale L calls rmdir, which must succeed.
//   (PL3) A record is trusted only while its (dev, ino, birth) are L's
//         (lstat): a record left by a killed front, or beside a directory
//         another tool made since, names no one.
//   (PL4) Fences are handed out only by a holder of L (after PA1), each
//         greater than the counter it read; the counter only grows.
//   (PL5) Among fronts, only a judge holder removes a stale L, and only
//         right after its own stat found it stale: two fronts never both
//         remove-and-make L (proper-lockfile's two-holder race).
//   (PL6) Every file system call goes through options.fs (default: node's
//         fs): the sync API uses its *Sync methods, the async API its
//         callback methods. The judge alone is the library's.
//   (PL7) A compromised lock is dropped from this process's table (unless
//         the table already names a newer lock of the file) and its L is
//         left alone: it may be someone else's now.
//
// Hazards
// -------
//   A front or proper-lockfile process whose event loop stalls longer than
//   `stale` loses its lock to a stale judgement (proper-lockfile's rule,
//   kept: that is the lock both tools agree on); it hears of it through
//   onCompromised. A proper-lockfile process judging staleness is not
//   serialised with fronts (it knows no judge): its own rmdir race stays.

const os = require('os');
const path = require('path');
const crypto = require('crypto');

const nodeFs = require('fs');
const JUDGE_WAIT_MS = 10000;

const locks = new Map(); // resolved file -> entry

function plfError(message, code, extra) {
	return Object.assign(new Error(message), { code }, extra);
}

// --- the two drivers: one algorithm (a generator yielding file system calls
// [name, ...args]) run with callbacks or with the *Sync methods (PL6)

function runAsync(gen, io) {
	return new Promise((resolve, reject) => {
		const step = (method, arg) => {
			let r;
			try {
				r = gen[method](arg);
			} catch (e) {
				reject(e);
				return;
			}
			if (r.done) {
				resolve(r.value);
				return;
			}
			const [name, ...args] = r.value;
			if (name === 'judge') {
				judgeAsync(args[0]).then((v) => step('next', v), (e) => step('throw', e));
				return;
			}
			if (name === 'sleep') {
				setTimeout(() => step('next'), args[0]);
				return;
			}
			try {
				io[name](...args, (err, v) => (err ? step('throw', err) : step('next', v)));
			} catch (e) {
				step('throw', e);
			}
		};
		step('next');
	});
}

function runSync(gen, io) {
	let method = 'next';
	let arg;
	for (;;) {
		const r = gen[method](arg);
		if (r.done)
			return r.value;
		const [name, ...args] = r.value;
		try {
			arg = name === 'judge' ? judgeSync(args[0]) : io[`${name}Sync`](...args);
			method = 'next';
		} catch (e) {
			arg = e;
			method = 'throw';
		}
	}
}

// The judge (PL5): holdfast's directory lock, loaded only when a stale lock
// is judged.
function judgeLock(lockfile) {
	const { Lock } = require('./index.js');
	return new Lock(`${lockfile}.hf-judge`, { stale: 2000 });
}

async function judgeAsync(lockfile) {
	const j = judgeLock(lockfile);
	try {
		await j.acquire({ wait: JUDGE_WAIT_MS });
	} catch (e) {
		j.close();
		throw e;
	}
	return j;
}

function judgeSync(lockfile) {
	const j = judgeLock(lockfile);
	try {
		j.acquireSync({ wait: JUDGE_WAIT_MS });
	} catch (e) {
		j.close();
		throw e;
	}
	return j;
}

function judgeDone(j) {
	if (!j)
		return;
	try { j.release(); } catch { /* lost: nothing to give back */ }
	j.close();
}

// --- options

function normalize(options) {
	options = {
		stale: 10000,
		update: null,
		realpath: true,
		retries: 0,
		fs: nodeFs,
		onCompromised: (err) => { throw err; },
		...options,
	};
	options.retries = options.retries || 0;
	options.retries = typeof options.retries === 'number' ? { retries: options.retries } : options.retries;
	options.stale = Math.max(options.stale || 0, 2000);
	options.update = options.update == null ? options.stale / 2 : options.update || 0;
	options.update = Math.max(Math.min(options.update, options.stale / 2), 1000);
	checkFs(options.fs);
	return options;
}

// options.fs is honoured (PL6); one without the calls the front makes is
// refused at once, never worked around.
const FS_CALLS = ['realpath', 'mkdir', 'stat', 'lstat', 'utimes', 'rmdir', 'unlink', 'rename', 'readFile', 'writeFile'];
function checkFs(io) {
	if (!io || typeof io !== 'object' && typeof io !== 'function')
		throw plfError('options.fs must be an fs module', 'EINVAL');
	const missing = FS_CALLS.filter((n) => typeof io[n] !== 'function');
	if (missing.length)
		throw plfError(`options.fs lacks ${missing.join(', ')}: holdfast/proper-lockfile makes every file system call through it`, 'EINVAL');
}

function syncFsMissing(io) {
	const missing = FS_CALLS.filter((n) => typeof io[`${n}Sync`] !== 'function');
	if (missing.length)
		throw plfError(`options.fs lacks ${missing.map((n) => `${n}Sync`).join(', ')}: the sync API calls them`, 'EINVAL');
}

function lockfilePathOf(file, options) {
	return options.lockfilePath || `${file}.lock`;
}

function* resolve(file, options) {
	return options.realpath ? yield ['realpath', file] : path.resolve(file);
}

// --- the record and the fence, beside L

function recordPath(lockfile) { return `${lockfile}.hf-record`; }
function fencePath(lockfile) { return `${lockfile}.hf-fence`; }
function tmpPath(lockfile) { return `${lockfile}.hf-tmp-${process.pid}-${crypto.randomBytes(6).toString('hex')}`; }

function identity(st) {
	return { dev: st.dev, ino: st.ino, birth: st.birthtimeMs };
}

function sameDir(rec, st) {
	return rec && st && rec.dev === st.dev && rec.ino === st.ino && rec.birth === st.birthtimeMs;
}

function* replaceFile(lockfile, dest, text) {
	const tmp = tmpPath(lockfile);
	yield ['writeFile', tmp, text];
	try {
		yield ['rename', tmp, dest];
	} catch (e) {
		try { yield ['unlink', tmp]; } catch { /* the rename's error says more */ }
		throw e;
	}
}

function* nextFence(lockfile) { // PL4: called only while holding L
	let counter = null;
	try {
		const text = String(yield ['readFile', fencePath(lockfile), 'utf8']);
		if (/^[0-9]{1,18}\n$/.test(text))
			counter = BigInt(text.trim());
	} catch (e) {
		if (e.code !== 'ENOENT')
			throw e;
	}
	// missing or unreadable: start above every fence a lost counter gave
	// out, as long as it gave fewer than one a microsecond (FC2's rule)
	const fence = counter === null ? BigInt(Date.now()) * 1000n : counter + 1n;
	yield* replaceFile(lockfile, fencePath(lockfile), `${fence}\n`);
	return fence;
}

// The holder of L, when its record describes this very directory (PL3).
function* holderOf(lockfile, st) {
	try {
		const rec = JSON.parse(yield ['readFile', recordPath(lockfile), 'utf8']);
		return sameDir(rec, st) ? rec : null;
	} catch {
		return null;
	}
}

function describe(h) {
	if (!h)
		return '';
	return ` (held by pid ${h.pid} on ${h.host}, ${h.comm}, since ${h.acquired}, fence ${h.fence})`;
}

function lockedError(file, lockfile, h) {
	return plfError(`Lock file is already being held${describe(h)}`, 'ELOCKED',
		{ file, lockfile, holder: h || undefined });
}

// --- acquire (PA1-PA5)

function isStale(st, options) {
	return st.mtime.getTime() < Date.now() - options.stale;
}

// The lock directory's stat, or null when it is gone (ENOENT); other
// errors are thrown.
function* statOrGone(lockfile) {
	try {
		return yield ['stat', lockfile];
	} catch (e) {
		if (e.code !== 'ENOENT')
			throw e;
		return null;
	}
}

function* tryAcquire(file, options) {
	const lockfile = lockfilePathOf(file, options);
	let stale = options.stale;
	for (;;) {
		try {
			yield ['mkdir', lockfile];
			break;
		} catch (e) {
			if (e.code !== 'EEXIST')
				throw e;
		}
		if (!(stale > 0))
			throw lockedError(file, lockfile, null);
		const st = yield* statOrGone(lockfile);
		if (!st) {
			stale = 0; // gone meanwhile: one more mkdir
			continue;
		}
		if (!isStale(st, options))
			throw lockedError(file, lockfile, yield* holderOf(lockfile, st));
		// stale: judged again under the judge, removed only if it is still
		// the directory found stale (PL5)
		let judge = null;
		try {
			judge = yield ['judge', lockfile];
			const again = yield* statOrGone(lockfile);
			if (!again) {
				stale = 0;
				continue;
			}
			if (!isStale(again, options) || again.ino !== st.ino || again.birthtimeMs !== st.birthtimeMs)
				throw lockedError(file, lockfile, yield* holderOf(lockfile, again));
			try {
				yield ['rmdir', lockfile];
			} catch (e) {
				if (e.code !== 'ENOENT')
					throw e;
			}
			stale = 0;
		} finally {
			judgeDone(judge);
		}
	}
	// PA4-PA5: ours from here; undo the mkdir if the record cannot be made
	try {
		const now = new Date(Date.now());
		yield ['utimes', lockfile, now, now];
		const st = yield ['stat', lockfile];
		const fence = yield* nextFence(lockfile);
		const rec = {
			token: crypto.randomBytes(16).toString('hex'),
			pid: process.pid,
			host: os.hostname(),
			comm: process.title,
			argv: process.argv.slice(1).join(' ').slice(0, 200),
			acquired: now.toISOString(),
			fence: fence.toString(),
			...identity(st),
		};
		yield* replaceFile(lockfile, recordPath(lockfile), `${JSON.stringify(rec)}\n`);
		return { file, lockfile, options, mtime: st.mtime.getTime(), lastUpdate: Date.now(),
			record: rec, fence, released: false, timer: null, updateDelay: null };
	} catch (e) {
		try { yield ['rmdir', lockfile]; } catch { /* the first error says more */ }
		throw e;
	}
}

// retries: proper-lockfile's schedule {retries (10), factor (2), minTimeout
// (1000), maxTimeout (Infinity), randomize, forever}; waits between tries.
function retryDelay(r, attempt) {
	const factor = r.factor === undefined ? 2 : r.factor;
	const min = r.minTimeout === undefined ? 1000 : r.minTimeout;
	const max = r.maxTimeout === undefined ? Infinity : r.maxTimeout;
	const rand = r.randomize ? 1 + Math.random() : 1;
	return Math.min(Math.round(rand * min * Math.pow(factor, attempt)), max);
}

function* acquire(file, options, withRetries) {
	file = yield* resolve(file, options);
	const r = options.retries;
	const max = r.forever ? Infinity : r.retries === undefined ? 10 : r.retries;
	for (let attempt = 0; ; attempt++) {
		try {
			return yield* tryAcquire(file, options);
		} catch (e) {
			if (e.code !== 'ELOCKED' || !withRetries || attempt >= max)
				throw e;
		}
		yield ['sleep', retryDelay(r, attempt)];
	}
}

// --- the mtime refresh (PU)

// The mtime is ours if it is what we set, or the whole second a file system
// of second precision rounded it to (either way).
function mtimeOurs(lock, st) {
	const m = st.mtime.getTime();
	return m === lock.mtime || (m % 1000 === 0 && Math.abs(m - lock.mtime) < 1000);
}

function compromise(lock, err) {
	lock.released = true;
	if (lock.timer)
		clearTimeout(lock.timer);
	lock.timer = null;
	if (locks.get(lock.file) === lock)
		locks.delete(lock.file); // PL7
	lock.options.onCompromised(Object.assign(err, {
		code: 'ECOMPROMISED', file: lock.file, lockfile: lock.lockfile }));
}

function scheduleUpdate(lock) {
	const io = lock.options.fs;
	const delay = lock.updateDelay || lock.options.update;
	lock.timer = setTimeout(() => {
		lock.timer = null;
		if (lock.released)
			return;
		const failed = (err) => {
			if (lock.released)
				return;
			if (err.code === 'ENOENT' || lock.lastUpdate + lock.options.stale < Date.now())
				return compromise(lock, err);
			lock.updateDelay = 1000;
			scheduleUpdate(lock);
		};
		io.stat(lock.lockfile, (err, st) => {
			if (lock.released)
				return;
			if (err)
				return failed(err);
			if (!mtimeOurs(lock, st))
				return compromise(lock, new Error('Unable to update lock within the stale threshold'));
			const now = new Date(Date.now());
			io.utimes(lock.lockfile, now, now, (err2) => {
				if (lock.released)
					return;
				if (err2)
					return failed(err2);
				lock.mtime = now.getTime();
				lock.lastUpdate = Date.now();
				lock.updateDelay = null;
				scheduleUpdate(lock);
			});
		});
	}, delay);
	lock.timer.unref();
}

// --- release (PR)

function* release(lock) {
	lock.released = true;
	if (lock.timer)
		clearTimeout(lock.timer);
	lock.timer = null;
	if (locks.get(lock.file) === lock)
		locks.delete(lock.file);
	try {
		yield ['unlink', recordPath(lock.lockfile)];
	} catch { /* the record is a description; the lock is L */ }
	try {
		yield ['rmdir', lock.lockfile];
	} catch (e) {
		if (e.code !== 'ENOENT')
			throw e;
	}
}

function adopt(lock) {
	locks.set(lock.file, lock);
	scheduleUpdate(lock);
	armExit();
	return lock;
}

function releaser(lock, sync) {
	if (sync) {
		return () => {
			if (lock.released)
				throw plfError('Lock is already released', 'ERELEASED');
			runSync(release(lock), lock.options.fs);
		};
	}
	return async () => {
		if (lock.released)
			throw plfError('Lock is already released', 'ERELEASED');
		await runAsync(release(lock), lock.options.fs);
	};
}

// --- the API

async function lock(file, options) {
	options = normalize(options);
	const l = await runAsync(acquire(file, options, true), options.fs);
	return releaser(adopt(l), false);
}

function lockSync(file, options) {
	options = normalize(options);
	const r = options.retries;
	if (r.retries > 0 || r.forever)
		throw plfError('Cannot use retries with the sync api', 'ESYNC');
	syncFsMissing(options.fs);
	const l = runSync(acquire(file, options, false), options.fs);
	return releaser(adopt(l), true);
}

// An API function in its two forms, from its steps (a generator yielding fs
// calls) and its options' defaults: the async one runs the steps through
// options.fs's callbacks, the sync one through its *Sync calls (refused when
// options.fs lacks them).
function api(steps, makeOptions) {
	return [
		async (file, options) => {
			options = makeOptions(options);
			return runAsync(steps(file, options), options.fs);
		},
		(file, options) => {
			options = makeOptions(options);
			syncFsMissing(options.fs);
			return runSync(steps(file, options), options.fs);
		},
	];
}

function* unlockSteps(file, options) {
	file = yield* resolve(file, options);
	const l = locks.get(file);
	if (!l)
		throw plfError('Lock is not acquired/owned by you', 'ENOTACQUIRED');
	yield* release(l);
}

function unlockOptions(options) {
	options = { realpath: true, fs: nodeFs, ...options };
	checkFs(options.fs);
	return options;
}

function* checkSteps(file, options) {
	file = yield* resolve(file, options);
	let st;
	try {
		st = yield ['stat', lockfilePathOf(file, options)];
	} catch (e) {
		if (e.code === 'ENOENT')
			return false;
		throw e;
	}
	return !isStale(st, options);
}

function checkOptions(options) {
	options = { stale: 10000, realpath: true, fs: nodeFs, ...options };
	options.stale = Math.max(options.stale || 0, 2000);
	checkFs(options.fs);
	return options;
}

// holdfast's extra: who holds the lock of file, from its record when the
// record describes the directory at L (PL3); null when free or unknown.
function* holderSteps(file, options) {
	file = yield* resolve(file, options);
	const lockfile = lockfilePathOf(file, options);
	let st;
	try {
		st = yield ['lstat', lockfile];
	} catch (e) {
		if (e.code === 'ENOENT')
			return null;
		throw e;
	}
	return yield* holderOf(lockfile, st);
}

const [unlockWith, unlockSyncWith] = api(unlockSteps, unlockOptions);
const unlock = async (file, options) => { await unlockWith(file, options); };
const unlockSync = (file, options) => { unlockSyncWith(file, options); };
const [check, checkSync] = api(checkSteps, checkOptions);
const [holder, holderSync] = api(holderSteps, checkOptions);


// Locks still held at exit are released (as proper-lockfile does through
// signal-exit): at a normal exit, an uncaught exception, and SIGINT, SIGTERM
// or SIGHUP when no other handler of the signal is installed (then the
// signal is raised again, so the process dies of it as it would have).
let exitArmed = false;
function releaseAllSync() {
	for (const l of [...locks.values()]) {
		try { runSync(release(l), l.options.fs.rmdirSync ? l.options.fs : nodeFs); } catch { /* exiting */ }
	}
}
function armExit() {
	if (exitArmed)
		return;
	exitArmed = true;
	process.on('exit', releaseAllSync);
	for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
		const onSignal = () => {
			if (process.listenerCount(sig) !== 1)
				return; // another handler decides whether the process ends
			releaseAllSync();
			process.removeListener(sig, onSignal);
			process.kill(process.pid, sig);
		};
		process.on(sig, onSignal);
	}
}

// The locks this process holds, by resolved file (holdfast's extra; tests
// and tools that release everything they hold).
function getLocks() {
	return Object.fromEntries([...locks].map(([f, l]) => [f, { lockfilePath: l.lockfile, fence: l.fence, record: l.record }]));
}

module.exports = lock;
module.exports.lock = lock;
module.exports.unlock = unlock;
module.exports.lockSync = lockSync;
module.exports.unlockSync = unlockSync;
module.exports.check = check;
module.exports.checkSync = checkSync;
module.exports.holder = holder;
module.exports.holderSync = holderSync;
module.exports.getLocks = getLocks;
