'use strict';
// support.js - what the tests share: temporary directories removed after
// each test, and child holders (holder.js) driven through pipes, each with a
// bounded wait for its answers and killed by pid if a test leaves it.
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

// A test's end, pass or fail, in one t.after hook: first its child processes
// killed by pid and reaped (a waiting child may still write in the test's
// directory), then the handles it holds in this process released, then its
// directories removed. Every step runs even when one before it threw (in
// node:test a hook that throws skips the hooks after it: a child left alive
// keeps the runner waiting for ever); the errors are thrown at the end.
const ends = new WeakMap();
function ending(t) {
	let e = ends.get(t);
	if (e)
		return e;
	e = { children: [], handles: [], dirs: [] };
	ends.set(t, e);
	t.after(async () => {
		const errors = [];
		for (const step of [...e.children, ...e.handles, ...e.dirs]) {
			try {
				await step();
			} catch (err) {
				errors.push(err);
			}
		}
		if (errors.length === 1)
			throw errors[0];
		if (errors.length)
			throw new AggregateError(errors, `${errors.length} errors at the test's end`);
	});
	return e;
}

function tmpdir(t) {
	const d = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-node-test-'));
	ending(t).dirs.push(() => fs.rmSync(d, { recursive: true, force: true }));
	return d;
}

// h (a Lock, Session or Scope of this process), released at the test's end
// if it still holds then.
function own(t, h) {
	ending(t).handles.push(() => {
		if (h.held)
			h.release();
	});
	return h;
}

// A child running holder.js KIND ...ARGS [{ env }]; await child.line() for its next
// line of output (rejects after 30 s or when it exits first).
function holder(t, ...args) {
	const env = args.length && typeof args[args.length - 1] === 'object' ? args.pop().env : undefined;
	const cp = spawn(process.execPath, [path.join(__dirname, 'holder.js'), ...args],
		{ stdio: ['pipe', 'pipe', 'inherit'], env: env ? { ...process.env, ...env } : process.env });
	const lines = [];
	const waiters = [];
	let ended = false;
	const rl = readline.createInterface({ input: cp.stdout });
	rl.on('line', (l) => (waiters.length ? waiters.shift().resolve(l) : lines.push(l)));
	const exited = new Promise((resolve) => {
		const end = (code, sig) => {
			if (ended)
				return;
			ended = true;
			for (const w of waiters.splice(0))
				w.reject(new Error(`holder ${args.join(' ')} exited (${code ?? sig})`));
			resolve({ code, signal: sig });
		};
		cp.on('exit', end);
		cp.on('error', (err) => end(err.code, null)); // not started: no exit event
	});
	cp.stdin.on('error', () => {}); // EPIPE: a command to a child that died
	const child = {
		pid: cp.pid,
		exited,
		line() {
			if (lines.length)
				return Promise.resolve(lines.shift());
			if (ended)
				return Promise.reject(new Error('holder exited'));
			return new Promise((resolve, reject) => {
				const timer = setTimeout(() => reject(new Error('holder: no answer within 30 s')), 30000);
				waiters.push({
					resolve: (l) => { clearTimeout(timer); resolve(l); },
					reject: (e) => { clearTimeout(timer); reject(e); },
				});
			});
		},
		send(cmd) { cp.stdin.write(cmd + '\n'); },
		async held() {
			const l = await child.line();
			if (!l.startsWith('held '))
				throw new Error(`holder ${args.join(' ')}: ${l}`);
			return child;
		},
		// read, write, slot: its "waiting PID" (refused by PID's hold, it now
		// waits for as long as it takes): resolves to that pid.
		async refused() {
			const l = await child.line();
			const m = /^waiting (\d+)$/.exec(l);
			if (!m)
				throw new Error(`holder ${args.join(' ')}: ${l} (not waiting)`);
			return Number(m[1]);
		},
	};
	ending(t).children.push(async () => {
		if (!ended) {
			// by its pid, through the handle: no signal once libuv reaped it
			// (its exit event may still be on the way), none to a pid reused
			cp.kill('SIGKILL');
			await exited;
		}
		cp.stdin.destroy();
	});
	return child;
}

// Resolves once pred() is true, asking again every 5 ms (bounded: 30 s on
// the monotonic clock).
async function until(pred, what) {
	const t0 = process.hrtime.bigint();
	while (!pred()) {
		if (process.hrtime.bigint() - t0 > 30000000000n)
			throw new Error(`not within 30 s: ${what}`);
		await new Promise((r) => setTimeout(r, 5));
	}
}

// A loopback TCP port nobody listens on now (the kernel's choice).
function freePort() {
	const net = require('net');
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

function healthy(port) {
	const http = require('http');
	return new Promise((resolve) => {
		const req = http.get({ host: '127.0.0.1', port, path: '/health', timeout: 2000 }, (res) => {
			let body = '';
			res.on('data', (c) => (body += c));
			res.on('end', () => resolve(body.includes('"health":"true"')));
		});
		req.on('timeout', () => req.destroy());
		req.on('error', () => resolve(false));
	});
}

// An etcd of the test's own (Debian's etcd): free loopback ports, its data
// in a temporary directory; ready when /health says so (bounded: 60 s on the
// monotonic clock).
// The test's end kills it by pid and removes the directory, also when the
// test failed; setpriv --pdeathsig kills it should this process die first.
async function etcd(t) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-node-etcd-'));
	const [port, peer] = [await freePort(), await freePort()];
	const client = `http://127.0.0.1:${port}`;
	const peerUrl = `http://127.0.0.1:${peer}`;
	const log = fs.openSync(path.join(dir, 'log'), 'w');
	const cp = spawn('setpriv', ['--pdeathsig', 'KILL', '--', 'etcd', '--name', 't',
		'--data-dir', path.join(dir, 'data'),
		'--listen-client-urls', client, '--advertise-client-urls', client,
		'--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
		'--initial-cluster', `t=${peerUrl}`], { stdio: ['ignore', log, log] });
	fs.closeSync(log);
	let exited = null;
	const gone = new Promise((resolve) => cp.on('exit', (code, sig) => {
		exited = code ?? sig;
		resolve();
	}));
	cp.on('error', () => {}); // an ENOENT shows as an exit
	const end = ending(t);
	end.children.push(async () => {
		if (exited === null) {
			cp.kill('SIGKILL');
			await gone;
		}
	});
	end.dirs.push(() => fs.rmSync(dir, { recursive: true, force: true }));
	const t0 = process.hrtime.bigint();
	while (!(await healthy(port))) {
		if (exited !== null)
			throw new Error(`etcd exited (${exited}) before it was ready: ${fs.readFileSync(path.join(dir, 'log'), 'utf8')}`);
		if (process.hrtime.bigint() - t0 > 60000000000n)
			throw new Error(`etcd on ${port} not ready within 60 s`);
		await new Promise((r) => setTimeout(r, 50));
	}
	return { uri: `etcd://127.0.0.1:${port}`, port, pid: cp.pid };
}

module.exports = { tmpdir, own, holder, until, etcd, freePort };
