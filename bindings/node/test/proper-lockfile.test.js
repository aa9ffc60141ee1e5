'use strict';
// holdfast/proper-lockfile: it takes proper-lockfile's own lock (FILE.lock,
// its mtime kept fresh), so npm proper-lockfile 4.1.2 (the devDependency)
// and the front exclude each other; holdfast's record and fence sit beside.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const plf = require('../proper-lockfile');
const npmPlf = require('proper-lockfile');
const { tmpdir, holder, until } = require('./support');

function file(t, name = 'f') {
	const d = tmpdir(t);
	const f = path.join(d, name);
	fs.writeFileSync(f, '');
	return { d, f: fs.realpathSync(f) };
}

function age(p, ms) {
	const then = new Date(Date.now() - ms);
	fs.utimesSync(p, then, then);
}

test('plf: a live npm proper-lockfile holder excludes the front (PL1)', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'npmplf', f).held();
	await assert.rejects(plf.lock(f), (e) => e.code === 'ELOCKED' && e.file === f);
	assert.throws(() => plf.lockSync(f), { code: 'ELOCKED' });
	assert.strictEqual(await plf.check(f), true);
	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	const release = await plf.lock(f);
	await release();
});

test('plf: a live front holder excludes npm proper-lockfile (PL1)', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	await assert.rejects(npmPlf.lock(f), { code: 'ELOCKED' });
	assert.strictEqual(await npmPlf.check(f), true);
	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	assert.strictEqual(await npmPlf.check(f), false);
	const release = await npmPlf.lock(f);
	await release();
});

test('plf: ELOCKED names the holder from the record beside FILE.lock', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	await assert.rejects(plf.lock(f), (e) => {
		assert.strictEqual(e.code, 'ELOCKED');
		assert.match(e.message, /^Lock file is already being held \(held by pid \d+ on /);
		assert.strictEqual(e.holder.pid, child.pid);
		assert.match(e.holder.fence, /^\d+$/);
		return true;
	});
	assert.strictEqual((await plf.holder(f)).pid, child.pid);
});

test('plf: record and fence live beside FILE.lock while held, the record goes at release (PL2, PL4)', async (t) => {
	const { f } = file(t);
	const release = await plf.lock(f);
	assert.deepStrictEqual(fs.readdirSync(`${f}.lock`), [], 'nothing inside the lock directory');
	const rec = JSON.parse(fs.readFileSync(`${f}.lock.hf-record`, 'utf8'));
	const st = fs.statSync(`${f}.lock`);
	assert.strictEqual(rec.pid, process.pid);
	assert.strictEqual(rec.ino, st.ino);
	assert.strictEqual(BigInt(rec.fence), BigInt(fs.readFileSync(`${f}.lock.hf-fence`, 'utf8')));
	assert.strictEqual(plf.getLocks()[f].fence, BigInt(rec.fence));
	await release();
	assert.strictEqual(fs.existsSync(`${f}.lock`), false);
	assert.strictEqual(fs.existsSync(`${f}.lock.hf-record`), false);
	const r2 = plf.lockSync(f);
	const rec2 = JSON.parse(fs.readFileSync(`${f}.lock.hf-record`, 'utf8'));
	assert.ok(BigInt(rec2.fence) > BigInt(rec.fence), 'the fence grows');
	r2();
});

test('plf: a record beside a directory it does not describe names no one (PL3)', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	child.send('kill');
	await child.exited;
	// the killed front left its directory and record; npm proper-lockfile
	// recovers the stale directory and makes its own
	age(`${f}.lock`, 60000);
	const release = await npmPlf.lock(f, { stale: 2000 });
	assert.strictEqual(fs.existsSync(`${f}.lock.hf-record`), true, 'the old record is still there');
	assert.strictEqual(await plf.holder(f), null);
	await assert.rejects(plf.lock(f), (e) => e.code === 'ELOCKED' && e.holder === undefined &&
		e.message === 'Lock file is already being held');
	await release();
});

