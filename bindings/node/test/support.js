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

// A child running holder.js KIND ...ARGS; await child.line() for its next
// line of output (rejects after 30 s or when it exits first).
function holder(t, ...args) {
	const cp = spawn(process.execPath, [path.join(__dirname, 'holder.js'), ...args],
		{ stdio: ['pipe', 'pipe', 'inherit'] });
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

module.exports = { tmpdir, holder, until };
