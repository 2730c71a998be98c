import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_RESERVE } from '../budget/rate.ts';
import type { PiiPolicy } from '../pii/types.ts';
import { CONTRACT_SETTING, ContractError, parseContract, type SchemaContract } from '../resources/contract.ts';
import type { ShareGroup } from '../util/file-share.ts';
import { createLogger, type Logger, type LoggerOptions } from '../util/logger.ts';
import type { MemoryBudget } from '../util/memory-budget.ts';
import { type Micros, parseDuration, parseTimestamp } from '../util/timestamp.ts';
import { ConfigError } from './error.ts';
import { memoryBudgetOf } from './memory.ts';
import { piiSettingsOf } from './pii.ts';
import { shareGroup } from './share.ts';
import { type StorageConfig, storageConfig } from './storage.ts';
import { DEFAULT_TIMEOUTS, type TimeoutSettings } from './timeouts.ts';
import { apiBaseUrl } from './url.ts';

// runsync's settings, read from the environment once at start into a frozen object. Anything wrong
// fails here, with one line naming the setting, so no command gets halfway before finding out.

export const KEY_PREFIX = 'svc_live_';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface ApiConfig {
  /** The API's base URL including /api/v1, without a trailing slash. */
  readonly baseUrl: string;
  /** Not enumerable: JSON.stringify and inspection of the config leave it out. */
  readonly key: string;
  /** Hosts the operator allowed over plain http (RUNSYNC_ALLOW_HTTP). */
  readonly httpHosts: readonly string[];
  /** The setting the key came from, for messages about the key. */
  readonly keySetting: 'RUNSYNC_API_KEY' | 'RUNSYNC_API_KEY_FILE';
}

export interface RunsyncConfig {
  /** Null when neither URL nor key is set and the command does not need the API. */
  readonly api: ApiConfig | null;
  readonly warehouseDir: string;
  /** RUNSYNC_START_DATE; null: the first sync starts at the beginning. */
  readonly startDate: Micros | null;
  readonly lookback: Micros;
  readonly openRunHorizon: Micros;
  /** RUNSYNC_RECONCILE_EVERY: every run of the horizon re-checked within it; null: no rolling reconciliation. */
  readonly reconcileEvery: Micros | null;
  /** RUNSYNC_RECONCILE_BUDGET: the share of the key's rate rolling reconciliation may use. */
  readonly reconcileBudget: number;
  /** RUNSYNC_DELETES: what a run the API deleted leaves in runs_history (soft: its closed states). */
  readonly deletes: DeleteMode;
  /** RUNSYNC_RATE_LIMIT, requests per second; null: learn the limit from the API. */
  readonly rateLimit: number | null;
  /** RUNSYNC_RATE_RESERVE: share of the key's budget left to its other users. */
  readonly rateReserve: number;
  readonly redisUrl: string | null;
  /** RUNSYNC_SCHEMA_EVOLUTION: new API members become columns (on), or stay in the raw archive only. */
  readonly schemaEvolution: boolean;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  /** RUNSYNC_PROGRESS_EVERY: how often long work logs a progress line; null: never. */
  readonly progressEveryMs: number | null;
  /** RUNSYNC_SHARE_GROUP: the group that may read the Parquet tree and analytics.duckdb; null: owner only. */
  readonly share: ShareGroup | null;
  /** RUNSYNC_PARQUET_URL, RUNSYNC_PARQUET_GRACE and the RUNSYNC_S3_* settings. */
  readonly storage: Omit<StorageConfig, 'secrets'>;
  /** RUNSYNC_MEMORY_LIMIT, shared out between DuckDB, V8 and the batch sizes. */
  readonly memory: MemoryBudget;
  /** RUNSYNC_PII_POLICY with RUNSYNC_PII_KEY: what is done to personal data before it reaches disk; null: off. */
  readonly pii: PiiPolicy | null;
  /** RUNSYNC_SCHEMA_CONTRACT: evolve, freeze or discard new and changed members, per resource or table. */
  readonly contract: SchemaContract;
  /** RUNSYNC_CONNECT_TIMEOUT, RUNSYNC_HEADERS_TIMEOUT, RUNSYNC_BODY_TIMEOUT, RUNSYNC_REQUEST_TIMEOUT. */
  readonly timeouts: Readonly<TimeoutSettings>;
  /** Values no log line may show. */
  readonly secrets: readonly string[];
}

