// plf_contend.js - one contender of bench/peers' stale-lock steal race: npm
// proper-lockfile tries once to lock FILE (stale: STALE_MS). The round's
// FIFOs are in DIR (see race_round in run.sh): write a byte to "ready", read
// one from "go", try, append "enter PID" to DIR/log when it holds the lock,
// write a byte to "tried"; a holder then reads one from "leave", appends
// "exit PID" and releases.
// usage: node plf_contend.js FILE DIR STALE_MS   (proper-lockfile on NODE_PATH)
// Exit: 0 held it, 1 did not (ELOCKED, or another error on stderr).
'use strict';
const fs = require('fs');
const path = require('path');
const lockfile = require('proper-lockfile');

const [, , file, dir, staleMs] = process.argv;
const fifo = (name) => path.join(dir, name);
const readByte = (name) => { // blocks the whole process: before the race only
  const fd = fs.openSync(fifo(name), 'r');
  fs.readSync(fd, Buffer.alloc(1), 0, 1, null);
  fs.closeSync(fd);
};
// A holder waits for its byte off the event loop (libuv's thread pool), so
// proper-lockfile's timer keeps refreshing the lock's mtime as it would in a
// real holder.
const readByteAsync = async (name) => {
  const fh = await fs.promises.open(fifo(name), 'r');
  await fh.read(Buffer.alloc(1), 0, 1, null);
  await fh.close();
};

fs.appendFileSync(fifo('ready'), 'x');
readByte('go');
// retries 0: one try, like every contender. onCompromised: reported instead
// of the default throw (the log is the measurement).
lockfile.lock(file, {
  stale: Number(staleMs),
  retries: 0,
  onCompromised: (e) => console.error(`plf_contend ${process.pid}: compromised: ${e.code}`),
}).then((release) => {
  fs.appendFileSync(fifo('log'), `enter ${process.pid}\n`);
  fs.appendFileSync(fifo('tried'), 'x');
  return readByteAsync('leave').then(() => {
    fs.appendFileSync(fifo('log'), `exit ${process.pid}\n`);
    return release().catch(() => {});
  }).then(() => process.exit(0));
}, (e) => {
  if (e.code !== 'ELOCKED')
    console.error(`plf_contend ${process.pid}: ${file}: ${e.code || e.message}`);
  fs.appendFileSync(fifo('tried'), 'x');
  process.exit(1);
});
