'use strict';
// The binding's API as a program uses it, against real processes (holder.js).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('..');
const { tmpdir, holder } = require('./support');

test('lock: acquire and release, fences grow, the holder is our own record', async (t) => {
	const d = tmpdir(t);
	const l = new hf.Lock(path.join(d, 'L'));
	await l.acquire();
	assert.match(l.token, /^[0-9a-f]{32}$/);
	assert.strictEqual(l.held, true);
	assert.strictEqual(l.holder.pid, process.pid);
	const f1 = l.fence;
	assert.strictEqual(typeof f1, 'bigint');
	assert.ok(l.fd >= 0);
	assert.strictEqual(hf.Lock.status(l.path).state, 'held');
	l.release();
	assert.strictEqual(l.held, false);
	assert.strictEqual(hf.Lock.status(l.path).state, 'free');
	l.acquireSync();
	assert.ok(l.fence > f1);
	assert.strictEqual(l.check(), true);
	l.close();
	assert.strictEqual(hf.Lock.status(l.path).state, 'free', 'close() releases what the handle holds');
});

test('lock: a held lock\'s error names the holder (code, errno, holder record)', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const child = await holder(t, 'lock', p).held();
	const l = new hf.Lock(p);
	for (const attempt of [() => l.acquireSync(), () => l.acquire()]) {
		await assert.rejects(async () => attempt(), (e) => {
			assert.ok(e instanceof hf.HoldfastError);
			assert.ok(e instanceof Error);
			assert.strictEqual(e.code, 'held');
			assert.strictEqual(e.errno, hf.codes.HF_EHELD);
			assert.strictEqual(e.path, p);
			assert.strictEqual(e.holder.pid, child.pid);
			assert.strictEqual(e.holder.comm, 'node');
			assert.ok(e.holder.host);
			assert.match(e.message, new RegExp(`${p}: held by another \\(held by pid ${child.pid} on `));
			return true;
		});
	}
	assert.strictEqual(hf.Lock.status(p).pid, child.pid);
	child.send('release');
	assert.strictEqual(await child.line(), 'released');
	l.acquireSync();
	l.release();
});

test('lock: a wait does not block the event loop (a timer keeps firing and releases the holder)', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const child = await holder(t, 'lock', p).held();
	const l = new hf.Lock(p);
	let ticks = 0;
	let resolved = false;
	// The holder is told to release only from the 5th tick of a timer on this
	// event loop: were the wait blocking the loop, it would time out instead.
	const iv = setInterval(() => {
		if (++ticks === 5)
			child.send('release');
	}, 1);
	t.after(() => clearInterval(iv));
	const waiting = l.acquire({ wait: 60000 }).then(() => { resolved = true; });
	assert.strictEqual(resolved, false);
	await waiting;
	clearInterval(iv);
	assert.ok(ticks >= 5, `the timer fired ${ticks} times during the wait`);
	assert.strictEqual(l.holder.pid, process.pid);
	l.release();
});

test('lock: an AbortSignal ends a wait with an AbortError; the handle is usable again', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const child = await holder(t, 'lock', p).held();
	const l = new hf.Lock(p);
	const ac = new AbortController();
	const reason = new Error('stop');
	const waiting = l.acquire({ wait: Infinity, signal: ac.signal });
	// the handle is busy while its wait runs on the pool
	assert.throws(() => l.acquireSync(), (e) => e.code === 'EBUSY');
	setImmediate(() => ac.abort(reason));
	await assert.rejects(waiting, (e) => {
		assert.strictEqual(e.name, 'AbortError');
		assert.strictEqual(e.code, 'ABORT_ERR');
		assert.strictEqual(e.cause, reason);
		return true;
	});
	// an already aborted signal rejects at once, without trying
	await assert.rejects(l.acquire({ wait: Infinity, signal: ac.signal }), { name: 'AbortError' });
	// and the handle works after the cancelled wait
	assert.throws(() => l.acquireSync(), { code: 'held' });
	const t2 = AbortSignal.timeout(50);
	await assert.rejects(l.acquire({ wait: Infinity, signal: t2 }), { name: 'AbortError' });
	child.send('release');
	await child.line();
	await l.acquire({ wait: 60000, signal: new AbortController().signal });
	l.release();
});

