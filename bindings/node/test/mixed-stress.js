'use strict';
// mixed-stress.js - a rolling migration under kills: processes of npm
// proper-lockfile 4.1.2 and of holdfast/proper-lockfile contend for one file
// while the driver SIGKILLs one of them now and then (a replacement is
// started); an overlap detector counts critical sections that ran at once.
// Run by `make check-plf-mixed` (part of `make check-long`).
//
//   node test/mixed-stress.js [DURATION_MS]
// Environment: PLF_WORKERS (2), FRONT_WORKERS (2), KILL_EVERY_MS (1500),
// STALE_MS (3000; update is stale/3).
// Prints one line of counts; exit 1 on any overlap, or when either tool
// never got in; 2 when it cannot run.
//
// The detector: a holder creates DIR/inside with O_EXCL, holding its pid,
// before its work and removes it after. EEXIST with a live pid in it is an
// overlap; with a dead pid it is a killed holder's leftover (replaced).
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const role = process.argv[2];

function worker(kind, file, dir, stale) {
	const lockfile = kind === 'plf' ? require('proper-lockfile') : require('../proper-lockfile.js');
	const inside = path.join(dir, 'inside');
	const say = (line) => fs.appendFileSync(path.join(dir, `log.${kind}`), `${line}\n`);
	const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
	const enter = () => {
		for (;;) {
			try {
				fs.writeFileSync(inside, String(process.pid), { flag: 'wx' });
				return;
			} catch (e) {
				if (e.code !== 'EEXIST')
					throw e;
			}
			const other = Number(fs.readFileSync(inside, 'utf8')) || 0;
			if (other && alive(other)) {
				say(`overlap ${process.pid} ${other}`);
				return;
			}
			try { fs.unlinkSync(inside); } catch { /* another took it away */ }
		}
	};
	const leave = () => {
		try {
			if (Number(fs.readFileSync(inside, 'utf8')) === process.pid)
				fs.unlinkSync(inside);
		} catch { /* another's or gone: counted at its entry */ }
	};
	const loop = async () => {
		for (;;) {
			let release;
			try {
				release = await lockfile.lock(file, {
					stale, update: Math.round(stale / 3), realpath: false,
					retries: { forever: true, minTimeout: 5, maxTimeout: 30, factor: 1.5 },
					onCompromised: (e) => say(`compromised ${process.pid} ${e.message}`),
				});
			} catch (e) {
				say(`error ${process.pid} ${e.code || e.message}`);
				continue;
			}
			enter();
			say(`enter ${process.pid}`);
			await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
			leave();
			try { await release(); } catch (e) { say(`release ${process.pid} ${e.code}`); }
			await new Promise((r) => setTimeout(r, Math.random() * 5));
		}
	};
	loop();
}

async function driver() {
	const duration = Number(process.argv[2] || 10000);
	const nPlf = Number(process.env.PLF_WORKERS || 2);
	const nFront = Number(process.env.FRONT_WORKERS || 2);
	const every = Number(process.env.KILL_EVERY_MS || 1500);
	const stale = Number(process.env.STALE_MS || 3000);
	try { require.resolve('proper-lockfile'); } catch {
		console.error('mixed-stress: npm proper-lockfile missing (bindings/node/test.sh installs it)');
		process.exit(2);
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-plf-mixed-'));
	const file = path.join(dir, 'resource');
	fs.writeFileSync(file, '');
	const kids = new Map(); // pid -> { cp, kind, exited }
	const start = (kind) => {
		const cp = spawn(process.execPath, [__filename, 'worker', kind, file, dir, String(stale)],
			{ stdio: ['ignore', 'inherit', 'inherit'] });
		const k = { cp, kind, exited: new Promise((r) => cp.on('exit', r)) };
		kids.set(cp.pid, k);
		k.exited.then(() => kids.delete(cp.pid));
	};
	for (let i = 0; i < Math.max(nPlf, nFront); i++) {
		if (i < nPlf) start('plf');
		if (i < nFront) start('front');
	}
	const kills = { plf: 0, front: 0 };
	const t0 = process.hrtime.bigint();
	const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e6;
	while (elapsed() < duration) {
		await new Promise((r) => setTimeout(r, every * (0.5 + Math.random())));
		const all = [...kids.values()];
		const victim = all[Math.floor(Math.random() * all.length)];
		victim.cp.kill('SIGKILL');
		await victim.exited;
		kills[victim.kind]++;
		start(victim.kind);
	}
	const left = [...kids.values()];
	for (const k of left)
		k.cp.kill('SIGKILL');
	await Promise.all(left.map((k) => k.exited));
	const read = (kind) => { try { return fs.readFileSync(path.join(dir, `log.${kind}`), 'utf8').split('\n'); } catch { return []; } };
	const count = (lines, word) => lines.filter((l) => l.startsWith(`${word} `)).length;
	const plf = read('plf');
	const front = read('front');
	const overlaps = count(plf, 'overlap') + count(front, 'overlap');
	const res = {
		duration_ms: Math.round(elapsed()), stale_ms: stale,
		entries: { plf: count(plf, 'enter'), front: count(front, 'enter') },
		kills, overlaps,
		compromised: { plf: count(plf, 'compromised'), front: count(front, 'compromised') },
		errors: { plf: count(plf, 'error'), front: count(front, 'error') },
	};
	console.log(`mixed-stress: ${JSON.stringify(res)}`);
	for (const l of [...plf, ...front].filter((x) => /^(overlap|compromised|error) /.test(x)).slice(0, 5))
		console.log(`  ${l}`);
	fs.rmSync(dir, { recursive: true, force: true });
	process.exit(overlaps || !res.entries.plf || !res.entries.front ? 1 : 0);
}

if (role === 'worker')
	worker(process.argv[3], process.argv[4], process.argv[5], Number(process.argv[6]));
else
	driver();