export interface LoadConfigOptions {
  /** Fail unless the API URL and key are set (every command but rebuild, export, status). */
  needApi?: boolean;
  readFile?: (path: string) => string;
  cwd?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_RECONCILE_EVERY = parseDuration('1h') as Micros;
export const DEFAULT_RECONCILE_BUDGET = 0.1;

function setting(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v.trim() === '' ? null : v.trim();
}

interface KeyRead {
  key: string;
  setting: ApiConfig['keySetting'];
}

function readKey(env: Env, readFile: (path: string) => string): KeyRead | null {
  const direct = env.RUNSYNC_API_KEY;
  const file = setting(env, 'RUNSYNC_API_KEY_FILE');
  if (direct !== undefined && direct !== '' && file !== null) {
    throw new ConfigError('RUNSYNC_API_KEY', 'is set together with RUNSYNC_API_KEY_FILE; set only one');
  }
  let key: string;
  let name: ApiConfig['keySetting'];
  if (file !== null) {
    name = 'RUNSYNC_API_KEY_FILE';
    try {
      key = readFile(file);
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw new ConfigError(name, `cannot read ${file}${code ? ` (${code})` : ''}`);
    }
  } else if (direct !== undefined && direct !== '') {
    name = 'RUNSYNC_API_KEY';
    key = direct;
  } else {
    return null;
  }
  key = key.trim();
  // The key's value never appears in a message, only what is wrong with it.
  if (key === '') throw new ConfigError(name, 'holds an empty key');
  if (/\s/.test(key)) throw new ConfigError(name, 'the key contains whitespace; it must be a single svc_live_… token');
  if (!key.startsWith(KEY_PREFIX) || key.length === KEY_PREFIX.length) {
    throw new ConfigError(name, `the key must start with ${KEY_PREFIX} (an Export API key)`);
  }
  return { key, setting: name };
}

/** RUNSYNC_PROGRESS_EVERY in milliseconds; null: off. */
export function progressEvery(env: Env): number | null {
  const raw = setting(env, 'RUNSYNC_PROGRESS_EVERY');
  if (raw === null) return 10_000;
  if (raw.toLowerCase() === 'off') return null;
  const us = parseDuration(raw);
  if (us === null || us < 100_000)
    throw new ConfigError(
      'RUNSYNC_PROGRESS_EVERY',
      `must be a duration of at least 100ms, such as 10s, or off; got "${raw}"`,
    );
  return Math.round(us / 1000);
}

function duration(env: Env, name: string, fallback: Micros): Micros {
  const raw = setting(env, name);
  if (raw === null) return fallback;
  const us = parseDuration(raw);
  if (us === null || us <= 0)
    throw new ConfigError(name, `must be a positive duration such as 15m, 2h or 30d; got "${raw}"`);
  return us;
}

function requestTimeouts(env: Env): Readonly<TimeoutSettings> {
  const ms = (name: string, fallback: number) => Math.round(duration(env, name, fallback * 1000) / 1000);
  return Object.freeze({
    connectMs: ms('RUNSYNC_CONNECT_TIMEOUT', DEFAULT_TIMEOUTS.connectMs),
    headersMs: ms('RUNSYNC_HEADERS_TIMEOUT', DEFAULT_TIMEOUTS.headersMs),
    bodyMs: ms('RUNSYNC_BODY_TIMEOUT', DEFAULT_TIMEOUTS.bodyMs),
    requestMs: ms('RUNSYNC_REQUEST_TIMEOUT', DEFAULT_TIMEOUTS.requestMs),
  });
}

function startDate(env: Env): Micros | null {
  const raw = setting(env, 'RUNSYNC_START_DATE');
  if (raw === null) return null;
  const us = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z` : raw);
  if (us === null) {
    throw new ConfigError(
      'RUNSYNC_START_DATE',
      `must be an ISO date-time such as 2026-01-01T00:00:00Z or a date; got "${raw}"`,
    );
  }
  return us;
}

function positiveNumber(env: Env, name: string): number | null {
  const raw = setting(env, name);
  if (raw === null) return null;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(n > 0)) {
    throw new ConfigError(name, `must be a positive number of requests per second; got "${raw}"`);
  }
  return n;
}

export type DeleteMode = 'soft' | 'hard';

function deleteMode(env: Env): DeleteMode {
  const raw = setting(env, 'RUNSYNC_DELETES')?.toLowerCase() ?? null;
  if (raw === null) return 'soft';
  if (raw === 'soft' || raw === 'hard') return raw;
  throw new ConfigError('RUNSYNC_DELETES', `must be soft or hard; got "${raw}"`);
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = setting(env, name)?.toLowerCase() ?? null;
  if (raw === null) return fallback;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(name, `must be on or off; got "${raw}"`);
}

/** A share of the key's rate: `0.1` or `10%`, in [0, 1) or, with `upTo1`, in (0, 1]. */
function share(env: Env, name: string, fallback: number, upTo1 = false): number {
  const raw = setting(env, name);
  if (raw === null) return fallback;
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(raw);
  const n = m ? Number(m[1]) / (m[2] ? 100 : 1) : NaN;
  if (!(upTo1 ? n > 0 && n <= 1 : n >= 0 && n < 1))
    throw new ConfigError(
      name,
      `must be a share ${upTo1 ? 'above 0 up to 1' : 'from 0 to below 1'}, or a percentage such as 10%; got "${raw}"`,
    );
  return n;
}

function reconcileEvery(env: Env): Micros | null {
  const raw = setting(env, 'RUNSYNC_RECONCILE_EVERY');
  if (raw === null) return DEFAULT_RECONCILE_EVERY;
  if (raw.toLowerCase() === 'off') return null;
  const us = parseDuration(raw);
  if (us === null || us <= 0)
    throw new ConfigError(
      'RUNSYNC_RECONCILE_EVERY',
      `must be a positive duration such as 30m, 1h or 6h, or off for no rolling reconciliation; got "${raw}"`,
    );
  return us;
}

function redisUrl(env: Env): string | null {
  const raw = setting(env, 'REDIS_URL');
  if (raw === null) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL', 'is not a URL; use redis://host:6379 or rediss://host:6380');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError('REDIS_URL', `must be a redis:// or rediss:// URL; got ${url.protocol.replace(':', '')}`);
  }
  return raw;
}

