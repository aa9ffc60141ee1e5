'use strict';
// holdfast/proper-lockfile - proper-lockfile 4's API over holdfast's
// directory lock. The lock is the same directory (FILE.lock, or
// lockfilePath), but who holds it is proven (an owner record: pid, start
// time, boot id, token), not guessed from an mtime kept fresh by a timer:
// a dead holder's lock is taken over at once, a live holder's never while
// it lives (up to maxHold), and two processes never both believe they hold
// it. README.md has the table of each option's meaning here.

const fs = require('fs');
const path = require('path');
const { Lock, HoldfastError, codes } = require('./index.js');

const locks = new Map(); // canonical file -> { lock, released, timer, options }

function plfError(message, code, extra) {
	return Object.assign(new Error(message), { code }, extra);
}

function resolveSync(file, options) {
	return options.realpath ? fs.realpathSync(file) : path.resolve(file);
}

async function resolveAsync(file, options) {
	return options.realpath ? fs.promises.realpath(file) : path.resolve(file);
}

function lockfilePathOf(file, options) {
	return options.lockfilePath || `${file}.lock`;
}

// proper-lockfile's retries ({ retries, factor, minTimeout, maxTimeout,
// randomize, forever }, or a count) as one wait bound: the time its retry
// schedule would have spent waiting. holdfast waits once, woken by the
// release (inotify) instead of polling at those times.
function retryBudget(retries) {
	if (!retries)
		return 0;
	const r = typeof retries === 'number' ? { retries } : retries;
	if (r.forever)
		return Infinity;
	const n = r.retries === undefined ? 10 : r.retries;
	const factor = r.factor === undefined ? 2 : r.factor;
	const min = r.minTimeout === undefined ? 1000 : r.minTimeout;
	const max = r.maxTimeout === undefined ? Infinity : r.maxTimeout;
	let total = 0;
	for (let i = 0; i < n; i++)
		total += Math.min(min * (r.randomize ? 2 : 1) * Math.pow(factor, i), max);
	return total;
}

function normalize(options) {
	options = {
		stale: 10000,
		update: null,
		realpath: true,
		retries: 0,
		onCompromised: (err) => { throw err; },
		...options,
	};
	options.stale = Math.max(options.stale || 0, 2000);
	options.update = options.update == null ? options.stale / 2 : options.update || 0;
	options.update = Math.max(Math.min(options.update, options.stale / 2), 1000);
	return options;
}

function lockedError(file, err) {
	return plfError('Lock file is already being held', 'ELOCKED', {
		file,
		holder: err.holder,
		cause: err,
	});
}

function makeLock(file, options) {
	return new Lock(lockfilePathOf(file, options), {
		stale: options.stale,
		maxHold: options.maxHold,
	});
}

// After a successful acquire: remember it, and watch it every `update` ms
// (unref'd, as proper-lockfile's refresh timer) so that onCompromised hears
// of a lost lock - reaped as leaked, or released behind our back.
function adopt(file, lock, options) {
	const entry = { lock, released: false, timer: null, options };
	locks.set(file, entry);
	const again = (ms) => {
		entry.timer = setTimeout(watch, ms);
		entry.timer.unref();
	};
	const watch = () => {
		entry.timer = null;
		if (entry.released)
			return;
		let held;
		try {
			held = lock.check();
		} catch (e) {
			if (e.code !== 'HF_ENOTHELD') {
				// cannot tell (an I/O error): look again soon, as
				// proper-lockfile retries a failed refresh
				again(1000);
				return;
			}
			held = false;
		}
		if (held) {
			again(options.update);
			return;
		}
		const now = lock.holder; // who holds it now, if anyone
		entry.released = true;
		if (locks.get(file) === entry)
			locks.delete(file);
		try { lock.close(); } catch { /* lost: nothing of ours to release */ }
		const by = now && now.pid !== undefined ? ` (now held by pid ${now.pid})` : '';
		options.onCompromised(plfError(`Lock was lost: it is no longer held by this process${by}`,
			'ECOMPROMISED', { file, holder: now || undefined }));
	};
	again(options.update);
	return entry;
}

