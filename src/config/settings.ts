// Every setting runsync reads from the environment, with the group of commands it affects and
// the line its --help shows. The help of each command and the warning about a misspelled setting
// both read this table, so a setting added here is documented and recognised at once.
// runsync is configured from the environment, so a command's help that listed only its flags would
// hide most of what it reads.
// Each setting names its group, the settings a kind of command shares; a group keeps this order.
export type SettingGroup = 'api' | 'pass' | 'load' | 'write' | 'parquet' | 'running' | 'queue' | 'worker';

export const SETTINGS: Readonly<Record<string, readonly [SettingGroup, string]>> = {
  RUNSYNC_API_URL: ['api', "the API's base URL, e.g. https://support.example.com (runsync adds /api/v1)"],
  RUNSYNC_API_KEY: ['api', 'the Export API key (svc_live_…); or RUNSYNC_API_KEY_FILE, a file holding it'],
  RUNSYNC_WAREHOUSE_DIR: [
    'write',
    'where runsync.duckdb, analytics.duckdb, parquet/ and raw/ live (default ./warehouse)',
  ],
  RUNSYNC_START_DATE: ['pass', "the first sync's lower bound (ISO date-time; default: every run the API has)"],
  RUNSYNC_LOOKBACK: ['pass', 'how far each pass re-reads the recent past (default 15m)'],
  RUNSYNC_OPEN_RUN_HORIZON: ['pass', 'how long an unsettled run keeps being checked (default 30d)'],
  RUNSYNC_RECONCILE_EVERY: ['pass', 'every run of the horizon re-checked within this (default 1h; off)'],
  RUNSYNC_SCHEMA_EVOLUTION: [
    'load',
    'members the API adds become columns (on), or stay in the raw archive until a rebuild (off) (default on)',
  ],
  RUNSYNC_PII_POLICY: [
    'load',
    'what is done to personal data before it reaches disk: off, default or a policy file (default off)',
  ],
  RUNSYNC_PII_KEY: ['load', 'the secret hashed values are keyed with; or RUNSYNC_PII_KEY_FILE, a file holding it'],
  RUNSYNC_SCHEMA_CONTRACT: [
    'load',
    'evolve, freeze or discard new and changed API members, for all or per table: freeze,runs=evolve (default evolve)',
  ],
  RUNSYNC_DELETES: [
    'pass',
    'a run the API deleted is marked in runs and closed in runs_history (soft), or its history dropped too (hard) (default soft)',
  ],
  RUNSYNC_RECONCILE_BUDGET: ['pass', "the most of the key's rate rolling reconciliation may use (default 10%)"],
  RUNSYNC_RATE_LIMIT: ['api', 'requests per second this key may be used for, at most (default: learned)'],
  RUNSYNC_RATE_RESERVE: ['api', "share of the key's budget left to its other users (default 5%)"],
  RUNSYNC_ALLOW_HTTP: ['api', 'hosts that may be reached over plain http besides this machine'],
  RUNSYNC_CONNECT_TIMEOUT: ['api', 'the longest wait for a connection to the API (default 10s)'],
  RUNSYNC_HEADERS_TIMEOUT: [
    'api',
    "the longest wait for an answer to start (default 30s; less once the endpoint's answers are known)",
  ],
  RUNSYNC_BODY_TIMEOUT: ['api', 'the longest silence while an answer streams in (default 30s; less once known)'],
  RUNSYNC_REQUEST_TIMEOUT: ['api', 'the longest one request may take, from sending to its last byte (default 2m)'],
  RUNSYNC_SHARE_GROUP: ['write', 'a group that may read the Parquet tree and analytics.duckdb (default: owner only)'],
  RUNSYNC_PARQUET_URL: [
    'parquet',
    'where the Parquet tree goes: a folder or s3://bucket/prefix (default <warehouse>/parquet)',
  ],
  RUNSYNC_PARQUET_GRACE: [
    'parquet',
    'how long files an export replaced stay in an object store for running queries (default 1h)',
  ],
  RUNSYNC_S3_ENDPOINT: [
    'parquet',
    'an S3-compatible store, e.g. http://127.0.0.1:9000 (default AWS; or AWS_ENDPOINT_URL_S3)',
  ],
  RUNSYNC_S3_REGION: ['parquet', 'the bucket region (default AWS_REGION, else us-east-1)'],
  RUNSYNC_S3_PATH_STYLE: ['parquet', 'path-style addressing, on or off (default on with an endpoint, off for AWS)'],
  RUNSYNC_S3_CREDENTIALS_FILE: [
    'parquet',
    'an AWS-format credentials file, read again when they expire (default: the AWS chain)',
  ],
  RUNSYNC_PROGRESS_EVERY: ['running', 'how often a progress line is logged during long work (default 10s; off)'],
  RUNSYNC_MEMORY_LIMIT: [
    'running',
    "the process's memory budget: DuckDB's memory and threads, V8's heap, batch sizes (default 400MB)",
  ],
  RUNSYNC_SHUTDOWN_GRACE: ['running', 'how long SIGTERM or Ctrl-C may take to stop the process (default 25s)'],
  REDIS_URL: ['queue', "the workers' Redis (redis://host:6379)"],
  RUNSYNC_QUEUE_PREFIX: ['queue', 'key prefix of the queues in Redis (default runsync)'],
  RUNSYNC_SCHEDULE_RUNS: ['worker', 'cron (UTC) of the runs pass (default */5 * * * *; continuous; off)'],
  RUNSYNC_SCHEDULE_CATALOG: ['worker', 'cron (UTC) of the catalog snapshot (default */3 * * * *; off)'],
  RUNSYNC_SCHEDULE_RECONCILE: ['worker', 'cron (UTC) of whole-horizon reconciliation passes (default off)'],
  RUNSYNC_PASS_AT_START: ['worker', 'run a pass and a snapshot when the worker starts (default on; off)'],
  RUNSYNC_FETCH_CONCURRENCY: ['worker', 'detail fetch jobs one worker runs at once (default 4)'],
  RUNSYNC_FETCH_CHUNK: ['worker', 'runs per fetch job (default 10)'],
  RUNSYNC_STAGING_URL: [
    'worker',
    'where fetchers leave details: a folder or s3://bucket/prefix (default <warehouse>/staging)',
  ],
  RUNSYNC_STAGING_DIR: ['worker', 'the older name of RUNSYNC_STAGING_URL, a folder only'],
  RUNSYNC_TAKEOVER_AFTER: ['worker', 'how soon another worker takes up the job of a worker that died (default 60s)'],
  LOG_LEVEL: ['running', 'log level: fatal, error, warn, info, debug, trace, silent (default info)'],
};

/** Settings also read from a file: `<name>_FILE` holds the value (the key, kept out of the environment). */
export const FILE_VARIANTS: readonly string[] = ['RUNSYNC_API_KEY', 'RUNSYNC_PII_KEY'];

/**
 * RUNSYNC_* names that are not settings but are known: the launcher's own mark on the command it
 * starts again, and the switches of runsync's test suite and benches, which reach the commands
 * they start.
 */
export const INTERNAL_NAMES: readonly string[] = [
  'RUNSYNC_HEAP_SET',
  'RUNSYNC_QUICK_TESTS',
  'RUNSYNC_CHAOS_SEED',
  'RUNSYNC_KILL_SEED',
  'RUNSYNC_REPORT_SCREENSHOT',
  'RUNSYNC_BENCH_V8_DEFAULT_HEAP',
];
