import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configuredLogger, loadConfig, storageLocation } from '../../src/config/index.ts';
import { workerSettings } from '../../src/worker/config.ts';
import { tempDir } from '../warehouse/wh-kit.ts';

// RUNSYNC_PARQUET_URL, RUNSYNC_STAGING_URL and the RUNSYNC_S3_* settings: folders or buckets,
// refusals naming the setting, and the S3 secret and session token among the values no log shows.

const base = { RUNSYNC_API_URL: 'https://support.example.com', RUNSYNC_API_KEY: 'svc_live_storage_test_key_123456' };
const SECRET = 'wJalrXUtnFEMI-storage-test-secret';
const TOKEN = 'FwoGZXIvYXdz-storage-test-session-token';

function refused(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('storage settings', () => {
  it('takes a folder (the default one included) or s3://bucket/prefix, with S3 defaults for a compatible store', () => {
    const c = loadConfig(base, { cwd: '/srv' });
    expect(c.storage.parquet).toEqual({ kind: 'folder', dir: '/srv/warehouse/parquet' });
    expect(c.storage.parquetGraceMs).toBe(3_600_000);
    const s = loadConfig(
      {
        ...base,
        RUNSYNC_PARQUET_URL: 's3://analytics-lake/runsync/parquet/',
        RUNSYNC_S3_ENDPOINT: 'http://127.0.0.1:9000',
        RUNSYNC_PARQUET_GRACE: '15m',
      },
      { cwd: '/srv' },
    );
    expect(s.storage.parquet).toEqual({ kind: 's3', bucket: 'analytics-lake', prefix: 'runsync/parquet' });
    expect(s.storage.s3).toMatchObject({ endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', pathStyle: true });
    expect(s.storage.parquetGraceMs).toBe(900_000);
    expect(storageLocation('lake', 'X', '/d', '/srv')).toEqual({ kind: 'folder', dir: '/srv/lake' });
    expect(workerSettings({ RUNSYNC_STAGING_URL: 's3://lake/staging' }, '/w').staging).toEqual({
      kind: 's3',
      bucket: 'lake',
      prefix: 'staging',
    });
  });

  it('refuses what it cannot use, in one line naming the setting', () => {
    expect(refused(() => loadConfig({ ...base, RUNSYNC_PARQUET_URL: 's3://AKIA:secret@lake/p' }))).toMatch(
      /^RUNSYNC_PARQUET_URL: must not carry credentials/,
    );
    expect(refused(() => loadConfig({ ...base, RUNSYNC_PARQUET_URL: 'gs://lake/p' }))).toMatch(/^RUNSYNC_PARQUET_URL:/);
    expect(refused(() => loadConfig({ ...base, RUNSYNC_PARQUET_URL: 's3://No_Such/p' }))).toMatch(/not a bucket name/);
    expect(refused(() => loadConfig({ ...base, RUNSYNC_S3_ENDPOINT: 'http://minio.internal:9000' }))).toMatch(
      /^RUNSYNC_S3_ENDPOINT: must use https/,
    );
    expect(refused(() => loadConfig({ ...base, RUNSYNC_PARQUET_GRACE: 'never' }))).toMatch(/^RUNSYNC_PARQUET_GRACE:/);
    expect(
      refused(() => workerSettings({ RUNSYNC_STAGING_URL: 's3://lake/s', RUNSYNC_STAGING_DIR: '/x' }, '/w')),
    ).toMatch(/set only one/);
  });

  it('keeps the secret key and session token, from the environment or a file, out of every log line', () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'credentials');
      writeFileSync(file, `[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = ${SECRET}x\n`);
      const env = {
        ...base,
        AWS_SECRET_ACCESS_KEY: SECRET,
        AWS_SESSION_TOKEN: TOKEN,
        RUNSYNC_S3_CREDENTIALS_FILE: file,
      };
      const c = loadConfig(env);
      expect(c.secrets).toEqual(expect.arrayContaining([SECRET, TOKEN, `${SECRET}x`]));
      expect(JSON.stringify(c)).not.toContain(SECRET);
      const lines: string[] = [];
      const logger = configuredLogger(c, { destination: { write: (l: string) => lines.push(l) } });
      logger.error({ env, err: new Error(`signed with ${SECRET}x and ${TOKEN}`) }, `failed with ${SECRET}`);
      expect(lines.join('')).toContain('failed with');
      for (const s of [SECRET, TOKEN]) expect(lines.join('')).not.toContain(s);

      writeFileSync(file, `[other]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = ${SECRET}\n`);
      const m = refused(() => loadConfig(env));
      expect(m).toMatch(
        /^RUNSYNC_S3_CREDENTIALS_FILE: .* has no aws_access_key_id and aws_secret_access_key under \[default\]$/,
      );
      expect(m).not.toContain(SECRET);
    } finally {
      t.cleanup();
    }
  });
});
