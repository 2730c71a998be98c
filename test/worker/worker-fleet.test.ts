import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { diffCatalog, diffFacts, startSim, tempDir, truth } from '../sync/sync-kit.ts';
import { cleanRedis, eventually, spawnWorker, stopWorker, uniquePrefix, workerEnv, type RunningWorker } from './worker-kit.ts';

// Two worker processes on one Redis: scheduled passes sync the simulator into one warehouse, one
// writer at a time, under one rate budget; a worker killed with SIGKILL mid-pass and restarted
// still leaves the warehouse exact.

const LIMIT = 40;

describe('runsync worker, two processes', () => {
  let sim: Simulator | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  let prefix = '';
  const workers: RunningWorker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => stopWorker(w)));
    await sim?.close();
    tmp?.cleanup();
    await cleanRedis(prefix);
  });

  it('sync the simulator exactly, within the key budget in every second, and survive a SIGKILL mid-pass', { timeout: 480_000 }, async () => {
    sim = await startSim({
      seed: 71,
      size: 700,
      days: 10,
      now: systemMicros() - MICROS_PER_HOUR,
      runs: { postSettleFraction: 0 },
      rateLimit: { perKey: { limit: LIMIT, windowSeconds: 1 } },
    });
    tmp = tempDir();
    prefix = uniquePrefix();
    const env = workerEnv(sim, tmp.dir, prefix);
    const s = sim;
    const dir = tmp.dir;
    workers.push(spawnWorker(env), spawnWorker(env));

    // Kill one worker once the first pass is well under way, then start another in its place.
    await eventually(async () => s.counters.count('runs.get') >= 200, 120_000, () => `${s.counters.count('runs.get')} details fetched`);
    const victim = workers.shift() as RunningWorker;
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    workers.push(spawnWorker(env));

    // The truth is computed once per clock position: computing it keeps the simulator busy, and
    // requests waiting meanwhile would reach it in a bunch.
    let want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0 && (await diffCatalog(s, dir)).length === 0,
      240_000,
      async () => `${(await diffFacts(want, dir)).length} runs differ; ${workers.map((w) => w.output().slice(-2000)).join('\n---\n')}`,
    );
    // The clock moves: runs arrive and settle, and the next passes follow.
    s.advance('20m');
    want = truth(s, s.clock.now());
    await eventually(async () => (await diffFacts(want, dir)).length === 0, 120_000, async () => `${(await diffFacts(want, dir)).length} runs differ`);

    const total = s.counters.count();
    const limited = s.counters.count(undefined, 429);
    const log = s.counters.log();
    const perSecond = new Map<number, string[]>();
    for (const r of log) {
      const k = Math.floor(r.t / 1000);
      perSecond.set(k, [...(perSecond.get(k) ?? []), `${r.endpoint}:${r.status}`]);
    }
    const busy = [...perSecond.entries()].filter(([, v]) => v.length > LIMIT);
    expect(busy.map(([k, v]) => `${k}: ${v.length} ${JSON.stringify(Object.entries(v.reduce<Record<string, number>>((a, x) => ((a[x] = (a[x] ?? 0) + 1), a), {})))}`)).toEqual([]);
    expect(s.counters.maxInAlignedWindow(1000)).toBeLessThanOrEqual(LIMIT);
    expect(limited / total).toBeLessThan(0.01);
  });
});
