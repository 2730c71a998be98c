import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { runCli } from '../support/cli.ts';
import { diffFacts, truth } from '../sync/kit.ts';
import { eventually, perWorkerTest, REDIS_URL, spawnWorker, workerEnv } from './kit.ts';

// The worker as operators meet it: schedules made once however many workers start, queued
// backfills as flows with progress, bad payloads failing for good, and SIGTERM handing work back.

describe('runsync worker: schedules, flows, shutdown', () => {
  const each = perWorkerTest();

  it('workers starting together make one schedule; a queued backfill runs as a flow, once', {
    timeout: 300_000,
  }, async () => {
    const now = systemMicros() - MICROS_PER_HOUR;
    const s = await each.sim({ seed: 74, size: 800, days: 8, now });
    const dir = each.dir();
    const prefix = each.prefix();
    const env = workerEnv(s, dir, prefix, {
      RUNSYNC_SCHEDULE_RUNS: '0 0 1 1 *',
      RUNSYNC_SCHEDULE_CATALOG: '0 0 1 1 *',
      // No pass at all: the backfill alone must leave the live watermark where it was.
      RUNSYNC_PASS_AT_START: 'off',
    });
    each.workers.push(spawnWorker(env), spawnWorker(env), spawnWorker(env));
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const queue = new Queue('write', { connection: redis, prefix });
    try {
      await eventually(
        async () => (await queue.getJobSchedulers()).length === 2,
        60_000,
        async () => JSON.stringify(await queue.getJobSchedulers()),
      );
      await new Promise((r) => setTimeout(r, 2000));
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers.map((x) => `${x.key} ${x.pattern} ${x.tz}`).sort()).toEqual([
        'catalog-snapshot 0 0 1 1 * UTC',
        'runs-pass 0 0 1 1 * UTC',
      ]);

      const from = formatTimestamp(now - 5 * MICROS_PER_DAY);
      const to = formatTimestamp(now - 2 * MICROS_PER_DAY);
      const args = ['backfill', '--from', from, '--to', to, '--status', 'completed', '--slice', '12h', '--enqueue'];
      const first = await runCli(args, env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(/queued backfill backfill\.[0-9a-f]+: 6 slice\(s\)/);
      const again = await runCli(args, env);
      expect(again.stdout).toMatch(/already queued/);
      const waited = await runCli([...args, '--wait'], env, { timeoutMs: 240_000 });
      expect(waited.code, waited.stderr).toBe(0);
      expect(waited.stdout).toMatch(/finished: \{"slices":6,"listed":\d+,"fetched":\d+/);
      const status = await runCli(['status'], env);
      expect(status.stdout).toMatch(/queued\s+backfill backfill\.[0-9a-f]+: completed, 6\/6 slices/);

      const wh = await openWarehouse(dir, { readOnly: true });
      const [n] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
      const watermark = await wh.all(`SELECT * FROM _sync_state WHERE key = 'runs.watermark'`);
      await wh.close();
      const expected = [...s.world.truthRunDetails()].filter(
        (d) => (d.created_at as string) >= from && (d.created_at as string) < to && d.status === 'completed',
      ).length;
      expect(Number(n?.n)).toBe(expected);
      expect(watermark).toEqual([]);

      // A payload that is not what the job expects fails for good, without retries.
      const bad = await queue.add('runs-pass', { reconcile: 'yes' }, { attempts: 5 });
      await eventually(
        async () => (await bad.getState()) === 'failed',
        60_000,
        () => 'the bad job did not fail',
      );
      const failed = await queue.getJob(bad.id as string);
      expect(failed?.failedReason).toMatch(/reconcile must be true or false/);
      expect(failed?.attemptsMade).toBe(1);
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });

  it('SIGTERM hands the pass back within the grace period, and the next worker finishes it', {
    timeout: 300_000,
  }, async () => {
    const s = await each.sim({
      seed: 75,
      size: 700,
      days: 10,
      now: systemMicros() - MICROS_PER_HOUR,
      rateLimit: { perKey: { limit: 60, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const prefix = each.prefix();
    const env = workerEnv(s, dir, prefix, { RUNSYNC_SHUTDOWN_GRACE: '10s' });
    const w = spawnWorker(env);
    each.workers.push(w);
    await eventually(
      async () => s.counters.count('runs.get') >= 150,
      120_000,
      () => `${s.counters.count('runs.get')} details`,
    );
    const t0 = Date.now();
    w.child.kill('SIGTERM');
    const exit = await w.exited;
    expect(exit.code, w.output().slice(-2000)).toBe(0);
    // The grace period, and the few seconds a process takes to close its connections.
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(w.output()).toMatch(/worker stopped/);
    each.workers.push(spawnWorker(env));
    const want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      180_000,
      async () => `${(await diffFacts(want, dir)).length} runs differ`,
    );
  });
});
