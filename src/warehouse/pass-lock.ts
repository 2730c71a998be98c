import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processAlive } from '../util/process-alive.ts';

// One pass at a time on a warehouse. DuckDB lets only one process write the file, and loads wait
// their turn for it, but two passes side by side would each list the same windows and fetch the
// same details on one key's budget. So work that writes the warehouse first takes its pass lock,
// a folder of files naming who holds it, each touched while held:
// - a command (sync, snapshot, backfill, rebuild, export, compact) takes it whole (`exclusive`);
//   meeting another holder, it says once who holds it and waits its turn, so a second pass started
//   beside a first one fetches nothing until the first is done, and then only what changed;
// - the worker's jobs take it together (`shared`: workers of a deployment share out their work
//   through Redis already), and wait while a command holds it whole.
// A holder whose process is gone (this host), or that nobody touched for STALE_MS (a host that
// died), holds nothing.

export const PASS_LOCK_DIR = '.pass-lock';
const EXCLUSIVE = 'exclusive.json';
const TOUCH_EVERY_MS = 10_000;
export const STALE_MS = 60_000;

export interface PassHolder {
  pid: number;
  host: string;
  /** What the holder is doing: sync, backfill, rebuild, worker... */
  kind: string;
  /** Wall-clock ms since 1970. */
  since: number;
}

export class PassLockedError extends Error {
  override readonly name = 'PassLockedError';
  constructor(
    readonly dir: string,
    readonly holder: PassHolder,
  ) {
    super(`another pass holds the warehouse ${dir} (${holderText(holder)})`);
  }
}

export function holderText(h: PassHolder): string {
  const at = h.host === hostname() ? `process ${h.pid}` : `process ${h.pid} on ${h.host}`;
  const since = Math.max(0, Math.round((Date.now() - h.since) / 1000));
  return `${h.kind}, ${at}, for ${since} s`;
}

export interface PassLock {
  release(): void;
}

/** Everyone who holds the pass lock of `dir` now (stale holders are nobody). */
export function passHolders(dir: string): PassHolder[] {
  const folder = join(dir, PASS_LOCK_DIR);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const h = readHolder(join(folder, n));
    return h ? [h] : [];
  });
}

/** Takes the pass lock of `dir` whole, or throws PassLockedError naming a holder. */
export function takePassLock(dir: string, kind: string): PassLock {
  const folder = lockFolder(dir);
  const mine = whole.get(folder);
  if (mine) {
    mine.count++;
    return releaseOnce(whole, folder);
  }
  const file = join(folder, EXCLUSIVE);
  const me = holderNow(kind);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, JSON.stringify(me), { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      const holder = readHolder(file);
      if (holder) throw new PassLockedError(dir, holder);
      rmSync(file, { force: true });
    }
  }
  const other = passHolders(dir).find((h) => !same(h, me));
  if (other) {
    rmSync(file, { force: true });
    throw new PassLockedError(dir, other);
  }
  whole.set(folder, { lock: held(file, me), count: 1 });
  return releaseOnce(whole, folder);
}

/** The locks this process holds, by lock folder, and how many of its callers hold each. */
type Held = Map<string, { lock: PassLock; count: number }>;
const whole: Held = new Map();

/** Runs `fn` holding the pass lock of `dir` whole, waiting its turn for it. */
export async function withPassLock<T>(dir: string, kind: string, o: LockWait, fn: () => Promise<T>): Promise<T> {
  const lock = await waitForPassLock(dir, kind, o);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

export interface LockWait {
  signal: AbortSignal;
  /** Told once, when the lock is held by another and this one must wait. */
  onHeld: (e: PassLockedError) => void;
  everyMs?: number;
}

/** Takes the pass lock of `dir` whole, waiting while another holds it. */
export async function waitForPassLock(dir: string, kind: string, o: LockWait): Promise<PassLock> {
  let told = false;
  for (;;) {
    try {
      return takePassLock(dir, kind);
    } catch (e) {
      if (!(e instanceof PassLockedError)) throw e;
      if (!told) o.onHeld(e);
      told = true;
    }
    if (o.signal.aborted) throw o.signal.reason;
    await pause(o.everyMs ?? 1000, o.signal);
  }
}
const shared: Held = new Map();

/**
 * Takes the pass lock of `dir` together with the worker's other jobs, waiting while a command
 * holds it whole; `onHeld` is told once when it must wait.
 */
export async function takeSharedPassLock(
  dir: string,
  signal: AbortSignal,
  onHeld: (e: PassLockedError) => void,
  everyMs = 1000,
): Promise<PassLock> {
  const folder = lockFolder(dir);
  let told = false;
  for (;;) {
    const mine = shared.get(folder);
    const exclusive = readHolder(join(folder, EXCLUSIVE));
    if (!exclusive && mine) {
      mine.count++;
      return releaseOnce(shared, folder);
    }
    if (!exclusive) {
      const me = holderNow('worker');
      const file = join(folder, `shared-${me.host}-${me.pid}.json`);
      writeFileSync(file, JSON.stringify(me));
      if (!readHolder(join(folder, EXCLUSIVE))) {
        shared.set(folder, { lock: held(file, me), count: 1 });
        return releaseOnce(shared, folder);
      }
      rmSync(file, { force: true });
    }
    if (!told) onHeld(new PassLockedError(dir, exclusive ?? holderNow('sync')));
    told = true;
    if (signal.aborted) throw signal.reason;
    await pause(everyMs, signal);
  }
}

function releaseOnce(locks: Held, folder: string): PassLock {
  let released = false;
  return {
    release() {
      const mine = locks.get(folder);
      if (released || !mine) return;
      released = true;
      if (--mine.count > 0) return;
      locks.delete(folder);
      mine.lock.release();
    },
  };
}

function held(file: string, me: PassHolder): PassLock {
  const touch = setInterval(() => {
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch {
      // Gone, or the disk refused: others find it stale in time.
    }
  }, TOUCH_EVERY_MS);
  touch.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      clearInterval(touch);
      const holder = readHolder(file);
      if (holder && same(holder, me)) rmSync(file, { force: true });
    },
  };
}

function readHolder(file: string): PassHolder | null {
  let text: string;
  let touched: number;
  try {
    text = readFileSync(file, 'utf8');
    touched = statSync(file).mtimeMs;
  } catch {
    return null;
  }
  let h: PassHolder;
  try {
    h = JSON.parse(text) as PassHolder;
  } catch {
    // Half-written by a holder that died at once: nobody, unless it is being written now.
    return Date.now() - touched > TOUCH_EVERY_MS ? null : { pid: 0, host: '?', kind: 'pass', since: touched };
  }
  if ((h.host === hostname() && !processAlive(h.pid)) || Date.now() - touched > STALE_MS) return null;
  return h;
}

function holderNow(kind: string): PassHolder {
  return { pid: process.pid, host: hostname(), kind, since: Date.now() };
}

function same(a: PassHolder, b: PassHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.since === b.since;
}

function lockFolder(dir: string): string {
  const folder = join(dir, PASS_LOCK_DIR);
  mkdirSync(folder, { recursive: true });
  return folder;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
