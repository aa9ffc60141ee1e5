// Type declarations of holdfast/proper-lockfile (proper-lockfile 4's API and lock, holdfast's record and fence beside it).

export interface RetryOptions {
  retries?: number;
  factor?: number;
  minTimeout?: number;
  maxTimeout?: number;
  randomize?: boolean;
  forever?: boolean;
}

/** The record beside a held lock (FILE.lock.hf-record). */
export interface PlfHolder {
  token: string;
  pid: number;
  host: string;
  comm: string;
  argv: string;
  acquired: string;
  /** decimal: greater at every acquisition of this lock */
  fence: string;
  dev: number;
  ino: number;
  birth: number;
}

/** The file system calls the front makes (callback forms for the async API, *Sync for the sync API). */
export type PlfFs = Pick<typeof import('fs'),
  'realpath' | 'mkdir' | 'stat' | 'lstat' | 'utimes' | 'rmdir' | 'unlink' | 'rename' | 'readFile' | 'writeFile'> &
  Partial<typeof import('fs')>;

export interface LockOptions {
  /** A lock whose mtime is older is stale: removed and retaken, in ms (min 2000, default 10000). */
  stale?: number | false;
  /** The mtime refresh interval, in ms (min 1000, max stale/2, default stale/2). */
  update?: number | null | false;
  /** A count or a retry schedule. */
  retries?: number | RetryOptions;
  /** Resolve symbolic links (the file must exist); default true. */
  realpath?: boolean;
  /** Called (from a timer) when the lock is compromised; default: throw. */
  onCompromised?: (err: Error & { code: 'ECOMPROMISED'; file: string; lockfile: string }) => void;
  /** The lock directory (default `${file}.lock`). */
  lockfilePath?: string;
  /** Every file system call goes through it; one lacking a call is refused (EINVAL). */
  fs?: PlfFs;
}

export interface UnlockOptions {
  realpath?: boolean;
  lockfilePath?: string;
  fs?: PlfFs;
}

export interface CheckOptions {
  stale?: number | false;
  realpath?: boolean;
  lockfilePath?: string;
  fs?: PlfFs;
}

/** Errors: code "ELOCKED" (with file, lockfile and holder when the record names one), "ENOTACQUIRED", "ERELEASED", "ESYNC", or an errno/HF_E* code. */
export function lock(file: string, options?: LockOptions): Promise<() => Promise<void>>;
export function unlock(file: string, options?: UnlockOptions): Promise<void>;
export function check(file: string, options?: CheckOptions): Promise<boolean>;
export function lockSync(file: string, options?: LockOptions): () => void;
export function unlockSync(file: string, options?: UnlockOptions): void;
export function checkSync(file: string, options?: CheckOptions): boolean;
/** holdfast: the holder's record, when it describes the lock directory there now; else null. */
export function holder(file: string, options?: CheckOptions): Promise<PlfHolder | null>;
export function holderSync(file: string, options?: CheckOptions): PlfHolder | null;
/** holdfast: this process's locks, by resolved file. */
export function getLocks(): Record<string, { lockfilePath: string; fence: bigint; record: PlfHolder }>;
declare const _default: typeof lock & {
  lock: typeof lock; unlock: typeof unlock; check: typeof check;
  lockSync: typeof lockSync; unlockSync: typeof unlockSync; checkSync: typeof checkSync;
  holder: typeof holder; holderSync: typeof holderSync; getLocks: typeof getLocks;
};
export default _default;
