// plf_run.js - proper-lockfile doing what `holdfast run --lock` does: lock,
// run a command, wait for it, release. usage: node plf_run.js FILE CMD [ARG...]
// Needs proper-lockfile resolvable (NODE_PATH). Exit: the command's status;
// 1 when the lock is held (ELOCKED).
'use strict';
const fs = require('fs');
const { spawnSync } = require('child_process');
const lockfile = require('proper-lockfile');

const [, , file, cmd, ...args] = process.argv;
if (!fs.existsSync(file)) fs.writeFileSync(file, '');
lockfile.lock(file, { retries: 0 }).then((release) => {
  const r = spawnSync(cmd, args, { stdio: 'inherit' });
  return release().then(() => process.exit(r.status === null ? 128 : r.status));
}, (e) => {
  console.error(`plf_run: ${file}: ${e.code || e.message}`);
  process.exit(1);
});
