// Compiled with tsc --noEmit by test.sh: the declarations accept the API as
// the README shows it and reject a misuse.
import { Lock, Session, Scope, Registry, edit, editSync, HoldfastError, AbortError, codes, SLOTS_MAX } from 'holdfast';
import * as plf from 'holdfast/proper-lockfile';

async function main(): Promise<void> {
  const l = await new Lock('/tmp/x.lock', { stale: 1000 }).acquire({ wait: Infinity, signal: AbortSignal.timeout(10) });
  const fence: bigint = l.fence;
  const tok: string | null = l.token;
  l.release();
  try {
    new Lock('/tmp/x.lock').acquireSync();
  } catch (e) {
    if (e instanceof HoldfastError && e.code === 'held')
      console.log(e.holder?.pid, e.errno === codes.HF_EHELD);
    // @ts-expect-error: the code is hf_error_name's ("held"), not the C constant's name
    if (e instanceof HoldfastError && e.code === 'HF_EHELD')
      console.log(e.holder?.pid);
    if (e instanceof HoldfastError && (e.code === 'ENOENT' || e.code === 'timed_out'))
      console.log(e.path);
    if (e instanceof AbortError)
      console.log(e.code);
  }
  const r = await edit('/tmp/state.json', (s) => JSON.stringify({ n: s === null ? 0 : JSON.parse(s).n + 1 }), { encoding: 'utf8' });
  const w: boolean = r.written;
  editSync('/tmp/state.bin', (b) => (b === null ? Buffer.from('x') : Buffer.concat([b, b])));
  const s = await new Session(null, 'data').take();
  const broke: boolean = s.broke;
  s.release();
  const sc = new Scope('pod', { specs: ['/p:write:recursive'] }).registerSync();
  const g: bigint = sc.generation;
  const v = Registry.read().check('/p/x', { pod: 'pod' }).verdict;
  const release = await plf.lock('/tmp/f', { retries: { retries: 3, minTimeout: 10 }, onCompromised: (e) => console.log(e.code) });
  await release();
  const held: boolean = plf.checkSync('/tmp/f', { realpath: false });
  const rel2: () => void = plf.lockSync('/tmp/f');
  const who = plf.holderSync('/tmp/f');
  if (who) console.log(who.pid, BigInt(who.fence));
  const plfFence: bigint = plf.getLocks()['/tmp/f'].fence;
  console.log(plfFence);
  await plf.lock('/tmp/f', { fs: require('fs'), stale: false, update: false });
  rel2();
  console.log(fence, tok, w, broke, g, v, held);
  const e = new Lock('/tmp/e.lock', { backend: process.env.HOLDFAST_BACKEND, etcdUser: 'u', etcdPasswordFile: '/p', etcdCaFile: '/ca.pem', ttlMs: 5000, etcdTimeoutMs: 2000 });
  const key: string | undefined = e.query().key;
  new Session('/tmp/s', 'lane', { backend: 'etcd://127.0.0.1:2379', etcdTimeoutMs: 1000 });
  new Scope('pod', { backend: 'etcds://h:2379', etcdCaFile: '/ca.pem', ttlMs: 3000 });
  console.log(key);
  const rd = new Lock('/tmp/m.lock', { shared: true, stale: 1000 });
  const mode: 'exclusive' | 'shared' | 'slots' = rd.mode;
  new Lock('/tmp/m.lock', { slots: SLOTS_MAX, maxHold: 1000 });
  new Lock('/tmp/m.lock', { shared: false });
  const st = Lock.status('/tmp/m.lock');
  const readers: number = (st.holders ?? []).filter((h) => h.mode === 'shared' && !h.waiting).length;
  const bound: number | undefined = st.slots;
  console.log(mode, readers, bound, st.holders?.[0]?.pid);
  // @ts-expect-error: shared and slots are two modes, not one
  new Lock('/tmp/m.lock', { shared: true, slots: 2 });
  // @ts-expect-error: slots is a number
  new Lock('/tmp/m.lock', { slots: '2' });
  // @ts-expect-error: a holder's mode is one of three words
  if (st.holders?.[0]?.mode === 'read') console.log('never');
  // @ts-expect-error: a session has no lease TTL
  new Session('/tmp/s', 'lane', { ttlMs: 5000 });
  // @ts-expect-error: backend is a string
  new Lock('/tmp/e.lock', { backend: 5 });
  // @ts-expect-error: wait is a number of milliseconds
  await new Lock('/tmp/y').acquire({ wait: '5s' });
}
void main;