function logLevel(env: Env): RunsyncConfig['logLevel'] {
  const raw = setting(env, 'LOG_LEVEL');
  if (raw === null) return 'info';
  const level = raw.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}; got "${raw}"`);
  }
  return level as RunsyncConfig['logLevel'];
}

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): RunsyncConfig {
  const readFile = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  const rawUrl = setting(env, 'RUNSYNC_API_URL');
  const read = readKey(env, readFile);
  const key = read?.key ?? null;
  let api: ApiConfig | null = null;
  if (options.needApi !== false || rawUrl !== null || key !== null) {
    if (rawUrl === null)
      throw new ConfigError('RUNSYNC_API_URL', 'is not set; give the API address, e.g. https://support.example.com');
    const httpHosts = (setting(env, 'RUNSYNC_ALLOW_HTTP') ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    const baseUrl = apiBaseUrl(rawUrl, 'RUNSYNC_API_URL', httpHosts);
    if (read === null)
      throw new ConfigError('RUNSYNC_API_KEY', 'is not set (nor RUNSYNC_API_KEY_FILE); give the Export API key');
    api = Object.defineProperty({ baseUrl, httpHosts, keySetting: read.setting }, 'key', {
      value: read.key,
      enumerable: false,
    }) as unknown as ApiConfig;
    Object.freeze(api);
  }
  const rateReserve = share(env, 'RUNSYNC_RATE_RESERVE', DEFAULT_RESERVE);
  const redis = redisUrl(env);
  const cwd = options.cwd ?? process.cwd();
  const warehouseDir = resolve(cwd, setting(env, 'RUNSYNC_WAREHOUSE_DIR') ?? './warehouse');
  const { secrets: storageSecrets, ...storage } = storageConfig(env, warehouseDir, cwd);
  const pii = piiSettingsOf(env, { readFile, cwd });
  const config = {
    api,
    warehouseDir,
    startDate: startDate(env),
    lookback: duration(env, 'RUNSYNC_LOOKBACK', parseDuration('15m') as Micros),
    openRunHorizon: duration(env, 'RUNSYNC_OPEN_RUN_HORIZON', parseDuration('30d') as Micros),
    reconcileEvery: reconcileEvery(env),
    reconcileBudget: share(env, 'RUNSYNC_RECONCILE_BUDGET', DEFAULT_RECONCILE_BUDGET, true),
    deletes: deleteMode(env),
    rateLimit: positiveNumber(env, 'RUNSYNC_RATE_LIMIT'),
    rateReserve,
    redisUrl: redis,
    schemaEvolution: onOff(env, 'RUNSYNC_SCHEMA_EVOLUTION', true),
    logLevel: logLevel(env),
    progressEveryMs: progressEvery(env),
    share: shareGroup(env),
    storage,
    memory: memoryBudgetOf(env),
    pii: pii.policy,
    contract: schemaContract(env),
    timeouts: requestTimeouts(env),
  };
  const secrets = [key, redis === null ? null : redisPassword(redis), pii.key, ...storageSecrets].filter(
    (s): s is string => s !== null && s !== '',
  );
  // Not enumerable, like the key itself: a config written out or logged shows neither.
  Object.defineProperty(config, 'secrets', { value: Object.freeze(secrets), enumerable: false });
  return Object.freeze(config) as RunsyncConfig;
}

/** RUNSYNC_SCHEMA_CONTRACT, every problem a line naming the setting. */
export function schemaContract(env: Env): SchemaContract {
  try {
    return parseContract(env.RUNSYNC_SCHEMA_CONTRACT);
  } catch (e) {
    if (!(e instanceof ContractError)) throw e;
    throw new ConfigError(CONTRACT_SETTING, e.problems.join(`\n${CONTRACT_SETTING}: `));
  }
}

function redisPassword(raw: string): string | null {
  const password = new URL(raw).password;
  return password ? decodeURIComponent(password) : null;
}

/** A logger at the configured level that never writes the API key. */
export function configuredLogger(
  config: RunsyncConfig,
  options: Omit<LoggerOptions, 'level' | 'secrets'> = {},
): Logger {
  return createLogger({ ...options, level: config.logLevel, secrets: config.secrets });
}