test('lock: acquireSync of a lock this program holds throws EDEADLK at once, naming it (never blocks the loop)', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const a = new hf.Lock(p), b = new hf.Lock(p);
	for (const take of [() => a.acquireSync(), () => a.acquire()]) {
		await take(); // a sync hold, then an async one (acquired on a worker thread)
		for (const wait of [-1, 60000]) { // the hold leaks only after 10 min
			const t0 = process.hrtime.bigint();
			assert.throws(() => b.acquireSync({ wait }), (e) => {
				assert.strictEqual(e.code, 'EDEADLK');
				assert.strictEqual(e.holder.pid, process.pid);
				assert.strictEqual(e.holder.token, a.token);
				return true;
			});
			assert.ok(process.hrtime.bigint() - t0 < 5000000000n, 'at once');
		}
		a.release();
		b.acquireSync({ wait: -1 });
		b.release();
	}
	// an async wait is not this thread blocked: a later release on the loop ends it
	a.acquireSync();
	const waiting = b.acquire({ wait: -1 });
	setImmediate(() => a.release());
	await waiting;
	assert.strictEqual(b.held, true);
	b.release();
});

test('lock: a bounded wait times out naming the last holder', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const child = await holder(t, 'lock', p).held();
	await assert.rejects(new hf.Lock(p).acquire({ wait: 30 }), (e) =>
		e.code === 'timed_out' && e.holder.pid === child.pid);
});

test('lock: a process that dies holding a lock releases it (SIGKILL, and exit without release)', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const killed = await holder(t, 'lock', p).held();
	const l = new hf.Lock(p);
	assert.throws(() => l.acquireSync(), { code: 'held' });
	killed.send('kill');
	assert.strictEqual((await killed.exited).signal, 'SIGKILL');
	assert.strictEqual(hf.Lock.status(p).state, 'dead');
	l.acquireSync(); // tried once: the dead holder is reaped at once
	l.release();
	const quitter = await holder(t, 'lock', p).held();
	quitter.send('exit');
	assert.strictEqual((await quitter.exited).code, 0);
	assert.strictEqual(hf.Lock.status(p).state, 'free', 'the handle was freed (released) at exit');
});

test('lock: lost when released behind its back: check() false, release not_held', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const l = new hf.Lock(p);
	l.acquireSync();
	const other = new hf.Lock(p).adopt(l.token);
	other.release();
	assert.strictEqual(l.check(), false);
	assert.throws(() => l.hold(), { code: 'lost' });
	assert.throws(() => l.release(), { code: 'not_held' });
	assert.throws(() => new hf.Lock(p).release(), { code: 'not_held' });
	assert.throws(() => new hf.Lock(`${p}.holdfast`), { code: 'EINVAL' });
});

test('edit: a locked, atomic read-modify-write; no lost update across processes', async (t) => {
	const d = tmpdir(t);
	const f = path.join(d, 'state.json');
	const kids = [1, 2, 3, 4].map(() => holder(t, 'edit', f, '25'));
	for (const k of kids)
		assert.strictEqual((await k.exited).code, 0);
	assert.deepStrictEqual(JSON.parse(fs.readFileSync(f, 'utf8')), { n: 100 });
	// undefined leaves the file as it is; the lock is released either way
	const r = await hf.edit(f, (s) => { assert.strictEqual(s, '{"n":100}'); }, { encoding: 'utf8' });
	assert.strictEqual(r.written, false);
	assert.strictEqual(hf.Lock.status(`${f}.lock`).state, 'free');
	// a Buffer in and out (no encoding); a missing file is null
	const g = path.join(d, 'new.bin');
	const r2 = hf.editSync(g, (b) => { assert.strictEqual(b, null); return Buffer.from([1, 2, 3]); });
	assert.strictEqual(r2.written, true);
	assert.deepStrictEqual([...fs.readFileSync(g)], [1, 2, 3]);
	assert.ok(fs.readdirSync(d).every((n) => !n.includes('.tmp-')), 'no temporary left');
	// a throwing function changes nothing and releases the lock
	await assert.rejects(hf.edit(g, () => { throw new Error('no'); }), /no/);
	assert.deepStrictEqual([...fs.readFileSync(g)], [1, 2, 3]);
	assert.strictEqual(hf.Lock.status(`${g}.lock`).state, 'free');
});

