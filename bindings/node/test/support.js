'use strict';
// support.js - what the tests share: temporary directories removed after
// each test, and child holders (holder.js) driven through pipes, each with a
// bounded wait for its answers and killed by pid if a test leaves it.
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');

const children = new Set();

function tmpdir(t) {
	const d = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-node-test-'));
	t.after(() => fs.rmSync(d, { recursive: true, force: true }));
	return d;
}

// A child running holder.js KIND ...ARGS [{ env }]; await child.line() for its next
// line of output (rejects after 30 s or when it exits first).
function holder(t, ...args) {
	const env = args.length && typeof args[args.length - 1] === 'object' ? args.pop().env : undefined;
	const cp = spawn(process.execPath, [path.join(__dirname, 'holder.js'), ...args],
		{ stdio: ['pipe', 'pipe', 'inherit'], env: env ? { ...process.env, ...env } : process.env });
	children.add(cp);
	const lines = [];
	const waiters = [];
	let ended = false;
	const rl = readline.createInterface({ input: cp.stdout });
	rl.on('line', (l) => (waiters.length ? waiters.shift().resolve(l) : lines.push(l)));
	const exited = new Promise((resolve) => cp.on('exit', (code, sig) => {
		ended = true;
		children.delete(cp);
		for (const w of waiters.splice(0))
			w.reject(new Error(`holder ${args.join(' ')} exited (${code ?? sig})`));
		resolve({ code, signal: sig });
	}));
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
	};
	t.after(async () => {
		if (!ended) {
			cp.kill('SIGKILL');
			await exited;
		}
	});
	return child;
}

// Resolves once pred() is true, looking every few ms (bounded: 30 s).
async function until(pred, what) {
	const t0 = Date.now();
	while (!pred()) {
		if (Date.now() - t0 > 30000)
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
// in a temporary directory; ready when /health says so (bounded: 60 s).
// t.after() kills it by pid and removes the directory, also when the test
// failed; setpriv --pdeathsig kills it should this process die first.
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
	t.after(async () => {
		if (exited === null) {
			cp.kill('SIGKILL');
			await gone;
		}
		fs.rmSync(dir, { recursive: true, force: true });
	});
	const t0 = Date.now();
	while (!(await healthy(port))) {
		if (exited !== null)
			throw new Error(`etcd exited (${exited}) before it was ready: ${fs.readFileSync(path.join(dir, 'log'), 'utf8')}`);
		if (Date.now() - t0 > 60000)
			throw new Error(`etcd on ${port} not ready within 60 s`);
		await new Promise((r) => setTimeout(r, 50));
	}
	return { uri: `etcd://127.0.0.1:${port}`, port, pid: cp.pid };
}

module.exports = { tmpdir, holder, until, etcd, freePort };
