// Type declarations of holdfast (the Node binding of libholdfast).
/// <reference types="node" />

/** A record's fields, as the library names them ("pid", "host", "acquired", "fence", ...). */
export type HoldfastRecord = { [field: string]: unknown };

/** Who holds a lock or a session (an owner record). */
export interface Holder extends HoldfastRecord {
  pid?: number;
  host?: string;
  comm?: string;
  acquired?: string;
  token?: string;
  fence?: number;
  name?: string;
  lane?: string;
}

/** The HF_E* constants of holdfast.h, by name (the keys of `codes`). */
export type HoldfastConstant =
  | 'HF_EHELD' | 'HF_EUNREADABLE' | 'HF_ENOTHELD' | 'HF_ENOTYOURS' | 'HF_ETIMEDOUT'
  | 'HF_ECONFLICT' | 'HF_EUNSAFE' | 'HF_EBARRIER' | 'HF_ELOST' | 'HF_ECANCELED';

/** The names of the HF_E* outcomes (hf_error_name; the CLI's JSON `error`,
 * Python's `.code`): docs/outcomes.md. */
export type HoldfastOutcome =
  | 'held' | 'unreadable' | 'not_held' | 'not_yours' | 'timed_out'
  | 'conflict' | 'unsafe' | 'barrier' | 'lost' | 'canceled';

/** An outcome's name, or an errno symbol ("ENOENT", "EACCES", "EBUSY", ...). */
export type HoldfastCode = HoldfastOutcome | `E${string}`;

export class HoldfastError extends Error {
  name: 'HoldfastError';
  /** hf_error_name: "held", "timed_out", ..., or an errno symbol ("ENOENT"). */
  code: HoldfastCode;
  /** The library's (negative) return code: codes.HF_EHELD, -2 for ENOENT. */
  errno: number;
  /** The verb that failed: "acquire", "release", "take", "register", "edit", ... */
  op?: string;
  path?: string;
  /** Who holds it, when known. */
  holder?: Holder;
  /** Other evidence (an edit's refusal: "reason", "path", "uid", ...; a scope's conflict). */
  record?: HoldfastRecord;
}

/** A wait ended by its AbortSignal. */
export class AbortError extends Error {
  name: 'AbortError';
  code: 'ABORT_ERR';
  errno: number;
}

export interface WaitOptions {
  /** 0 (default): try once; n > 0: wait at most n ms; Infinity (or < 0): wait until it is free. */
  wait?: number;
}
export interface AsyncWaitOptions extends WaitOptions {
  /** Ends the wait with an AbortError. */
  signal?: AbortSignal;
}

/**
 * Where a handle's lock, session or scope lives, and how to reach it. The
 * library does not read HOLDFAST_BACKEND (only the CLI does): pass
 * `process.env.HOLDFAST_BACKEND` as `backend` to honour it.
 */
export interface BackendOptions {
  /** "file" (default): the file system; "etcd://HOST:PORT[,HOST:PORT...]" (http) or "etcds://..." (https): an etcd v3 cluster. */
  backend?: string;
  /** On etcd: authenticate as this user (with etcdPasswordFile). */
  etcdUser?: string;
  /** On etcd: the file whose first line is the user's password. */
  etcdPasswordFile?: string;
  /** On etcd: the CA bundle for https endpoints (default: the system's). */
  etcdCaFile?: string;
  /** On etcd: the bound of one request in ms (default 5 s); past it HoldfastError code "EIO", the message naming the endpoint. */
  etcdTimeoutMs?: number;
}
export interface LeaseOptions {
  /** On etcd: the lease's TTL in ms (default 10 s, rounded up to whole seconds). */
  ttlMs?: number;
}

/** The most slots a lock can have (holdfast.h HF_SLOTS_MAX): 1024. */
export const SLOTS_MAX: number;

/** How an acquisition shares the lock (holdfast.h HF_OPT_MODE). */
export type LockMode = 'exclusive' | 'shared' | 'slots';

/** The mode of a lock's acquisitions: `shared` or `slots`, never both (neither: exclusive). */
export type LockModeOptions =
  | {
      /** true: held beside other shared holders, never beside an exclusive one or a slot holder. */
      shared?: boolean;
      slots?: undefined;
    }
  | {
      shared?: false;
      /** One of at most this many holders (1 to 1024), each asking for the same number. */
      slots: number;
    };

export type LockOptions = LockBaseOptions & LockModeOptions;

export interface LockBaseOptions extends BackendOptions, LeaseOptions {
  /** A record-less lock's window in ms (default 60 s). */
  stale?: number;
  /** Past this a live holder is leaked and reaped (default 10 min); recorded in the owner record. */
  maxHold?: number;
  /** Whose life holds it (default: this process). */
  pid?: number;
  /** Held by no process but a lease of this many ms (1 s to 365 days): it expires that long
   * after the acquisition or the last renew() (state 'expired'). Acquire, detach(), hand the
   * token on; renew and release by it. */
  lease?: number;
}

export type LockState = 'free' | 'held' | 'dead' | 'leaked' | 'partial' | 'abandoned' | 'skew' | 'expired';
/** One holder of a lock, in its status's `holders`. */
export interface LockHolder extends Holder {
  state: LockState;
  mode: LockMode;
  /** A slot holder's bound. */
  slots?: number;
  /** true: it stands at the lock waiting for holders it cannot share with (every later acquirer queues behind it). */
  waiting?: boolean;
  age_ms?: number;
}

export interface LockStatus extends Holder {
  state: LockState;
  /** The mode of its holders (file system). */
  mode?: LockMode;
  /** The bound of slot holders. */
  slots?: number;
  /** Every holder, the one waiting at the lock first (file system). */
  holders?: LockHolder[];
  /** On etcd: "etcd", the key and the lease's TTL. */
  backend?: string;
  key?: string;
  ttl_ms?: number;
  age_ms?: number;
  claims?: number;
  in_claim?: number;
  reason?: string;
}