test('edit: refusals carry the record (a symlink is unsafe); a held lock names its holder', async (t) => {
	const d = tmpdir(t);
	const target = path.join(d, 'target');
	fs.writeFileSync(target, 'x');
	const link = path.join(d, 'link');
	fs.symlinkSync(target, link);
	await assert.rejects(hf.edit(link, () => 'y'), (e) =>
		e.code === 'unsafe' && e.record.reason === 'symlink');
	assert.strictEqual(fs.readFileSync(target, 'utf8'), 'x');
	const f = path.join(d, 'f');
	const child = await holder(t, 'lock', `${f}.lock`).held();
	assert.throws(() => hf.editSync(f, () => 'z'), (e) => e.code === 'held' && e.holder.pid === child.pid);
	const ac = new AbortController();
	const waiting = hf.edit(f, () => 'z', { wait: Infinity, signal: ac.signal });
	setImmediate(() => ac.abort());
	await assert.rejects(waiting, { name: 'AbortError' });
	assert.strictEqual(fs.existsSync(f), false);
});

test('session: one holder per file by lane; the holder is named; status', async (t) => {
	const d = tmpdir(t);
	const f = path.join(d, '.session.lock');
	const child = await holder(t, 'session', f, 'data').held();
	const s = new hf.Session(f, 'docs');
	assert.throws(() => s.takeSync(), (e) =>
		e.code === 'held' && e.holder.lane === 'data' && e.holder.pid === child.pid);
	assert.strictEqual(hf.Session.status(f).state, 'held');
	assert.throws(() => s.release(), { code: 'not_yours' });
	const ac = new AbortController();
	const waiting = s.take({ wait: Infinity, signal: ac.signal });
	setImmediate(() => ac.abort());
	await assert.rejects(waiting, { name: 'AbortError' });
	child.send('release');
	await child.line();
	await s.take({ wait: 60000 });
	assert.match(s.owner, /^[0-9a-f]+$/);
	assert.strictEqual(s.broke, false);
	assert.strictEqual(hf.Session.status(f).lane, 'docs');
	s.release();
	assert.strictEqual(hf.Session.status(f).state, 'free');
});

