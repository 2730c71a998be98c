import { resolve } from 'node:path';
import { CredentialsFileError, readCredentialsFile } from '../storage/credentials.ts';
import type { S3Settings, StorageLocation } from '../storage/types.ts';
import { parseDuration } from '../util/timestamp.ts';
import { ConfigError } from './error.ts';
import { isLoopbackHost } from './url.ts';

// Where the Parquet tree (RUNSYNC_PARQUET_URL) and the fleet's staged details (RUNSYNC_STAGING_URL,
// read with the worker's settings) go: a folder, or s3://bucket/prefix with the RUNSYNC_S3_*
// settings. Checked at start like every setting; a credentials file is read once here so that a
// bad one stops the command at once, and what it holds joins the values no log line may show.

type Env = Readonly<Record<string, string | undefined>>;

export interface StorageConfig {
  parquet: StorageLocation;
  /** RUNSYNC_PARQUET_GRACE: how long replaced files stay in an object store after the swap. */
  parquetGraceMs: number;
  s3: S3Settings;
  /** Secret values of the S3 credentials known at start (for the logger's redaction). */
  secrets: string[];
}

export const DEFAULT_PARQUET_GRACE_MS = 60 * 60_000;
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

function value(env: Env, name: string): string | null {
  const v = env[name]?.trim();
  return v ? v : null;
}

/** A folder (relative to `cwd`) or s3://bucket/prefix; null gives `fallbackDir`. */
export function storageLocation(
  raw: string | null,
  setting: string,
  fallbackDir: string,
  cwd: string,
): StorageLocation {
  if (raw === null) return { kind: 'folder', dir: resolve(cwd, fallbackDir) };
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) return { kind: 'folder', dir: resolve(cwd, raw) };
  if (raw.toLowerCase().startsWith('file://')) return { kind: 'folder', dir: resolve(cwd, raw.slice(7)) };
  const m = /^s3:\/\/([^/]*)(?:\/(.*))?$/i.exec(raw);
  if (!m)
    throw new ConfigError(setting, 'must be a folder or an s3://bucket/prefix URL (other schemes are not supported)');
  const bucket = m[1] as string;
  if (bucket.includes('@') || bucket.includes(':'))
    throw new ConfigError(
      setting,
      'must not carry credentials; give them as RUNSYNC_S3_CREDENTIALS_FILE or AWS_* settings',
    );
  if (!BUCKET.test(bucket))
    throw new ConfigError(setting, `"${bucket}" is not a bucket name (3-63 of a-z, 0-9, . and -)`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..') || /\/\//.test(prefix) || /[?#]/.test(prefix))
    throw new ConfigError(setting, 'the prefix must be plain folder names separated by /');
  return { kind: 's3', bucket, prefix };
}

function endpoint(env: Env): string | null {
  const name = value(env, 'RUNSYNC_S3_ENDPOINT') ? 'RUNSYNC_S3_ENDPOINT' : 'AWS_ENDPOINT_URL_S3';
  const raw = value(env, name) ?? value(env, 'AWS_ENDPOINT_URL');
  if (raw === null) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a URL; give the store, e.g. https://s3.example.com or http://127.0.0.1:9000');
  }
  if (url.username || url.password) throw new ConfigError(name, 'must not carry a user name or password');
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ConfigError(name, `must be an https URL; got ${url.protocol.replace(':', '')}`);
  const httpHosts = (value(env, 'RUNSYNC_ALLOW_HTTP') ?? '').split(',').map((h) => h.trim().toLowerCase());
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !httpHosts.includes(url.hostname.toLowerCase()))
    throw new ConfigError(name, 'must use https (plain http only for this machine or a host in RUNSYNC_ALLOW_HTTP)');
  return url.href.replace(/\/+$/, '');
}

function pathStyle(env: Env, hasEndpoint: boolean): boolean {
  const raw = value(env, 'RUNSYNC_S3_PATH_STYLE')?.toLowerCase() ?? null;
  // S3-compatible stores mostly want path-style; AWS wants virtual-hosted style.
  if (raw === null) return hasEndpoint;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError('RUNSYNC_S3_PATH_STYLE', `must be on or off; got "${raw}"`);
}

export function parquetGraceMs(env: Env): number {
  const raw = value(env, 'RUNSYNC_PARQUET_GRACE');
  if (raw === null) return DEFAULT_PARQUET_GRACE_MS;
  const us = parseDuration(raw);
  if (us === null || us < 1_000_000)
    throw new ConfigError('RUNSYNC_PARQUET_GRACE', `must be a duration of at least 1s, such as 1h; got "${raw}"`);
  return Math.round(us / 1000);
}

export function storageConfig(env: Env, warehouseDir: string, cwd: string = process.cwd()): StorageConfig {
  const parquet = storageLocation(
    value(env, 'RUNSYNC_PARQUET_URL'),
    'RUNSYNC_PARQUET_URL',
    `${warehouseDir}/parquet`,
    cwd,
  );
  const ep = endpoint(env);
  const s3: S3Settings = {
    endpoint: ep,
    region:
      value(env, 'RUNSYNC_S3_REGION') ?? value(env, 'AWS_REGION') ?? value(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1',
    pathStyle: pathStyle(env, ep !== null),
    credentialsFile: value(env, 'RUNSYNC_S3_CREDENTIALS_FILE'),
    profile: value(env, 'AWS_PROFILE') ?? 'default',
  };
  const secrets = [env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN].filter((s): s is string => !!s);
  if (s3.credentialsFile !== null) {
    try {
      const c = readCredentialsFile(s3.credentialsFile, s3.profile);
      secrets.push(c.secretAccessKey, ...(c.sessionToken ? [c.sessionToken] : []));
    } catch (e) {
      if (e instanceof CredentialsFileError) throw new ConfigError('RUNSYNC_S3_CREDENTIALS_FILE', e.message);
      throw e;
    }
  }
  return { parquet, parquetGraceMs: parquetGraceMs(env), s3, secrets };
}