function releaseEntry(file, entry) {
	if (entry.timer)
		clearTimeout(entry.timer);
	entry.timer = null;
	entry.released = true;
	if (locks.get(file) === entry)
		locks.delete(file);
	try {
		entry.lock.release();
	} catch (e) {
		// already gone (reaped, or taken over): nothing of ours to remove,
		// as proper-lockfile ignores ENOENT when removing the directory
		if (e.code !== 'HF_ENOTHELD' && e.code !== 'HF_ENOTYOURS')
			throw e;
	} finally {
		entry.lock.close();
	}
}

function releaser(file, entry, sync) {
	const release = () => {
		if (entry.released)
			throw plfError('Lock is already released', 'ERELEASED');
		releaseEntry(file, entry);
	};
	return sync ? release : async () => release();
}

async function lock(file, options) {
	options = normalize(options);
	const wait = retryBudget(options.retries);
	file = await resolveAsync(file, options);
	const l = makeLock(file, options);
	try {
		await l.acquire({ wait });
	} catch (e) {
		l.close();
		if (e.code === 'HF_EHELD' || e.code === 'HF_ETIMEDOUT')
			throw lockedError(file, e);
		throw e;
	}
	return releaser(file, adopt(file, l, options), false);
}

function syncOptions(options) {
	options = normalize(options);
	const r = options.retries;
	if ((typeof r === 'number' && r > 0) || (r && typeof r.retries === 'number' && r.retries > 0))
		throw plfError('Cannot use retries with the sync api', 'ESYNC');
	return options;
}

function lockSync(file, options) {
	options = syncOptions(options);
	file = resolveSync(file, options);
	const l = makeLock(file, options);
	try {
		l.acquireSync();
	} catch (e) {
		l.close();
		if (e.code === 'HF_EHELD' || e.code === 'HF_ETIMEDOUT')
			throw lockedError(file, e);
		throw e;
	}
	return releaser(file, adopt(file, l, options), true);
}

function unlockResolved(file) {
	const entry = locks.get(file);
	if (!entry)
		throw plfError('Lock is not acquired/owned by you', 'ENOTACQUIRED');
	releaseEntry(file, entry);
}

async function unlock(file, options) {
	options = { realpath: true, ...options };
	unlockResolved(await resolveAsync(file, options));
}

function unlockSync(file, options) {
	options = { realpath: true, ...options };
	unlockResolved(resolveSync(file, options));
}

// Held means: a live owner's record (or one being written, within the
// stale window). A dead, leaked or abandoned lock is not held - the next
// lock() takes it over.
const HELD_STATES = new Set(['held', 'partial', 'skew']);

function checkResolved(file, options) {
	try {
		return HELD_STATES.has(Lock.status(lockfilePathOf(file, options)).state);
	} catch (e) {
		if (e instanceof HoldfastError && e.errno === codes.HF_EUNREADABLE)
			return true; // unreadable within its window: someone is writing it
		throw e;
	}
}

async function check(file, options) {
	options = { stale: 10000, realpath: true, ...options };
	return checkResolved(await resolveAsync(file, options), options);
}

function checkSync(file, options) {
	options = { stale: 10000, realpath: true, ...options };
	return checkResolved(resolveSync(file, options), options);
}

// Release what this process still holds when it exits normally, as
// proper-lockfile does; a process that dies (SIGKILL, a crash) needs no
// handler: its lock is proven dead and taken over by the next lock().
process.on('exit', () => {
	for (const [file, entry] of locks) {
		try { releaseEntry(file, entry); } catch { /* exiting */ }
	}
});

module.exports = lock;
module.exports.lock = lock;
module.exports.unlock = unlock;
module.exports.lockSync = lockSync;
module.exports.unlockSync = unlockSync;
module.exports.check = check;
module.exports.checkSync = checkSync;
