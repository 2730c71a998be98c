import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { FETCH_QUEUE, WRITE_QUEUE } from '../../src/worker/job-context.ts';
import { runCli } from '../support/cli.ts';
import { diffFacts, truth } from '../sync/kit.ts';
import { eventually, freePort, perWorkerTest, spawnWorker, startRedisServer as startRedis, workerEnv } from './kit.ts';

// What a worker must live through: Redis restarting in the middle of a pass, and an analyst
// holding runsync.duckdb open for twenty seconds.

/** The worker's queues by state, for a failure's message. */
async function queueCounts(url: string, prefix: string): Promise<string> {
  const connection = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const out: Record<string, unknown> = {};
    for (const name of [WRITE_QUEUE, FETCH_QUEUE]) {
      const queue = new Queue(name, { connection, prefix });
      out[name] = await queue.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'completed', 'failed');
      await queue.close();
    }
    return JSON.stringify(out);
  } finally {
    connection.disconnect();
  }
}

describe('a worker through faults', () => {
  const each = perWorkerTest();

  it('Redis restarting mid-pass loses no window', { timeout: 300_000 }, async () => {
    const port = await freePort();
    const redisDir = mkdtempSync(join(tmpdir(), 'runsync-redis-'));
    let redis = await startRedis(port, redisDir);
    each.defer(() => rmSync(redisDir, { recursive: true, force: true }));
    each.defer(() => void redis.kill('SIGKILL'));
    const redisUrl = `redis://127.0.0.1:${port}`;
    const s = await each.sim({
      seed: 72,
      size: 600,
      days: 10,
      now: systemMicros() - MICROS_PER_HOUR,
      runs: { postSettleFraction: 0 },
      rateLimit: { perKey: { limit: 60, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const prefix = each.prefix(redisUrl);
    each.workers.push(spawnWorker(workerEnv(s, dir, prefix, { REDIS_URL: redisUrl, LOG_LEVEL: 'info' })));
    await eventually(
      async () => s.counters.count('runs.get') >= 150,
      120_000,
      () => `${s.counters.count('runs.get')} details fetched`,
    );
    // A restart as an operator does one: Redis saves its append-only file and comes back with it.
    redis.kill('SIGTERM');
    await new Promise((r) => redis.once('exit', r));
    await new Promise((r) => setTimeout(r, 3000));
    redis = await startRedis(port, redisDir);
    const want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      180_000,
      async () => {
        const diff = await diffFacts(want, dir, { quick: false });
        const queues = await queueCounts(redisUrl, prefix).catch((e: Error) => e.message);
        return `${diff.length} runs differ (${diff.slice(0, 5).join('; ')}); queues ${queues}; ${each.workers[0]?.output().slice(-6000)}`;
      },
    );
  });

  it('a reader holding runsync.duckdb for twenty seconds delays loading, status names it, nothing is lost', {
    timeout: 300_000,
  }, async () => {
    const s = await each.sim({
      seed: 73,
      size: 600,
      days: 10,
      now: systemMicros() - MICROS_PER_HOUR,
      runs: { postSettleFraction: 0 },
    });
    const dir = each.dir();
    const prefix = each.prefix();
    const env = workerEnv(s, dir, prefix);
    each.workers.push(spawnWorker(env));
    let want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      120_000,
      async () => `${(await diffFacts(want, dir)).length} runs differ`,
    );

    // An analyst opens the file and keeps it open; meanwhile runs arrive and change.
    const reader = await openWarehouse(dir, { readOnly: true, lockWaitMs: 60_000 });
    s.advance('30m');
    want = truth(s, s.clock.now());
    const heldFrom = Date.now();
    await eventually(
      async () =>
        (await runCli(['status'], { ...env, LOG_LEVEL: 'silent' })).stdout.includes(`held by process ${process.pid}`),
      60_000,
      async () => (await runCli(['status'], env)).stdout,
    );
    await new Promise((r) => setTimeout(r, Math.max(0, 20_000 - (Date.now() - heldFrom))));
    // Still held: nothing of the new runs could land.
    expect((await diffFacts(want, dir)).length).toBeGreaterThan(0);
    await reader.close();

    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      120_000,
      async () => `${(await diffFacts(want, dir)).length} runs differ; ${each.workers[0]?.output().slice(-3000)}`,
    );
    expect(each.workers[0]?.child.exitCode).toBeNull();
  });
});
