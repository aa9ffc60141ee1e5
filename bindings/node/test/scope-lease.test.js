'use strict';
// Scope leases and reasons through the binding: options lease and reason,
// renew(); a leased pod registered by a process that exits outlives it.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('..');
const { tmpdir } = require('./support');

const BOUND_MS = 30000; // every wait is bounded by this (monotonic); never a timing assertion

// Register a leased pod from a node that exits; detach: leave it to its lease.
function registerInChild(reg, name, spec, { lease, reason, from, detach = true }) {
	const code = `const hf = require(${JSON.stringify(path.join(__dirname, '..'))});
const [reg, name, spec, lease, reason, from, detach] = process.argv.slice(1);
const s = new hf.Scope(name, { registry: reg, specs: [spec], lease: Number(lease), reason,
	from: from || undefined });
s.registerSync();
process.stdout.write(String(s.generation));
if (detach === '1') s.detach();`;
	return BigInt(execFileSync(process.execPath, ['-e', code, reg, name, spec, String(lease), reason,
		from || '', detach ? '1' : '0'], { timeout: BOUND_MS, encoding: 'utf8' }));
}

function setup(t) {
	const d = tmpdir(t);
	return { d, reg: path.join(d, 'reg', 'scope.lock') };
}

test('scope lease: a leased pod outlives the process that registered it, its reason shown', (t) => {
	const { d, reg } = setup(t);
	const gen = registerInChild(reg, 'A', `${d}:write:recursive`, { lease: 60000, reason: 'the parser' });
	const a = hf.Registry.read(reg).find('A');
	assert.ok(a, 'still registered after its process exited');
	assert.strictEqual(BigInt(a.generation), gen);
	assert.strictEqual(a.lease_ms, 60000);
	assert.strictEqual(typeof a.lease_until, 'string');
	assert.strictEqual(a.reason, 'the parser');
	const b = new hf.Scope('B', { registry: reg, specs: [`${d}/src:write`] });
	t.after(() => b.close());
	assert.throws(() => b.registerSync(), (e) => e.code === 'conflict' &&
		e.record.name === 'A' && e.record.holder_reason === 'the parser' && e.record.lease_ms === 60000);
	assert.strictEqual(hf.Registry.reap(reg).reaped, 0);
	const byName = new hf.Scope('A', { registry: reg, generation: gen });
	byName.release();
	byName.close();
	assert.strictEqual(hf.Registry.read(reg).entries.length, 0);
});

test('scope lease: an exiting process releases a leased pod it did not detach', (t) => {
	const { d, reg } = setup(t);
	registerInChild(reg, 'A', `${d}:write:recursive`, { lease: 60000, reason: 'r', detach: false });
	assert.strictEqual(hf.Registry.read(reg).find('A'), undefined);
});

test('scope lease: renew from another process moves the end; refusals', (t) => {
	const { d, reg } = setup(t);
	const gen = registerInChild(reg, 'A', `${d}:write:recursive`, { lease: 60000, reason: 'r' });
	const before = hf.Registry.read(reg).find('A').lease_left_ms;
	const s = new hf.Scope('A', { registry: reg });
	t.after(() => s.close());
	assert.strictEqual(s.renew(3600000), s);
	const a = hf.Registry.read(reg).find('A');
	assert.strictEqual(a.lease_ms, 3600000);
	assert.strictEqual(BigInt(a.generation), gen);
	assert.ok(a.lease_left_ms > before);
	const other = new hf.Scope('A', { registry: reg, generation: gen + 1n });
	t.after(() => other.close());
	assert.throws(() => other.renew(), (e) => e.code === 'not_yours');
	s.release();
	assert.throws(() => s.renew(), (e) => e.code === 'not_held');
	const p = new hf.Scope('P', { registry: reg, specs: [`${d}:write:recursive`] });
	t.after(() => p.close());
	p.registerSync();
	const q = new hf.Scope('P', { registry: reg });
	t.after(() => q.close());
	assert.throws(() => q.renew(), (e) => e.code === 'EINVAL', 'not leased');
});

test('scope lease: an expired lease is reaped and its part returned to the parent', (t) => {
	const { d, reg } = setup(t);
	fs.mkdirSync(path.join(d, 'b', 'd'), { recursive: true });
	const a = new hf.Scope('A', { registry: reg, specs: [`${d}:write:recursive`] });
	t.after(() => a.close());
	a.registerSync();
	registerInChild(reg, 'B', `${d}/b:write:recursive`, { lease: 1000, reason: 'short', from: 'A' });
	const dd = new hf.Scope('D', { registry: reg, from: 'B', specs: [`${d}/b/d:write:recursive`] });
	t.after(() => dd.close());
	dd.registerSync();
	const x = path.join(d, 'b', 'x');
	assert.strictEqual(hf.Registry.read(reg).check(x, { pod: 'A' }).verdict, 'held');
	const end = performance.now() + BOUND_MS;
	for (;;) { // B's 1 s lease ends: A gets b back, minus D's part
		hf.Registry.reap(reg).close();
		const r = hf.Registry.read(reg);
		if (r.check(x, { pod: 'A' }).verdict === 'yours') {
			assert.strictEqual(r.find('B'), undefined);
			assert.strictEqual(r.find('D').delegated_from, 'A');
			assert.strictEqual(r.check(path.join(d, 'b', 'd', 'y'), { pod: 'A' }).verdict, 'held');
			r.close();
			break;
		}
		r.close();
		assert.ok(performance.now() < end, "B's lease never ended");
		Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
	}
	const b = new hf.Scope('B', { registry: reg });
	t.after(() => b.close());
	assert.throws(() => b.renew(), (e) => e.code === 'not_held');
});

test('scope reason: bounded, hostile text refused, lease under 1 s refused', (t) => {
	const { d, reg } = setup(t);
	const spec = `${d}:write:recursive`;
	assert.throws(() => new hf.Scope('A', { registry: reg, specs: [spec], reason: 'x'.repeat(257) }),
		(e) => e.code === 'EINVAL');
	assert.throws(() => new hf.Scope('A', { registry: reg, specs: [spec], reason: 'a\x1b[2Jb' }),
		(e) => e.code === 'EINVAL');
	assert.throws(() => new hf.Scope('A', { registry: reg, specs: [spec], reason: 7 }), TypeError);
	assert.throws(() => new hf.Scope('A', { registry: reg, specs: [spec], lease: 500 }),
		(e) => e.code === 'EINVAL');
	const s = new hf.Scope('A', { registry: reg, specs: [spec], lease: 60000, reason: 'é'.repeat(128) });
	t.after(() => s.close());
	s.registerSync();
	assert.strictEqual(s.fd, -1, 'held by its lease: no liveness file');
	assert.strictEqual(hf.Registry.read(reg).find('A').reason, 'é'.repeat(128));
	s.close();
	assert.strictEqual(hf.Registry.read(reg).find('A'), undefined, 'close() releases it');
});
