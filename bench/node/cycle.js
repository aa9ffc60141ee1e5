'use strict';
// cycle.js DIR CYCLES - acquire+release cycles from Node, one process, on
// the file system of DIR: holdfast sync (acquireSync/release), holdfast
// async (await acquire()/release), the proper-lockfile front
// (holdfast/proper-lockfile lock/release) and npm proper-lockfile 4
// (lock/release, realpath: false). Blocks of BLOCK cycles (100) of the four
// alternate, so noise from other processes hits all alike while each side
// runs warm, as the C benchmark's loop does; prints the median and mean of
// each one's per-cycle times, in microseconds, as "NAME MEDIAN MEAN".
// Needs HOLDFAST_NODE (bindings/node) and PLF (a proper-lockfile directory).
const fs = require('fs');
const path = require('path');
const hf = require(process.env.HOLDFAST_NODE);
const front = require(path.join(process.env.HOLDFAST_NODE, 'proper-lockfile.js'));
const plf = require(process.env.PLF);

const [, , dir, cyclesArg, blockArg] = process.argv;
const cycles = Number(cyclesArg || 2000);
const block = Number(blockArg || 100);
const lock = new hf.Lock(path.join(dir, 'L'));
const frontFile = path.join(dir, 'front');
const plfFile = path.join(dir, 'plf');
fs.writeFileSync(frontFile, '');
fs.writeFileSync(plfFile, '');

const sides = {
	sync: async () => { lock.acquireSync(); lock.release(); },
	async: async () => { await lock.acquire(); lock.release(); },
	front: async () => { const r = await front.lock(frontFile, { realpath: false }); await r(); },
	plf: async () => { const r = await plf.lock(plfFile, { realpath: false }); await r(); },
};
const names = Object.keys(sides);
const times = Object.fromEntries(names.map((n) => [n, []]));

(async () => {
	for (let i = 0; i < 50; i++) // warm up
		for (const n of names)
			await sides[n]();
	for (let i = 0; i * block < cycles; i++) {
		// rotate the order: none always runs right after another
		for (let k = 0; k < names.length; k++) {
			const n = names[(i + k) % names.length];
			for (let j = 0; j < block; j++) {
				const t0 = process.hrtime.bigint();
				await sides[n]();
				times[n].push(Number(process.hrtime.bigint() - t0) / 1000);
			}
		}
	}
	for (const n of names) {
		const a = times[n].sort((x, y) => x - y);
		const mean = a.reduce((s, x) => s + x, 0) / a.length;
		console.log(`${n} ${a[a.length >> 1].toFixed(2)} ${mean.toFixed(2)}`);
	}
	lock.close();
})().catch((e) => { console.error(e); process.exit(1); });
