import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse, withWarehouse } from '../../src/warehouse/open.ts';
import { collect, runCli, spawnCli } from '../support/cli.ts';
import { BUCKET, type TestS3, useS3 } from '../support/s3.ts';
import { simWorld, tempDir } from '../warehouse/wh-kit.ts';
import { eventually } from '../worker/kit.ts';
import { differences, loadWorld, readPublished } from './s3-kit.ts';

// `runsync export` to an S3-compatible server as an operator runs it, credentials from the AWS
// environment variables: killed in the middle of its uploads, throttled, and with its session
// expired, what readers of the bucket see stays whole.

const world = simWorld(53, 100, 4);
const held = useS3();
let tmp: ReturnType<typeof tempDir>;
let env: Record<string, string>;
let prefix = 0;

beforeEach(async () => {
  tmp = tempDir();
  await withWarehouse(join(tmp.dir, 'w'), {}, (wh) => loadWorld(wh, world));
  prefix++;
  env = {
    RUNSYNC_WAREHOUSE_DIR: join(tmp.dir, 'w'),
    RUNSYNC_PARQUET_URL: `s3://${BUCKET}/cli-${prefix}/parquet`,
    LOG_LEVEL: 'warn',
    ...held.s3.env(held.proxy.url),
  };
});
afterEach(() => {
  tmp.cleanup();
});

const latest = (store: ReturnType<TestS3['store']>) => store.get('_latest.json').then((b) => b?.toString('utf8'));

async function changeRuns(): Promise<void> {
  const runs = [...world.truthRunDetails()].filter((_, i) => i % 10 === 0);
  await withWarehouse(join(tmp.dir, 'w'), {}, (wh) =>
    loadRunDetails(wh, runs.map((r) => ({ ...r, status: 'failed', updated_at: '2099-01-01T00:00:00Z' })) as never),
  );
}

async function publishedDiffers(store: ReturnType<TestS3['store']>, dest: string): Promise<Record<string, number>> {
  await readPublished(store, dest);
  const wh = await openWarehouse(join(tmp.dir, 'w'), { readOnly: true });
  try {
    return await differences(wh, dest);
  } finally {
    await wh.close();
  }
}

describe('runsync export to a bucket', () => {
  it('killed mid-upload, leaves the previous generation readable; the next one publishes', async () => {
    const store = held.s3.store(`cli-${prefix}/parquet`);
    const first = await runCli(['export'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`published generation 1 at s3://${BUCKET}/cli-${prefix}/parquet/_latest.json`);
    const before = await latest(store);
    await changeRuns();

    let uploads = 0;
    held.proxy.fault = (r) =>
      r.method === 'PUT' && r.path.includes('/_data/00000002/') && ++uploads > 3 ? 'hold' : undefined;
    const child = spawnCli(['export'], env);
    const done = collect(child, 120_000);
    await eventually(
      async () => uploads > 3,
      60_000,
      () => `${uploads} uploads seen`,
    );
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    expect(await latest(store)).toBe(before);
    expect((await store.list('_data/00000002/')).length).toBeGreaterThan(0);
    // What readers get is generation 1 whole: the tables as they were before the change (the runs
    // changed, and so their history).
    const old = await publishedDiffers(store, join(tmp.dir, 'old'));
    expect(Object.keys(old)).toEqual(['runs', 'runs_history']);

    held.proxy.fault = () => undefined;
    const again = await runCli(['export'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('published generation 2');
    expect(await publishedDiffers(store, join(tmp.dir, 'new'))).toEqual({});
  });

  it('waits out throttling; an expired session stops it with one clear line, the bucket as it was', async () => {
    const store = held.s3.store(`cli-${prefix}/parquet`);
    let n = 0;
    held.proxy.fault = () => (++n % 3 === 0 ? { status: 503, code: 'SlowDown' } : undefined);
    const throttled = await runCli(['export'], env);
    expect(throttled.code).toBe(0);
    expect(throttled.stderr).toContain('object store: trying again');
    expect(throttled.stderr).toContain('SlowDown');
    expect(await publishedDiffers(store, join(tmp.dir, 'throttled'))).toEqual({});

    const before = await latest(store);
    await changeRuns();
    held.proxy.fault = (r) => (r.token === held.s3.token ? { status: 400, code: 'ExpiredToken' } : undefined);
    const expired = await runCli(['export'], env);
    expect(expired.code).toBe(1);
    const line = expired.stderr.trim().split('\n').at(-1) ?? '';
    expect(line).toMatch(
      /^runsync: get s3:\/\/runsync-test\/cli-\d+\/parquet\/_latest\.json: the credentials have expired/,
    );
    expect(line).toContain('(ExpiredToken, HTTP 400)');
    for (const out of [expired.stdout, expired.stderr, throttled.stdout, throttled.stderr]) {
      expect(out).not.toContain(held.s3.secret);
      expect(out).not.toContain(held.s3.token);
    }
    expect(await latest(store)).toBe(before);
  });

  it('a worker given a bucket that does not answer stops at start, naming the setting', async () => {
    const worker = {
      RUNSYNC_API_URL: 'http://127.0.0.1:9',
      RUNSYNC_API_KEY: 'svc_live_start_check_key',
      REDIS_URL: 'redis://127.0.0.1:6379',
      RUNSYNC_WAREHOUSE_DIR: join(tmp.dir, 'w'),
      ...held.s3.env(),
    };
    const missing = await runCli(['worker'], { ...worker, RUNSYNC_STAGING_URL: 's3://no-such-bucket/staging' });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toMatch(
      /^runsync: RUNSYNC_STAGING_URL: get s3:\/\/no-such-bucket\/staging\/_runsync-start-check: the bucket does not/,
    );
    const refused = await runCli(['worker'], {
      ...worker,
      RUNSYNC_PARQUET_URL: `s3://${BUCKET}/p`,
      AWS_ACCESS_KEY_ID: 'NOT_A_KEY_THE_STORE_KNOWS',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/RUNSYNC_PARQUET_URL: .*does not accept the credentials.*InvalidAccessKeyId/);
    expect(refused.stderr).not.toContain(held.s3.secret);
  });
});