export class Lock {
  constructor(path: string, options?: LockOptions);
  readonly path: string;
  /** How its acquisitions share the lock (the options shared and slots). */
  readonly mode: LockMode;
  acquire(options?: AsyncWaitOptions): Promise<this>;
  acquireSync(options?: WaitOptions): this;
  release(): void;
  /** true: still ours; false: lost (reaped or released elsewhere; `holder` says who has it). */
  check(): boolean;
  /** Restart the window (a lease's length, else max-hold), same fence. */
  renew(): this;
  hold(): void;
  unhold(): void;
  adopt(token: string): this;
  detach(): number;
  readonly token: string | null;
  readonly fence: bigint;
  readonly fd: number;
  readonly holder: Holder | null;
  readonly held: boolean;
  close(): void;
  /** The state through this handle, on its backend (etcd too). */
  query(): LockStatus;
  static status(path: string): LockStatus;
}

export interface EditOptions extends WaitOptions {
  /** The directory lock (default `${file}.lock`, as `holdfast edit`). */
  lockPath?: string;
  /** Decode the contents into a string (and encode a returned string). */
  encoding?: BufferEncoding;
  stale?: number;
  maxHold?: number;
}
export interface EditResult {
  written: boolean;
  /** What the replacement could not keep ("dropped_mode", "group_dropped", ...), or null. */
  notes: HoldfastRecord | null;
  /** The fence of the lock the edit was made under. */
  fence: bigint;
}
type EditInput<O> = O extends { encoding: BufferEncoding } ? string | null : Buffer | null;
type EditOutput = string | Uint8Array | undefined;

export function edit<O extends EditOptions & { signal?: AbortSignal }>(
  file: string,
  fn: (contents: EditInput<O>) => EditOutput | Promise<EditOutput>,
  options?: O,
): Promise<EditResult>;
export function editSync<O extends EditOptions>(
  file: string,
  fn: (contents: EditInput<O>) => EditOutput,
  options?: O,
): EditResult;

export interface SessionOptions extends BackendOptions {
  /** A session's age before it is stale, in ms (default 90 min). */
  stale?: number;
  /** The owner token to record (take) or require (release). */
  owner?: string;
}
export type SessionState = 'free' | 'held' | 'stale' | 'skew' | 'unreadable';
export interface SessionStatus extends Holder {
  state: SessionState;
  age_ms?: number;
  mtime_ms?: number;
  aside?: string;
  reason?: string;
}

export class Session {
  /** file null: .session.lock at the top of the enclosing git work tree. */
  constructor(file: string | null, lane: string, options?: SessionOptions);
  readonly path: string | null;
  readonly lane: string;
  /** After a take: it broke a stale session. */
  readonly broke: boolean;
  take(options?: AsyncWaitOptions): Promise<this>;
  takeSync(options?: WaitOptions): this;
  release(): void;
  readonly owner: string | null;
  readonly holder: Holder | null;
  close(): void;
  static status(file?: string | null, options?: { stale?: number }): SessionStatus;
  static defaultPath(): string;
}

export interface ScopeOptions extends BackendOptions, LeaseOptions {
  /** "PATH:MODE[:recursive]", MODE read or write. */
  specs?: string[];
  pid?: number;
  /** The delegating parent pod. */
  from?: string;
  /** The registry file (default Registry.path()). */
  registry?: string;
  socket?: string;
  /** The bound on waiting for the registry's own lock (default 5 s). */
  lockWait?: number;
  /** Release (or renew) only this registration. */
  generation?: bigint | number;
  /** ms, 1 s to 365 days: held by a lease, no process; renew() moves its end. */
  lease?: number;
  /** Why the pod registers (at most 256 bytes, no control characters). */
  reason?: string;
}

export class Scope {
  constructor(name: string, options?: ScopeOptions);
  readonly name: string;
  add(spec: string): this;
  register(options?: AsyncWaitOptions): Promise<this>;
  registerSync(options?: WaitOptions): this;
  release(): void;
  /** Renew a leased pod by name: its lease ends lease ms (default: its own length) from now. */
  renew(lease?: number): this;
  detach(): number;
  readonly generation: bigint;
  readonly fd: number;
  /** After a failure: the conflicting pod ("name", "pid", "scope", "request", ...). */
  readonly holder: HoldfastRecord | null;
  close(): void;
}

export type ScopeVerdict = 'free' | 'held' | 'yours' | 'outside' | 'lost';
export interface RegistryEntry extends HoldfastRecord {
  name: string;
  pid: number;
  scope_allow: string[];
  delegated_from: string | null;
  generation: number;
  live?: 'alive' | 'dead';
}

export class Registry {
  readonly generation: bigint;
  readonly entries: RegistryEntry[];
  /** reap(): how many were reaped (entries are the reaped ones). */
  readonly reaped: number;
  static read(file?: string | null): Registry;
  static reap(file?: string | null): Registry;
  static path(): string;
  find(name: string): RegistryEntry | undefined;
  effective(name: string): HoldfastRecord;
  check(path: string, options?: { pod?: string; generation?: bigint | number }): HoldfastRecord & { verdict: ScopeVerdict };
  close(): void;
}

export const codes: Readonly<Record<HoldfastConstant, number>>;
export function codeOf(rc: number): HoldfastCode;
export function strerror(rc: number): string;
export function errorName(rc: number): string;
export function version(): string;
export function canonicalPath(path: string): string;
export function canonicalSpec(spec: string): string;
export function pathIdentity(canonicalPath: string): string;