test('scope: conflicts name the pod; delegation inside the parent only; generation checks', async (t) => {
	const d = tmpdir(t);
	const reg = path.join(d, 'reg', 'scope.lock');
	const src = path.join(d, 'src');
	fs.mkdirSync(path.join(src, 'core'), { recursive: true });
	const child = await holder(t, 'scope', reg, `${src}:write:recursive`).held();
	const mine = new hf.Scope('agent-1', { registry: reg, specs: [`${src}/core:write`] });
	assert.throws(() => mine.registerSync(), (e) => {
		assert.strictEqual(e.code, 'conflict');
		assert.strictEqual(e.holder.name, `child-${child.pid}`);
		assert.strictEqual(e.holder.pid, child.pid);
		assert.strictEqual(e.record.request, `${fs.realpathSync(src)}/core:write`);
		return true;
	});
	// delegated by the holder: granted inside its scope ...
	const sub = new hf.Scope('agent-1', { registry: reg, from: `child-${child.pid}`,
		specs: [`${src}/core:write`] });
	sub.registerSync();
	const gen = sub.generation;
	assert.ok(gen > 0n);
	let r = hf.Registry.read(reg);
	assert.strictEqual(r.entries.length, 2);
	assert.strictEqual(r.find('agent-1').delegated_from, `child-${child.pid}`);
	assert.strictEqual(r.check(path.join(src, 'core', 'x.c'), { pod: 'agent-1' }).verdict, 'yours');
	assert.strictEqual(r.check(path.join(src, 'core', 'x.c'), { pod: `child-${child.pid}` }).verdict, 'held');
	assert.deepStrictEqual(r.effective(`child-${child.pid}`).denied.map((x) => x.name), ['agent-1']);
	r.close();
	// ... and refused outside it
	const out = new hf.Scope('agent-2', { registry: reg, from: `child-${child.pid}`,
		specs: [`${d}:write`] });
	assert.throws(() => out.registerSync(), { code: 'not_yours' });
	// a release naming another generation is refused; the right one releases
	const stale = new hf.Scope('agent-1', { registry: reg, generation: gen + 100n });
	assert.throws(() => stale.release(), { code: 'not_yours' });
	const byGen = new hf.Scope('agent-1', { registry: reg, generation: gen });
	byGen.release();
	assert.throws(() => sub.release(), { code: 'not_held' });
	// a wait for a conflicting scope ends with the holder's release
	const waiter = new hf.Scope('agent-3', { registry: reg, specs: [`${src}:write`] });
	const waiting = waiter.register({ wait: 60000 });
	child.send('release');
	await waiting;
	assert.strictEqual(hf.Registry.read(reg).check(src, { pod: 'agent-3' }).verdict, 'yours');
	waiter.release();
});

test('scope: a dead pod is reaped and its scope is free again', async (t) => {
	const d = tmpdir(t);
	const reg = path.join(d, 'scope.lock');
	const child = await holder(t, 'scope', reg, `${d}:write`).held();
	child.send('kill');
	await child.exited;
	const r = hf.Registry.reap(reg);
	assert.strictEqual(r.reaped, 1);
	assert.strictEqual(r.entries[0].name, `child-${child.pid}`);
	assert.strictEqual(hf.Registry.read(reg).entries.length, 0);
});

test('errors: the stable vocabulary of holdfast.h', () => {
	assert.strictEqual(hf.codes.HF_EHELD, -4097);
	assert.strictEqual(hf.codes.HF_ECANCELED, -4106);
	assert.strictEqual(hf.codeOf(-4101), 'timed_out');
	assert.strictEqual(hf.codeOf(-2), 'ENOENT');
	assert.strictEqual(hf.errorName(-4099), 'not_held');
	assert.strictEqual(hf.strerror(-2), 'No such file or directory');
	assert.strictEqual(hf.version(), require('../package.json').version);
	assert.throws(() => new hf.Lock('/nonexistent-dir/x/L').acquireSync(), (e) =>
		e.code === 'ENOENT' && e.errno === -2 && e.holder === undefined && !('reason' in e));
	assert.throws(() => new hf.Lock(42), TypeError);
	assert.throws(() => new hf.Lock('/tmp/x').acquireSync({ wait: 'soon' }), TypeError);
});

test('lock: a lease is held by no process: its taker exits, it stays held until renewed or released by its token', async (t) => {
	const d = tmpdir(t);
	const p = path.join(d, 'L');
	const code = 'const hf = require(process.argv[1]); const l = new hf.Lock(process.argv[2], { lease: 60000 });' +
		' l.acquireSync(); process.stdout.write(l.token); l.detach();';
	const tok = execFileSync(process.execPath, ['-e', code, path.join(__dirname, '..'), p], { encoding: 'utf8' });
	const st = hf.Lock.status(p);
	assert.strictEqual(st.state, 'held');
	assert.strictEqual(st.lease_ms, 60000);
	assert.strictEqual(st.token, tok);
	assert.throws(() => new hf.Lock(p).acquireSync(), (e) => e.code === 'held' && e.holder.lease_ms === 60000);
	const mine = new hf.Lock(p).adopt(tok);
	mine.renew();
	mine.release();
	assert.strictEqual(hf.Lock.status(p).state, 'free');
	assert.throws(() => new hf.Lock(p, { lease: 500 }), { code: 'EINVAL' });
});
