'use strict';
// Shared and slot holders (the options shared and slots; holdfast.h
// HF_OPT_MODE, HF_OPT_SLOTS) against child processes (holder.js read, write,
// slot). A child that must wait says so on its stdout ("waiting PID": refused
// by PID's hold); that it then stands at the lock waiting is read in the
// lock's status (its record there, "waiting": true) every 5 ms, bounded on
// the monotonic clock (support.js until) - never a sleep instead of a look.
// Every test ends, pass or fail, with its children killed by pid and the
// locks it holds released (support.js own).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const hf = require('..');
const { tmpdir, own, holder, until } = require('./support');

// Resolves once child (a holder.js that said "waiting") stands at the lock waiting.
async function waiting(p, child) {
	await until(() => (hf.Lock.status(p).holders || []).some((h) => h.pid === child.pid && h.waiting === true),
		`pid ${child.pid} waits at ${p}`);
}

// The child's "held PID FENCE" as a promise of its fence (BigInt); entered() says whether it came.
function entry(child) {
	const e = { came: false };
	e.promise = child.line().then((l) => {
		const m = /^held (\d+) (\d+)$/.exec(l);
		if (!m)
			throw new Error(`holder ${child.pid}: ${l}`);
		e.came = true;
		return BigInt(m[2]);
	});
	e.promise.catch(() => {});
	return e;
}

test('modes: shared and slots are checked (TypeError, RangeError) and name the mode', () => {
	const d = '/nonexistent-holdfast-dir';
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { shared: true, slots: 2 }), TypeError);
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { shared: 'yes' }), TypeError);
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { slots: '2' }), TypeError);
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { slots: 1.5 }), TypeError);
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { slots: 0 }), RangeError);
	assert.throws(() => new hf.Lock(path.join(d, 'L'), { slots: hf.SLOTS_MAX + 1 }), RangeError);
	assert.strictEqual(new hf.Lock(path.join(d, 'L')).mode, 'exclusive');
	assert.strictEqual(new hf.Lock(path.join(d, 'L'), { shared: false }).mode, 'exclusive');
	assert.strictEqual(new hf.Lock(path.join(d, 'L'), { shared: true }).mode, 'shared');
	assert.strictEqual(new hf.Lock(path.join(d, 'L'), { slots: hf.SLOTS_MAX }).mode, 'slots');
	assert.strictEqual(hf.SLOTS_MAX, 1024);
});

test('modes: readers share while a writer waits; it enters after the last reader, above their fences', { timeout: 60000 }, async (t) => {
	const p = path.join(tmpdir(t), 'L');
	const r1 = own(t, new hf.Lock(p, { shared: true })).acquireSync();
	const r2 = await holder(t, 'read', p).held();
	const w = holder(t, 'write', p);
	const by = await w.refused();
	assert.ok(by === process.pid || by === r2.pid, `the writer was refused by a reader, not ${by}`);
	const got = entry(w);
	await waiting(p, w);
	r1.release();
	// r2 still reads: the writer still waits, and the status says so
	const s = hf.Lock.status(p);
	assert.ok(s.holders.some((h) => h.pid === r2.pid && h.mode === 'shared'), JSON.stringify(s));
	assert.ok(s.holders.some((h) => h.pid === w.pid && h.waiting === true), JSON.stringify(s));
	assert.strictEqual(got.came, false);
	r2.send('release');
	assert.strictEqual(await r2.line(), 'released');
	const fence = await got.promise;
	assert.ok(fence > r1.fence, `the writer's fence ${fence} is above the reader's ${r1.fence}`);
	assert.strictEqual(hf.Lock.status(p).pid, w.pid);
	w.send('release');
	assert.strictEqual(await w.line(), 'released');
});

