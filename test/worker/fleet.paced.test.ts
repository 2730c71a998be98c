import { describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { diffCatalog, diffFacts, truth } from '../sync/kit.ts';
import { eventually, perWorkerTest, type RunningWorker, spawnWorker, workerEnv } from './kit.ts';

// Two worker processes on one Redis: scheduled passes sync the simulator into one warehouse, one
// writer at a time, under one rate budget; a worker killed with SIGKILL mid-pass and restarted
// still leaves the warehouse exact.

const LIMIT = 40;

describe('runsync worker, two processes', () => {
  const each = perWorkerTest();

  it('sync the simulator exactly, within the key budget in every second, and survive a SIGKILL mid-pass', {
    timeout: 480_000,
  }, async () => {
    // The simulator runs in a process of its own, so this test's work cannot crowd its seconds.
    const s = await each.simProcess({
      seed: 71,
      size: 400,
      days: 10,
      now: systemMicros() - MICROS_PER_HOUR,
      limit: LIMIT,
      postSettle: 0,
    });
    const dir = each.dir();
    const prefix = each.prefix();
    const env = workerEnv(s, dir, prefix);
    each.workers.push(spawnWorker(env), spawnWorker(env));

    // Kill one worker once the first pass is well under way, then start another in its place.
    const details = async () => (await s.counters()).byStatus['200'] ?? 0;
    await eventually(
      async () => (await details()) >= 120,
      120_000,
      async () => `${await details()} answered`,
    );
    const victim = each.workers.shift() as RunningWorker;
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    each.workers.push(spawnWorker(env));

    let want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0 && (await diffCatalog(s, dir)).length === 0,
      240_000,
      async () => {
        const outputs = each.workers.map((w) => w.output().slice(-2000)).join('\n---\n');
        return `${(await diffFacts(want, dir)).length} runs differ; ${outputs}`;
      },
    );
    // The clock moves: runs arrive and settle, and the next passes follow.
    await s.advance('20m');
    want = truth(s, s.clock.now());
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      120_000,
      async () => `${(await diffFacts(want, dir)).length} runs differ`,
    );
    expect(await diffFacts(want, dir, { quick: false })).toEqual([]);

    const c = await s.counters();
    // Requests arriving in any second, refused ones included: a busy process may send a turn
    // granted just before a window's end after it, so a few may meet the next window full.
    expect(c.busiestSecond).toBeLessThanOrEqual(Math.ceil(LIMIT * 1.15));
    expect((c.byStatus['429'] ?? 0) / c.total).toBeLessThan(0.01);
  });
});
