// bench/bindings/cycle.js DIR [CYCLES] - an acquire+release cycle from Node
// (the addon's sync calls, one handle kept), each timed with
// process.hrtime.bigint(); prints the median as bench/bindings/run.sh reads it.
'use strict';
const { Lock } = require('../../bindings/node');
const [dir, n = '2000'] = process.argv.slice(2);
const cycles = Number(n);
const lock = new Lock(`${dir}/node.lock`);
const t = new Array(cycles);
for (let i = 0; i < cycles; i++) {
  const t0 = process.hrtime.bigint();
  lock.acquireSync();
  lock.release();
  t[i] = Number(process.hrtime.bigint() - t0);
}
t.sort((a, b) => a - b);
console.log(JSON.stringify({ lang: 'node', cycles, median_ns: t[cycles >> 1] }));