test('plf: stale recovery both ways, as proper-lockfile judges it (mtime older than stale)', async (t) => {
	const { f } = file(t);
	// npm proper-lockfile's leftover: the front takes it over
	fs.mkdirSync(`${f}.lock`);
	age(`${f}.lock`, 60000);
	assert.strictEqual(await plf.check(f), false);
	const r1 = await plf.lock(f);
	assert.ok(fs.statSync(`${f}.lock`).mtimeMs > Date.now() - 5000, 'a fresh mtime');
	await r1();
	// a killed front's leftover: npm proper-lockfile removes it (rmdir: the
	// directory is empty) and takes it
	const child = await holder(t, 'plf', f).held();
	child.send('kill');
	await child.exited;
	await assert.rejects(npmPlf.lock(f), { code: 'ELOCKED' }, 'not stale yet');
	age(`${f}.lock`, 60000);
	const r2 = await npmPlf.lock(f);
	await r2();
	// and a leftover younger than stale is held, for both
	fs.mkdirSync(`${f}.lock`);
	await assert.rejects(plf.lock(f, { stale: 60000 }), { code: 'ELOCKED' });
	fs.rmdirSync(`${f}.lock`);
});

test('plf: the front refreshes the mtime every update ms, so npm proper-lockfile never finds it stale', async (t) => {
	const { f } = file(t);
	const release = await plf.lock(f, { stale: 2000, update: 1000 });
	const first = fs.statSync(`${f}.lock`).mtimeMs;
	await until(() => fs.statSync(`${f}.lock`).mtimeMs > first, 'the first refresh');
	const second = fs.statSync(`${f}.lock`).mtimeMs;
	await until(() => fs.statSync(`${f}.lock`).mtimeMs > second, 'the second refresh');
	await assert.rejects(npmPlf.lock(f, { stale: 2000 }), { code: 'ELOCKED' });
	assert.strictEqual(await npmPlf.check(f, { stale: 2000 }), true);
	await release();
});

test('plf: onCompromised hears of the lock removed, and of an mtime that is not ours (PL7)', async (t) => {
	const { f } = file(t);
	let lost = null;
	const release = await plf.lock(f, { update: 1000, onCompromised: (e) => { lost = e; } });
	fs.rmdirSync(`${f}.lock`);
	await until(() => lost, 'onCompromised (removed)');
	assert.strictEqual(lost.code, 'ECOMPROMISED');
	assert.match(lost.message, /ENOENT/);
	await assert.rejects(release(), { code: 'ERELEASED' });
	// someone else's mtime: a stale judge took it and made its own
	lost = null;
	const r2 = await plf.lock(f, { update: 1000, onCompromised: (e) => { lost = e; } });
	age(`${f}.lock`, 60000);
	await until(() => lost, 'onCompromised (mtime)');
	assert.strictEqual(lost.code, 'ECOMPROMISED');
	assert.match(lost.message, /Unable to update lock within the stale threshold/);
	assert.strictEqual(fs.existsSync(`${f}.lock`), true, 'a compromised lock is left alone');
	assert.deepStrictEqual(plf.getLocks(), {});
	await assert.rejects(r2(), { code: 'ERELEASED' });
	fs.rmdirSync(`${f}.lock`);
});

test('plf: options.fs is used for every file system call (PL6)', async (t) => {
	const { f } = file(t);
	const calls = [];
	const custom = {};
	for (const [k, v] of Object.entries(fs)) {
		custom[k] = typeof v === 'function' ? (...a) => { calls.push(k); return v(...a); } : v;
	}
	const release = await plf.lock(f, { fs: custom });
	await release();
	for (const k of ['realpath', 'mkdir', 'utimes', 'stat', 'readFile', 'writeFile', 'rename', 'unlink', 'rmdir'])
		assert.ok(calls.includes(k), `${k} through options.fs`);
	calls.length = 0;
	plf.lockSync(f, { fs: custom })();
	for (const k of ['realpathSync', 'mkdirSync', 'utimesSync', 'statSync', 'writeFileSync', 'renameSync', 'rmdirSync'])
		assert.ok(calls.includes(k), `${k} through options.fs`);
	assert.ok(!calls.includes('mkdir'), 'the sync API calls no callback method');
	// a failure of options.fs is the caller's to see
	const failing = { ...fs, mkdir: (p, cb) => cb(Object.assign(new Error('no mkdir here'), { code: 'EROFS' })) };
	await assert.rejects(plf.lock(f, { fs: failing }), { code: 'EROFS' });
});

