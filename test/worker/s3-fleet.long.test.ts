import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { differences, readPublished } from '../export/s3-kit.ts';
import { BUCKET, faultProxy, startS3 } from '../support/s3.ts';
import { diffFacts, tempDir } from '../sync/kit.ts';
import {
  eventually,
  killAndReplace,
  REDIS_URL,
  spawnWorker,
  startSimProcess,
  stopWorker,
  uniquePrefix,
  untilExact,
  useFleet,
  workerEnv,
} from './kit.ts';

// A fleet with no shared folder for its fetches: the workers stage fetched details in a bucket
// (RUNSYNC_STAGING_URL) and export Parquet to it. A worker killed while fetching loses nothing;
// the warehouse ends exact, the staged objects are removed once committed, the bucket's Parquet
// is the warehouse, and no S3 secret or session token reaches a log, Redis, the warehouse or the
// bucket.

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, String(f)))
    .filter((f) => statSync(f).isFile());
}

async function redisText(prefix: string): Promise<string> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const keys = await redis.keys(`${prefix}:*`);
    const parts: string[] = [];
    for (const k of keys) {
      const type = await redis.type(k);
      if (type === 'string') parts.push((await redis.get(k)) ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(k)));
      else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(k, 0, -1)));
      else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(k, 0, -1)));
      else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(k)));
      else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(k, '-', '+')));
    }
    return parts.join('\n');
  } finally {
    redis.disconnect();
  }
}

describe('runsync worker, staging and Parquet in a bucket', () => {
  const fleet = useFleet();

  it('sync exactly with a worker killed mid-fetch, and keep every secret out of logs, Redis and files', {
    timeout: 420_000,
  }, async () => {
    const now = systemMicros() - MICROS_PER_HOUR;
    const sim = await startSimProcess({ seed: 73, size: 240, days: 6, now, limit: 40, postSettle: 0 });
    fleet.sim = sim;
    const s3 = await startS3();
    const proxy = await faultProxy(s3.endpoint);
    const tmp = tempDir();
    fleet.also.push(
      () => proxy.close(),
      () => s3.close(),
      () => tmp.cleanup(),
    );
    const prefix = uniquePrefix();
    fleet.prefix = prefix;
    const workers = fleet.workers;
    const env = workerEnv(sim, tmp.dir, prefix, {
      ...s3.env(proxy.url),
      RUNSYNC_STAGING_URL: `s3://${BUCKET}/${prefix}/staging`,
      RUNSYNC_PARQUET_URL: `s3://${BUCKET}/${prefix}/parquet`,
      RUNSYNC_FETCH_CHUNK: '5',
      LOG_LEVEL: 'debug',
    });
    const s = sim;
    const dir = tmp.dir;
    const staged = () => proxy.seen.filter((r) => r.method === 'PUT' && r.path.includes('/staging/'));
    workers.push(spawnWorker(env), spawnWorker(env));

    // Kill a worker while fetch jobs are in flight, then start another in its place.
    const details = async () => (await s.counters()).byStatus['200'] ?? 0;
    await eventually(
      async () => (await details()) >= 80 && staged().length >= 3,
      120_000,
      async () => `${await details()} answered, ${staged().length} staged`,
    );
    const victim = await killAndReplace(workers, env);
    await untilExact(s, dir, workers, 240_000);
    // The clock moves: runs arrive and settle, and the next passes fetch them through the bucket.
    const before = staged().length;
    await s.advance('20m');
    const want = await untilExact(s, dir, workers, 120_000);
    // The passes' exports catch up: the bucket's published Parquet is the warehouse.
    let round = 0;
    const publishedDiffers = async () => {
      const into = join(dir, `published-${++round}`);
      await readPublished(s3.store(`${prefix}/parquet`), into);
      const wh = await openWarehouse(dir, { readOnly: true });
      try {
        return await differences(wh, into);
      } finally {
        await wh.close();
      }
    };
    await eventually(
      async () => Object.keys(await publishedDiffers()).length === 0,
      120_000,
      async () => JSON.stringify(await publishedDiffers().catch((e: unknown) => String(e))),
    );
    const outputs = [victim.output(), ...workers.map((w) => w.output())];
    await Promise.all(workers.splice(0).map((w) => stopWorker(w)));
    expect(await diffFacts(want, dir, { quick: false })).toEqual([]);

    // Staged through the bucket, none in a folder. What the passes after the kill staged was
    // removed once committed; only fetches the killed writer asked for and never read may be
    // left, for the runs pass's sweep.
    const later = staged()
      .slice(before)
      .map((r) => r.path.slice(r.path.indexOf('/staging/') + 1));
    expect(later.length).toBeGreaterThan(0);
    expect(existsSync(join(dir, 'staging'))).toBe(false);
    const store = s3.store(`${prefix}`);
    const left = new Set((await store.list('staging/')).map((o) => o.key));
    expect(later.filter((k) => left.has(k))).toEqual([]);

    const everywhere = [
      ...outputs,
      await redisText(prefix),
      ...filesUnder(dir).map((f) => readFileSync(f).toString('latin1')),
      ...(await Promise.all(
        (await store.list('')).map(async (o) => (await store.get(o.key))?.toString('latin1') ?? ''),
      )),
    ];
    expect(outputs.join('').length).toBeGreaterThan(1000);
    for (const text of everywhere) {
      expect(text.includes(s3.secret)).toBe(false);
      expect(text.includes(s3.token)).toBe(false);
    }
  });
});