test('modes: a reader coming after a waiting writer queues behind it', { timeout: 60000 }, async (t) => {
	const p = path.join(tmpdir(t), 'L');
	const r1 = own(t, new hf.Lock(p, { shared: true })).acquireSync();
	const w = holder(t, 'write', p);
	assert.strictEqual(await w.refused(), process.pid);
	const wgot = entry(w);
	await waiting(p, w);
	// tried once: refused, naming the waiting writer
	assert.throws(() => new hf.Lock(p, { shared: true }).acquireSync(), (e) => {
		assert.strictEqual(e.code, 'held');
		assert.strictEqual(e.holder.pid, w.pid);
		return true;
	});
	// a reader that waits gets in after the writer, not beside r1
	const r2 = holder(t, 'read', p);
	assert.strictEqual(await r2.refused(), w.pid, 'the reader was refused naming the waiting writer');
	const rgot = entry(r2);
	// its wait has begun once its staged directory (dirlock.c DA0, kept
	// while it waits) is in the state directory: the writer is at the lock,
	// r1 in its r- entry, so an n- entry is r2's (a waiting reader has no
	// record in the status)
	await until(() => fs.readdirSync(`${p}.holdfast`).some((n) => n.startsWith('n-')) || rgot.came,
		'the second reader waits');
	r1.release();
	const wf = await wgot.promise;
	assert.strictEqual(rgot.came, false, 'the reader did not pass the writer');
	w.send('release');
	assert.strictEqual(await w.line(), 'released');
	const rf = await rgot.promise;
	assert.ok(rf > wf, `the reader's fence ${rf} is above the writer's ${wf}`);
	r2.send('release');
	assert.strictEqual(await r2.line(), 'released');
});

test('modes: slots 2 admit two holders and the third waits for a place', { timeout: 60000 }, async (t) => {
	const p = path.join(tmpdir(t), 'L');
	const a = own(t, new hf.Lock(p, { slots: 2 })).acquireSync();
	const b = await holder(t, 'slot', p, '2').held();
	assert.throws(() => new hf.Lock(p, { slots: 2 }).acquireSync(), (e) => e.code === 'held');
	const c = holder(t, 'slot', p, '2');
	const by = await c.refused();
	assert.ok(by === process.pid || by === b.pid, `the third was refused by a slot holder, not ${by}`);
	const cgot = entry(c);
	await waiting(p, c);
	const s = hf.Lock.status(p);
	assert.strictEqual(s.mode, 'slots');
	assert.strictEqual(s.slots, 2);
	assert.strictEqual(cgot.came, false);
	a.release();
	await cgot.promise;
	const pids = hf.Lock.status(p).holders.map((h) => h.pid).sort();
	assert.deepStrictEqual(pids, [b.pid, c.pid].sort());
	for (const x of [b, c]) {
		x.send('release');
		assert.strictEqual(await x.line(), 'released');
	}
	assert.strictEqual(hf.Lock.status(p).state, 'free');
});

test('modes: a SIGKILLed reader frees its place at once', { timeout: 60000 }, async (t) => {
	const p = path.join(tmpdir(t), 'L');
	const r1 = own(t, new hf.Lock(p, { shared: true })).acquireSync();
	const r2 = await holder(t, 'read', p).held();
	const w = own(t, new hf.Lock(p));
	assert.throws(() => w.acquireSync(), (e) => e.code === 'held');
	r2.send('kill');
	assert.strictEqual((await r2.exited).signal, 'SIGKILL');
	assert.throws(() => w.acquireSync(), (e) => e.code === 'held' && e.holder.pid === process.pid,
		'the live reader still keeps the writer out');
	r1.release();
	w.acquireSync(); // tried once: the dead reader's place is reaped, no stale window
	assert.deepStrictEqual(hf.Lock.status(p).holders.map((h) => h.pid), [process.pid]);
	w.release();
});

test('modes: the status lists every holder with its mode', { timeout: 60000 }, async (t) => {
	const p = path.join(tmpdir(t), 'L');
	const r1 = own(t, new hf.Lock(p, { shared: true }));
	await r1.acquire();
	assert.strictEqual(r1.holder.mode, 'shared');
	const r2 = await holder(t, 'read', p).held();
	const s = hf.Lock.status(p);
	assert.strictEqual(s.state, 'held');
	assert.strictEqual(s.mode, 'shared');
	assert.strictEqual(s.holders.length, 2, JSON.stringify(s));
	assert.deepStrictEqual(s.holders.map((h) => h.pid).sort(), [process.pid, r2.pid].sort());
	for (const h of s.holders) {
		assert.strictEqual(h.mode, 'shared');
		assert.strictEqual(h.state, 'held');
		assert.match(h.token, /^[0-9a-f]{32}$/);
	}
	assert.ok(s.holders.some((h) => h.token === r1.token));
	assert.deepStrictEqual(r1.query().holders.map((h) => h.pid).sort(), [process.pid, r2.pid].sort());
	r1.release();
	r2.send('release');
	assert.strictEqual(await r2.line(), 'released');
	assert.deepStrictEqual(hf.Lock.status(p).holders, []);
});