test('plf: an options.fs without the calls the front makes is refused, naming them', async (t) => {
	const { f } = file(t);
	const partial = { realpath: fs.realpath, mkdir: fs.mkdir, stat: fs.stat, utimes: fs.utimes, rmdir: fs.rmdir };
	await assert.rejects(plf.lock(f, { fs: partial }), (e) =>
		e.code === 'EINVAL' && /options\.fs lacks lstat, unlink, rename, readFile, writeFile/.test(e.message));
	assert.throws(() => plf.lockSync(f, { fs: { ...partial, lstat: fs.lstat, unlink: fs.unlink, rename: fs.rename,
		readFile: fs.readFile, writeFile: fs.writeFile } }), /options\.fs lacks realpathSync/);
	assert.strictEqual(fs.existsSync(`${f}.lock`), false, 'nothing made');
});

test('plf: retries wait for the holder to release; retries 0 does not', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'npmplf', f).held();
	await assert.rejects(plf.lock(f, { retries: 0 }), { code: 'ELOCKED' });
	const waiting = plf.lock(f, { retries: { retries: 20, minTimeout: 20, factor: 1 } });
	child.send('release');
	const release = await waiting;
	await release();
	const again = await holder(t, 'npmplf', f).held();
	await assert.rejects(plf.lock(f, { retries: { retries: 2, minTimeout: 10, factor: 1 } }), { code: 'ELOCKED' });
	assert.throws(() => plf.lockSync(f, { retries: 1 }), { code: 'ESYNC' });
	again.send('release');
	await again.line();
});

test('plf: a front removes a stale lock only if it is still the one it judged (PL5)', async (t) => {
	const { f } = file(t);
	fs.mkdirSync(`${f}.lock`);
	age(`${f}.lock`, 60000);
	// B judges the leftover stale; before B acts on it, A takes it over
	let releaseA = null;
	let stats = 0;
	const fsB = { ...fs, stat: (p, cb) => fs.stat(p, (e, st) => {
		if (stats++ > 0)
			return cb(e, st);
		plf.lock(f).then((r) => { releaseA = r; cb(e, st); }, (err) => cb(err));
	}) };
	await assert.rejects(plf.lock(f, { fs: fsB }), { code: 'ELOCKED' });
	assert.ok(releaseA, 'A took the stale lock');
	assert.strictEqual(JSON.parse(fs.readFileSync(`${f}.lock.hf-record`, 'utf8')).ino,
		fs.statSync(`${f}.lock`).ino, 'A\'s directory is still there');
	await releaseA();
});

test('plf: release twice is ERELEASED; unlock of a lock not held is ENOTACQUIRED; exit releases', async (t) => {
	const { f } = file(t);
	const release = await plf.lock(f);
	await release();
	await assert.rejects(release(), (e) => e.code === 'ERELEASED' && e.message === 'Lock is already released');
	await assert.rejects(plf.unlock(f), (e) =>
		e.code === 'ENOTACQUIRED' && e.message === 'Lock is not acquired/owned by you');
	const r2 = plf.lockSync(f);
	plf.unlockSync(f);
	assert.throws(() => r2(), { code: 'ERELEASED' });
	assert.throws(() => plf.unlockSync(f), { code: 'ENOTACQUIRED' });
	const quitter = await holder(t, 'plf', f).held();
	quitter.send('exit');
	await quitter.exited;
	assert.strictEqual(fs.existsSync(`${f}.lock`), false, 'released at exit');
	assert.strictEqual(fs.existsSync(`${f}.lock.hf-record`), false);
});

test('plf: realpath - links share the target\'s lock; realpath:false locks the path as given; lockfilePath', async (t) => {
	const { d, f } = file(t);
	const link = path.join(d, 'link');
	fs.symlinkSync(f, link);
	const release = await plf.lock(link);
	assert.strictEqual(fs.existsSync(`${f}.lock`), true, 'the target\'s lock');
	await assert.rejects(plf.lock(f), { code: 'ELOCKED' });
	await release();
	const r2 = await plf.lock(link, { realpath: false });
	assert.strictEqual(fs.existsSync(`${link}.lock`), true, 'the link\'s own lock');
	await r2();
	const missing = path.join(d, 'missing');
	await assert.rejects(plf.lock(missing), { code: 'ENOENT' });
	const lp = path.join(d, 'custom.lock');
	const r3 = await plf.lock(f, { lockfilePath: lp });
	assert.strictEqual(await plf.check(f, { lockfilePath: lp }), true);
	assert.strictEqual(await npmPlf.check(f, { lockfilePath: lp }), true);
	assert.strictEqual(await plf.check(f), false);
	await r3();
});
