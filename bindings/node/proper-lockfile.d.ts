// Type declarations of holdfast/proper-lockfile (proper-lockfile 4's API over holdfast).
import type { Holder } from './index';

export interface RetryOptions {
  retries?: number;
  factor?: number;
  minTimeout?: number;
  maxTimeout?: number;
  randomize?: boolean;
  forever?: boolean;
}

export interface LockOptions {
  /** Window for a lock directory without a complete record, in ms (min 2000, default 10000). */
  stale?: number;
  /** How often the lock is checked for compromise, in ms (min 1000, default stale/2). */
  update?: number | null;
  /** A count or a retry schedule: its total delay becomes one wait woken by the release. */
  retries?: number | RetryOptions;
  /** Resolve symbolic links (the file must exist); default true. */
  realpath?: boolean;
  /** Called (from a timer) when the lock is lost; default: throw. */
  onCompromised?: (err: Error & { code: 'ECOMPROMISED'; file: string; holder?: Holder }) => void;
  /** The lock directory (default `${file}.lock`). */
  lockfilePath?: string;
  /** holdfast: past this a live holder is leaked and reaped (default 10 min). */
  maxHold?: number;
}

export interface UnlockOptions {
  realpath?: boolean;
  lockfilePath?: string;
}

export interface CheckOptions {
  stale?: number;
  realpath?: boolean;
  lockfilePath?: string;
}

/** Errors: code "ELOCKED" (with file and holder), "ENOTACQUIRED", "ERELEASED", "ESYNC", or an errno/HF_E* code. */
export function lock(file: string, options?: LockOptions): Promise<() => Promise<void>>;
export function unlock(file: string, options?: UnlockOptions): Promise<void>;
export function check(file: string, options?: CheckOptions): Promise<boolean>;
export function lockSync(file: string, options?: LockOptions): () => void;
export function unlockSync(file: string, options?: UnlockOptions): void;
export function checkSync(file: string, options?: CheckOptions): boolean;
declare const _default: typeof lock & {
  lock: typeof lock; unlock: typeof unlock; check: typeof check;
  lockSync: typeof lockSync; unlockSync: typeof unlockSync; checkSync: typeof checkSync;
};
export default _default;
