'use strict';
// docs/outcomes.md, the table of every outcome in every language, against
// this binding: each row's rc gives a HoldfastError whose code is the row's
// Node code (the same string as the JSON error and the library's name), the
// HF_E* constants in `codes` are the table's values, and every constant has
// its row.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const hf = require('..');

const TABLE = path.join(__dirname, '..', '..', '..', 'docs', 'outcomes.md');

function rows() {
	const out = [];
	for (const line of fs.readFileSync(TABLE, 'utf8').split('\n')) {
		if (!line.startsWith('| `'))
			continue;
		const cells = line.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
		assert.strictEqual(cells.length, 8, line);
		const q = (c) => (c.match(/`([^`]*)`/) || [])[1];
		const rc = Number(cells[1].replace(/`[^`]*`/g, '').trim().split(/\s+/)[0]);
		out.push({ name: q(cells[0]), symbol: q(cells[1]), rc, json: q(cells[3]), node: q(cells[4]),
			meaning: cells[7] });
	}
	assert.ok(out.length > 10, `no table in ${TABLE}`);
	return out;
}

test('outcomes: every row of docs/outcomes.md is what the binding gives', () => {
	for (const r of rows()) {
		assert.ok(Number.isInteger(r.rc) && r.rc < 0, `row ${r.name}: rc ${r.rc}`);
		const e = new hf.HoldfastError(r.rc, { op: 'acquire', path: '/p' });
		assert.strictEqual(e.code, r.node, `rc ${r.rc}: err.code ${e.code}, the table says ${r.node}`);
		assert.strictEqual(e.errno, r.rc);
		assert.strictEqual(hf.codeOf(r.rc), r.node);
		assert.strictEqual(hf.errorName(r.rc), r.name);
		assert.strictEqual(r.node, r.json, `row ${r.name}: Node's code is the JSON error`);
		if (r.symbol.startsWith('HF_E'))
			assert.strictEqual(hf.codes[r.symbol], r.rc, `codes.${r.symbol}`);
		if (r.meaning.includes('`ABORT_ERR`')) {
			const a = new hf.AbortError();
			assert.strictEqual(a.code, 'ABORT_ERR');
			assert.strictEqual(a.errno, r.rc);
		}
	}
});

test('outcomes: every HF_E* constant has its row', () => {
	const table = rows();
	for (const [sym, rc] of Object.entries(hf.codes)) {
		const mine = table.filter((r) => r.symbol === sym);
		assert.strictEqual(mine.length, 1, `${sym} has ${mine.length} rows in docs/outcomes.md`);
		assert.strictEqual(mine[0].rc, rc);
	}
});
