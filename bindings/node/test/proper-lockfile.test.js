'use strict';
// holdfast/proper-lockfile: the behaviours proper-lockfile's users rely on.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const plf = require('../proper-lockfile');
const hf = require('..');
const { tmpdir, holder, until } = require('./support');

function file(t, name = 'f') {
	const d = tmpdir(t);
	const f = path.join(d, name);
	fs.writeFileSync(f, '');
	return { d, f: fs.realpathSync(f) };
}

test('plf: lock resolves to release(); check; the lock directory is FILE.lock', async (t) => {
	const { f } = file(t);
	assert.strictEqual(await plf.check(f), false);
	const release = await plf.lock(f);
	assert.strictEqual(typeof release, 'function');
	assert.strictEqual(await plf.check(f), true);
	assert.strictEqual(plf.checkSync(f), true);
	assert.strictEqual(hf.Lock.status(`${f}.lock`).pid, process.pid);
	await release();
	assert.strictEqual(await plf.check(f), false);
	assert.strictEqual(fs.existsSync(`${f}.lock`), false);
});

test('plf: ELOCKED when another process holds it, with the file and the holder', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	await assert.rejects(plf.lock(f), (e) => {
		assert.strictEqual(e.code, 'ELOCKED');
		assert.strictEqual(e.message, 'Lock file is already being held');
		assert.strictEqual(e.file, f);
		assert.strictEqual(e.holder.pid, child.pid);
		return true;
	});
	assert.throws(() => plf.lockSync(f), { code: 'ELOCKED' });
	assert.strictEqual(await plf.check(f), true);
	// and in the same process: a second lock of a held file
	child.send('release');
	await child.line();
	const release = await plf.lock(f);
	await assert.rejects(plf.lock(f), { code: 'ELOCKED' });
	await release();
});

test('plf: retries wait for the holder to release; retries 0 does not', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	await assert.rejects(plf.lock(f, { retries: 0 }), { code: 'ELOCKED' });
	// a budget of 1+2+4+8+16 s; the holder releases once we wait
	const waiting = plf.lock(f, { retries: { retries: 5, minTimeout: 1000 } });
	child.send('release');
	const release = await waiting;
	assert.strictEqual(hf.Lock.status(`${f}.lock`).pid, process.pid);
	await release();
	// a short budget runs out with ELOCKED
	const again = await holder(t, 'plf', f).held();
	await assert.rejects(plf.lock(f, { retries: { retries: 2, minTimeout: 10, factor: 1 } }), (e) =>
		e.code === 'ELOCKED' && e.holder.pid === again.pid);
	assert.throws(() => plf.lockSync(f, { retries: 1 }), { code: 'ESYNC' });
});

test('plf: stale - a crashed holder\'s lock is taken over at once, whatever stale says', async (t) => {
	const { f } = file(t);
	const child = await holder(t, 'plf', f).held();
	child.send('kill');
	await child.exited;
	assert.strictEqual(await plf.check(f, { stale: 60000 }), false, 'a dead holder does not hold it');
	const release = await plf.lock(f, { stale: 60000 });
	await release();
	// a holder that exits without unlocking leaves nothing behind
	const quitter = await holder(t, 'plf', f).held();
	quitter.send('exit');
	await quitter.exited;
	assert.strictEqual(fs.existsSync(`${f}.lock`), false);
	// a live holder is never stale, however small stale is
	const live = await holder(t, 'plf', f).held();
	await assert.rejects(plf.lock(f, { stale: 2000 }), { code: 'ELOCKED' });
	assert.strictEqual(await plf.check(f, { stale: 1 }), true);
	live.send('release');
	await live.line();
});

test('plf: onCompromised is called when the lock is lost (released behind its back)', async (t) => {
	const { f } = file(t);
	let compromised = null;
	const release = await plf.lock(f, { update: 1000, onCompromised: (e) => { compromised = e; } });
	const { token } = JSON.parse(fs.readFileSync(`${f}.lock/owner`, 'utf8'));
	new hf.Lock(`${f}.lock`).adopt(token).release();
	const child = await holder(t, 'plf', f).held(); // someone else has it now
	await until(() => compromised, 'onCompromised');
	assert.strictEqual(compromised.code, 'ECOMPROMISED');
	assert.strictEqual(compromised.file, f);
	assert.strictEqual(compromised.holder.pid, child.pid);
	await assert.rejects(release(), { code: 'ERELEASED' });
	assert.strictEqual(hf.Lock.status(`${f}.lock`).pid, child.pid, 'the new holder keeps it');
});

test('plf: onCompromised is called when the lock is reaped (a holder past maxHold)', async (t) => {
	const { f } = file(t);
	let compromised = null;
	const release = await plf.lock(f, { maxHold: 1, update: 1000, onCompromised: (e) => { compromised = e; } });
	// another judge with a 1 ms window reaps the leaked holder
	const thief = new hf.Lock(`${f}.lock`, { stale: 1 });
	await until(() => { try { thief.acquireSync(); return true; } catch { return false; } }, 'reap');
	await until(() => compromised, 'onCompromised');
	assert.strictEqual(compromised.code, 'ECOMPROMISED');
	assert.strictEqual(compromised.holder.pid, process.pid);
	await assert.rejects(release(), { code: 'ERELEASED' });
	thief.release();
});

test('plf: the default onCompromised throws (an uncaught ECOMPROMISED)', async (t) => {
	const { f } = file(t);
	const errors = [];
	const listeners = process.listeners('uncaughtException');
	process.removeAllListeners('uncaughtException');
	process.on('uncaughtException', (e) => errors.push(e));
	t.after(() => {
		process.removeAllListeners('uncaughtException');
		for (const l of listeners)
			process.on('uncaughtException', l);
	});
	await plf.lock(f, { update: 1000 });
	const { token } = JSON.parse(fs.readFileSync(`${f}.lock/owner`, 'utf8'));
	new hf.Lock(`${f}.lock`).adopt(token).release();
	await until(() => errors.length, 'the throw');
	assert.strictEqual(errors[0].code, 'ECOMPROMISED');
});

test('plf: release twice is ERELEASED; unlock of a lock not held is ENOTACQUIRED', async (t) => {
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
	const r3 = await plf.lock(f);
	await plf.unlock(f);
	await assert.rejects(r3(), { code: 'ERELEASED' });
});

test('plf: realpath - links share the target\'s lock; realpath:false locks the path as given', async (t) => {
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
	// a file that does not exist: ENOENT with realpath, a lock without
	const missing = path.join(d, 'missing');
	await assert.rejects(plf.lock(missing), { code: 'ENOENT' });
	assert.throws(() => plf.checkSync(missing), { code: 'ENOENT' });
	const r3 = await plf.lock(missing, { realpath: false });
	assert.strictEqual(await plf.check(missing, { realpath: false }), true);
	await plf.unlock(missing, { realpath: false });
	assert.strictEqual(fs.existsSync(missing), false);
	await assert.rejects(r3(), { code: 'ERELEASED' });
});

test('plf: lockfilePath chooses the lock directory', async (t) => {
	const { d, f } = file(t);
	const lp = path.join(d, 'custom.lock');
	const release = await plf.lock(f, { lockfilePath: lp });
	assert.strictEqual(hf.Lock.status(lp).state, 'held');
	assert.strictEqual(fs.existsSync(`${f}.lock`), false);
	assert.strictEqual(await plf.check(f, { lockfilePath: lp }), true);
	assert.strictEqual(await plf.check(f), false);
	await release();
	assert.strictEqual(hf.Lock.status(lp).state, 'free');
});
