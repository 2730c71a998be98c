import { resolve } from 'node:path';
import { ConfigError } from '../config/error.ts';
import { storageLocation } from '../config/storage.ts';
import type { StorageLocation } from '../storage/types.ts';
import { parseDuration } from '../util/timestamp.ts';

// The worker's own settings, from the environment: schedules (cron, UTC), concurrency, the Redis
// key prefix, the staging directory, the shutdown grace and whether to pass at start.

export interface WorkerSettings {
  /** BullMQ key prefix: several deployments (or tests) can share one Redis. */
  prefix: string;
  /** Cron patterns, evaluated in UTC (six fields for seconds), or `continuous`; null: not scheduled. */
  schedules: { runs: string | null; catalog: string | null; reconcile: string | null };
  /** Fetch jobs one process runs at once. */
  fetchConcurrency: number;
  /** Runs per fetch job. */
  fetchChunk: number;
  /** Where fetchers leave details for the writer: a folder (a shared volume across machines) or a bucket. */
  staging: StorageLocation;
  /** How long SIGTERM waits for work in flight before handing it back. */
  graceMs: number;
  /** Queue a runs pass and a catalog snapshot at start, rather than waiting for the first tick. */
  passAtStart: boolean;
  /** How long the job of a worker that died (SIGKILL, lost machine) waits before another takes it up. */
  takeoverMs: number;
}

export const DEFAULT_GRACE_MS = 25_000;
export const DEFAULT_TAKEOVER_MS = 60_000;
const MIN_TAKEOVER_MS = 3_000;

type Env = Readonly<Record<string, string | undefined>>;

function value(env: Env, name: string): string | null {
  const v = env[name]?.trim();
  return v ? v : null;
}

/** A schedule of passes back to back: the next is queued this long after the last one started. */
export const CONTINUOUS = 'continuous';
export const CONTINUOUS_EVERY_MS = 5_000;
/** The catalog snapshot's default schedule: every this many minutes. */
export const CATALOG_EVERY_MINUTES = 3;

function schedule(env: Env, name: string, fallback: string): string | null {
  const v = value(env, name) ?? fallback;
  if (v === 'off') return null;
  if (v === CONTINUOUS) return v;
  const fields = v.split(/\s+/);
  if (fields.length < 5 || fields.length > 6)
    throw new ConfigError(name, `must be a cron pattern of five or six fields (UTC), continuous, or off; got "${v}"`);
  return v;
}

function positiveInt(env: Env, name: string, fallback: number): number {
  const v = value(env, name);
  if (v === null) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(name, `must be a positive integer; got "${v}"`);
  return n;
}

/**
 * RUNSYNC_SHUTDOWN_GRACE in milliseconds: how long a process may take to stop after SIGTERM or
 * SIGINT. Throws ConfigError for a bad value.
 */
export function shutdownGraceMs(env: Env): number {
  const grace = value(env, 'RUNSYNC_SHUTDOWN_GRACE');
  const graceUs = grace === null ? DEFAULT_GRACE_MS * 1000 : parseDuration(grace);
  if (graceUs === null || graceUs <= 0)
    throw new ConfigError('RUNSYNC_SHUTDOWN_GRACE', `must be a duration such as 25s; got "${grace}"`);
  return Math.max(1, Math.round(graceUs / 1000));
}

function takeoverMs(env: Env): number {
  const v = value(env, 'RUNSYNC_TAKEOVER_AFTER');
  if (v === null) return DEFAULT_TAKEOVER_MS;
  const us = parseDuration(v);
  if (us === null || us < MIN_TAKEOVER_MS * 1000)
    throw new ConfigError('RUNSYNC_TAKEOVER_AFTER', `must be a duration of at least 3s, such as 60s; got "${v}"`);
  return Math.round(us / 1000);
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const v = value(env, name)?.toLowerCase() ?? null;
  if (v === null) return fallback;
  if (v === 'on' || v === 'true' || v === '1') return true;
  if (v === 'off' || v === 'false' || v === '0') return false;
  throw new ConfigError(name, `must be on or off; got "${v}"`);
}

/** RUNSYNC_STAGING_URL, or the older RUNSYNC_STAGING_DIR (a folder only). */
function staging(env: Env, warehouseDir: string): StorageLocation {
  const url = value(env, 'RUNSYNC_STAGING_URL');
  const dir = value(env, 'RUNSYNC_STAGING_DIR');
  if (url !== null && dir !== null)
    throw new ConfigError('RUNSYNC_STAGING_URL', 'is set together with RUNSYNC_STAGING_DIR; set only one');
  if (dir !== null) return { kind: 'folder', dir: resolve(dir) };
  return storageLocation(url, 'RUNSYNC_STAGING_URL', `${warehouseDir}/staging`, process.cwd());
}

export function workerSettings(env: Env, warehouseDir: string): WorkerSettings {
  const prefix = value(env, 'RUNSYNC_QUEUE_PREFIX') ?? 'runsync';
  if (!/^[\w.-]{1,64}$/.test(prefix))
    throw new ConfigError('RUNSYNC_QUEUE_PREFIX', 'may hold only letters, digits, dots, dashes and underscores');
  return {
    prefix,
    schedules: {
      runs: schedule(env, 'RUNSYNC_SCHEDULE_RUNS', '*/5 * * * *'),
      catalog: schedule(env, 'RUNSYNC_SCHEDULE_CATALOG', `*/${CATALOG_EVERY_MINUTES} * * * *`),
      reconcile: schedule(env, 'RUNSYNC_SCHEDULE_RECONCILE', 'off'),
    },
    fetchConcurrency: positiveInt(env, 'RUNSYNC_FETCH_CONCURRENCY', 4),
    fetchChunk: positiveInt(env, 'RUNSYNC_FETCH_CHUNK', 10),
    staging: staging(env, warehouseDir),
    graceMs: shutdownGraceMs(env),
    passAtStart: onOff(env, 'RUNSYNC_PASS_AT_START', true),
    takeoverMs: takeoverMs(env),
  };
}
