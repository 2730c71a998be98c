import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The environment settings each command reads, for its --help: runsync is configured from the
// environment, so a command's help that listed only its flags would hide most of what it reads.

const SETTINGS: Record<string, string> = {
  RUNSYNC_API_URL: "the API's base URL, e.g. https://support.example.com (runsync adds /api/v1)",
  RUNSYNC_API_KEY: 'the Export API key (svc_live_…); or RUNSYNC_API_KEY_FILE, a file holding it',
  RUNSYNC_WAREHOUSE_DIR: 'where runsync.duckdb, analytics.duckdb, parquet/ and raw/ live (default ./warehouse)',
  RUNSYNC_START_DATE: "the first sync's lower bound (ISO date-time; default: every run the API has)",
  RUNSYNC_LOOKBACK: 'how far each pass re-reads the recent past (default 15m)',
  RUNSYNC_OPEN_RUN_HORIZON: 'how long an unsettled run keeps being checked (default 30d)',
  RUNSYNC_RECONCILE_EVERY: 'every run of the horizon re-checked within this (default 1h; off)',
  RUNSYNC_RECONCILE_BUDGET: "the most of the key's rate rolling reconciliation may use (default 10%)",
  RUNSYNC_RATE_LIMIT: 'requests per second this key may be used for, at most (default: learned)',
  RUNSYNC_RATE_RESERVE: "share of the key's budget left to its other users (default 5%)",
  RUNSYNC_ALLOW_HTTP: 'hosts that may be reached over plain http besides this machine',
  RUNSYNC_SHARE_GROUP: 'a group that may read the Parquet tree and analytics.duckdb (default: owner only)',
  RUNSYNC_PARQUET_URL: 'where the Parquet tree goes: a folder or s3://bucket/prefix (default <warehouse>/parquet)',
  RUNSYNC_PARQUET_GRACE: 'how long files an export replaced stay in an object store for running queries (default 1h)',
  RUNSYNC_S3_ENDPOINT: 'an S3-compatible store, e.g. http://127.0.0.1:9000 (default AWS; or AWS_ENDPOINT_URL_S3)',
  RUNSYNC_S3_REGION: 'the bucket region (default AWS_REGION, else us-east-1)',
  RUNSYNC_S3_PATH_STYLE: 'path-style addressing, on or off (default on with an endpoint, off for AWS)',
  RUNSYNC_S3_CREDENTIALS_FILE: 'an AWS-format credentials file, read again when they expire (default: the AWS chain)',
  RUNSYNC_PROGRESS_EVERY: 'how often a progress line is logged during long work (default 10s; off)',
  RUNSYNC_SHUTDOWN_GRACE: 'how long SIGTERM or Ctrl-C may take to stop the process (default 25s)',
  REDIS_URL: "the workers' Redis (redis://host:6379)",
  RUNSYNC_QUEUE_PREFIX: 'key prefix of the queues in Redis (default runsync)',
  RUNSYNC_SCHEDULE_RUNS: 'cron (UTC) of the runs pass (default */5 * * * *; continuous; off)',
  RUNSYNC_SCHEDULE_CATALOG: 'cron (UTC) of the catalog snapshot (default 0 * * * *; off)',
  RUNSYNC_SCHEDULE_RECONCILE: 'cron (UTC) of whole-horizon reconciliation passes (default off)',
  RUNSYNC_PASS_AT_START: 'run a pass and a snapshot when the worker starts (default on; off)',
  RUNSYNC_FETCH_CONCURRENCY: 'detail fetch jobs one worker runs at once (default 4)',
  RUNSYNC_FETCH_CHUNK: 'runs per fetch job (default 10)',
  RUNSYNC_STAGING_URL: 'where fetchers leave details: a folder or s3://bucket/prefix (default <warehouse>/staging)',
  RUNSYNC_STAGING_DIR: 'the older name of RUNSYNC_STAGING_URL, a folder only',
  RUNSYNC_TAKEOVER_AFTER: 'how soon another worker takes up the job of a worker that died (default 60s)',
  LOG_LEVEL: 'log level: fatal, error, warn, info, debug, trace, silent (default info)',
};

