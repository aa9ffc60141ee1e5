'use strict';
// The etcd backend through the binding, against an etcd of each test's own
// (support.js etcd(): stopped by pid and its directory removed afterwards),
// the other holder a child process (holder.js) or the CLI ($HOLDFAST_BIN).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('..');
const { tmpdir, holder, etcd, freePort } = require('./support');

function cli(...args) {
	assert.ok(process.env.HOLDFAST_BIN, 'HOLDFAST_BIN (bindings/node/test.sh sets it)');
	const r = spawnSync(process.env.HOLDFAST_BIN, args, { encoding: 'utf8', timeout: 60000 });
	return { rc: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
}

test('etcd lock: held by another process, refused naming it; released, taken with a greater fence', async (t) => {
	const e = await etcd(t);
	const p = path.join(tmpdir(t), 'deploy.lock');
	const child = holder(t, 'lock', p, { env: { HF_TEST_BACKEND: e.uri } });
	const [word, pid, fence] = (await child.line()).split(' ');
	assert.strictEqual(word, 'held');
	assert.strictEqual(Number(pid), child.pid);
	const l = new hf.Lock(p, { backend: e.uri, ttlMs: 3000, etcdTimeoutMs: 5000 });
	for (const attempt of [() => l.acquireSync(), () => l.acquire()]) {
		await assert.rejects(async () => attempt(), (err) => {
			assert.ok(err instanceof hf.HoldfastError);
			assert.strictEqual(err.code, 'held');
			assert.strictEqual(err.holder.pid, child.pid);
			assert.strictEqual(err.holder.backend, 'etcd');
			assert.match(err.message, new RegExp(`held by pid ${child.pid}\\b`));
			return true;
		});
	}
	assert.strictEqual(fs.existsSync(p), false, 'nothing on the file system');
	const st = l.query();
	assert.strictEqual(st.state, 'held');
	assert.strictEqual(st.pid, child.pid);
	assert.ok(st.key.endsWith('/deploy.lock'), st.key);
	// the CLI sees the same holder
	const c = cli('lock', 'acquire', '-n', p, '--pid', String(process.pid), '--backend', e.uri);
	assert.strictEqual(c.rc, 1, c.err);
	assert.match(c.err, new RegExp(`pid ${child.pid} \\(node\\)`));

	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	await l.acquire();
	assert.ok(l.fence > BigInt(fence), `fence ${l.fence} after ${fence}`);
	assert.strictEqual(l.holder.ttl_ms, 3000);
	assert.strictEqual(l.holder.pid, process.pid);
	l.release();
	assert.strictEqual(l.query().state, 'free');
	l.close();
});

test('etcd session: one lane at a time, named in the refusal', async (t) => {
	const e = await etcd(t);
	const f = path.join(tmpdir(t), '.session.lock');
	const child = await holder(t, 'session', f, 'alpha', { env: { HF_TEST_BACKEND: e.uri } }).held();
	const s = new hf.Session(f, 'beta', { backend: e.uri });
	await assert.rejects(s.take(), (err) => {
		assert.strictEqual(err.code, 'held');
		assert.strictEqual(err.holder.lane, 'alpha');
		assert.strictEqual(err.holder.pid, child.pid);
		return true;
	});
	assert.strictEqual(fs.existsSync(f), false, 'the session lives in etcd');
	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	await s.take();
	assert.strictEqual(s.holder.lane, 'beta');
	s.release();
	s.close();
});

test('etcd scope: an overlapping write scope conflicts, naming the pod', async (t) => {
	const e = await etcd(t);
	const d = tmpdir(t);
	fs.mkdirSync(path.join(d, 'src', 'lib'), { recursive: true });
	const child = await holder(t, 'scope', '-', `${d}/src:write:recursive`, { env: { HF_TEST_BACKEND: e.uri } }).held();
	const s = new hf.Scope('two', { backend: e.uri, ttlMs: 5000, specs: [`${d}/src/lib:write`] });
	await assert.rejects(s.register(), (err) => {
		assert.strictEqual(err.code, 'conflict');
		assert.strictEqual(err.holder.name, `child-${child.pid}`);
		assert.match(err.message, new RegExp(`child-${child.pid}`));
		return true;
	});
	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	s.registerSync();
	assert.ok(s.generation > 0n);
	s.release();
	s.close();
});

test('etcd unreachable: EIO naming the endpoint, within the timeout', async (t) => {
	const port = await freePort(); // closed: nobody listens
	const uri = `etcd://127.0.0.1:${port}`;
	const d = tmpdir(t);
	const t0 = process.hrtime.bigint();
	const l = new hf.Lock(path.join(d, 'x.lock'), { backend: uri, etcdTimeoutMs: 2000 });
	await assert.rejects(l.acquire(), (err) => {
		assert.ok(err instanceof hf.HoldfastError);
		assert.strictEqual(err.code, 'EIO');
		assert.strictEqual(err.errno, -5);
		assert.ok(err.message.includes(`127.0.0.1:${port}`), err.message);
		return true;
	});
	// bounded (2 s timeout; a generous margin for a loaded machine)
	assert.ok(process.hrtime.bigint() - t0 < 30_000_000_000n);
	const s = new hf.Session(path.join(d, 's.lock'), 'l', { backend: uri, etcdTimeoutMs: 2000 });
	assert.throws(() => s.takeSync(), (err) => err.code === 'EIO' && err.message.includes(`127.0.0.1:${port}`));
	const sc = new hf.Scope('p', { backend: uri, specs: [`${d}:write`] });
	assert.throws(() => sc.registerSync(), (err) => err.code === 'EIO' && err.message.includes(`127.0.0.1:${port}`));
	[l, s, sc].forEach((h) => h.close());
});

test('backend: not a backend URI is refused naming it; "file" is the file system', (t) => {
	const d = tmpdir(t);
	assert.throws(() => new hf.Lock(path.join(d, 'a'), { backend: 'zookeeper://h:1' }),
		(err) => err.code === 'EINVAL' && err.message.includes('backend zookeeper://h:1'));
	assert.throws(() => new hf.Lock(path.join(d, 'a'), { backend: 42 }), TypeError);
	const l = new hf.Lock(path.join(d, 'b'), { backend: 'file' }).acquireSync();
	assert.ok(fs.statSync(path.join(d, 'b')).isDirectory());
	l.close();
});

test('the library does not read HOLDFAST_BACKEND: a lock without backend is on the file system', async (t) => {
	const p = path.join(tmpdir(t), 'env.lock');
	const uri = `etcd://127.0.0.1:${await freePort()}`;
	const child = await holder(t, 'lock', p, { env: { HOLDFAST_BACKEND: uri } }).held();
	assert.ok(fs.statSync(p).isDirectory());
	assert.strictEqual(hf.Lock.status(p).pid, child.pid);
});
