'use strict';
// holder.js KIND PATH [ARG] - a child process of the tests that holds
// something and obeys its standard input, one command a line:
//   release  release it, print "released", exit 0
//   exit     exit 0 without releasing (finalizers run)
//   kill     SIGKILL itself while holding
// It prints "held PID" once it holds (or "failed CODE" and exits 1).
// KIND: lock (PATH a lock directory), session (PATH the file, ARG the lane),
// scope (PATH the registry, "-": the default or the backend's; ARG the spec;
// pod name "child-PID"),
// plf (PATH a file, through holdfast/proper-lockfile; ARG realpath "0"/"1"),
// npmplf (the same through npm proper-lockfile 4.1.2),
// edit (PATH a JSON file, ARG a count: that many increments of .n, then exit).
// read (PATH a lock directory: a shared holder), write (an exclusive one),
// slot (ARG the number of slots): each tries once; refused, it prints
// "waiting HOLDER-PID" (the holder the refusal named) and waits as long as
// it takes; it prints "held PID FENCE" once it holds.
// HF_TEST_BACKEND (a test's variable, not the library's): the lock's,
// session's or scope's backend ("etcd://..."); a lock then prints
// "held PID FENCE".
const hf = require('..');
const backend = process.env.HF_TEST_BACKEND ? { backend: process.env.HF_TEST_BACKEND } : {};
const readline = require('readline');

const [, , kind, p, arg] = process.argv;
let release;
let extra = '';
async function hold() {
	switch (kind) {
	case 'lock': {
		const l = new hf.Lock(p, backend);
		l.acquireSync();
		if (backend.backend)
			extra = ` ${l.fence}`;
		release = () => l.release();
		return;
	}
	case 'read':
	case 'write':
	case 'slot': {
		const mode = kind === 'read' ? { shared: true } : kind === 'slot' ? { slots: Number(arg) } : {};
		const l = new hf.Lock(p, mode);
		try {
			l.acquireSync(); // tried once first, to say so when it must wait
		} catch (e) {
			if (e.code !== 'held')
				throw e;
			// stdout, a pipe, is written synchronously: the line is out before the wait
			process.stdout.write(`waiting ${e.holder ? e.holder.pid : 0}\n`);
			l.acquireSync({ wait: Infinity });
		}
		extra = ` ${l.fence}`;
		release = () => l.release();
		return;
	}
	case 'session': {
		const s = new hf.Session(p, arg || 'child', backend);
		s.takeSync();
		release = () => s.release();
		return;
	}
	case 'scope': {
		const s = new hf.Scope(`child-${process.pid}`, { ...(p === '-' ? {} : { registry: p }), specs: [arg], ...backend });
		s.registerSync();
		release = () => s.release();
		return;
	}
	case 'plf': {
		const plf = require('../proper-lockfile');
		const r = await plf.lock(p, { realpath: arg !== '0' });
		release = () => r();
		return;
	}
	case 'npmplf': { // npm proper-lockfile 4.1.2 itself (the devDependency)
		const plf = require('proper-lockfile');
		const r = await plf.lock(p, { realpath: arg !== '0', onCompromised: () => {} });
		release = () => r();
		return;
	}
	case 'edit': {
		for (let i = 0; i < Number(arg); i++)
			await hf.edit(p, (s) => JSON.stringify({ n: (s ? JSON.parse(s).n : 0) + 1 }),
				{ encoding: 'utf8', wait: 60000 });
		process.exit(0);
	}
	}
	throw new Error(`holder.js: unknown kind ${kind}`);
}
hold().then(() => {
	process.stdout.write(`held ${process.pid}${extra}\n`);
	const rl = readline.createInterface({ input: process.stdin });
	rl.on('line', async (line) => {
		if (line === 'release') {
			await release();
			process.stdout.write('released\n');
			process.exit(0);
		} else if (line === 'exit') {
			process.exit(0);
		} else if (line === 'kill') {
			process.kill(process.pid, 'SIGKILL');
		}
	});
}, (e) => {
	process.stdout.write(`failed ${e.code || e.message}\n`);
	process.exit(1);
});