const API = ['RUNSYNC_API_URL', 'RUNSYNC_API_KEY', 'RUNSYNC_RATE_LIMIT', 'RUNSYNC_RATE_RESERVE', 'RUNSYNC_ALLOW_HTTP'];
const PASS = [
  'RUNSYNC_START_DATE',
  'RUNSYNC_LOOKBACK',
  'RUNSYNC_OPEN_RUN_HORIZON',
  'RUNSYNC_RECONCILE_EVERY',
  'RUNSYNC_RECONCILE_BUDGET',
];
const WRITE = ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_SHARE_GROUP'];
const S3 = ['RUNSYNC_S3_ENDPOINT', 'RUNSYNC_S3_REGION', 'RUNSYNC_S3_PATH_STYLE', 'RUNSYNC_S3_CREDENTIALS_FILE'];
const PARQUET = ['RUNSYNC_PARQUET_URL', 'RUNSYNC_PARQUET_GRACE', ...S3];
const RUNNING = ['RUNSYNC_PROGRESS_EVERY', 'RUNSYNC_SHUTDOWN_GRACE', 'LOG_LEVEL'];

export const COMMAND_SETTINGS: Record<string, readonly string[]> = {
  demo: [...WRITE, ...RUNNING],
  sync: [...API, ...WRITE, ...PARQUET, ...PASS, ...RUNNING],
  snapshot: [...API, ...WRITE, ...RUNNING],
  backfill: [...API, ...WRITE, ...PARQUET, ...RUNNING, 'REDIS_URL', 'RUNSYNC_QUEUE_PREFIX'],
  export: [...WRITE, ...PARQUET, ...RUNNING],
  rebuild: [...WRITE, ...PARQUET, ...RUNNING],
  worker: [
    ...API,
    ...WRITE,
    ...PARQUET,
    ...PASS,
    'REDIS_URL',
    'RUNSYNC_QUEUE_PREFIX',
    'RUNSYNC_SCHEDULE_RUNS',
    'RUNSYNC_SCHEDULE_CATALOG',
    'RUNSYNC_SCHEDULE_RECONCILE',
    'RUNSYNC_PASS_AT_START',
    'RUNSYNC_FETCH_CONCURRENCY',
    'RUNSYNC_FETCH_CHUNK',
    'RUNSYNC_STAGING_URL',
    'RUNSYNC_STAGING_DIR',
    'RUNSYNC_TAKEOVER_AFTER',
    ...RUNNING,
  ],
  status: ['RUNSYNC_WAREHOUSE_DIR', 'REDIS_URL', 'RUNSYNC_QUEUE_PREFIX'],
  query: ['RUNSYNC_WAREHOUSE_DIR'],
  report: ['RUNSYNC_WAREHOUSE_DIR'],
  simulate: ['RUNSYNC_SHUTDOWN_GRACE'],
};

/** The help section listing `names`, one a line. */
export function envHelp(names: readonly string[]): string {
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.map((n) => `  ${n.padEnd(width)}  ${SETTINGS[n] ?? ''}`);
  return `\nEnvironment:\n${lines.join('\n')}`;
}

/** Every setting, for the top-level help. */
export function allSettingsHelp(): string {
  return `${envHelp(Object.keys(SETTINGS))}\n\nExit codes: 0 success, 1 the sync failed (the message says why), 2 bad usage or configuration.`;
}

/** runsync's version, from its package.json (found from the sources or from dist/). */
export function packageVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(fileURLToPath(new URL(up, import.meta.url)), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'runsync' && pkg.version) return pkg.version;
    } catch {
      // Not at this level.
    }
  }
  return 'unknown';
}
