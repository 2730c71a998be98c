import { describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_MINUTE, type Micros } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/open.ts';
import { runCli } from '../support/cli.ts';
import { perTest, SETTLE, stored, truth } from './kit.ts';

// This machine's clock and the API's may differ by minutes (a VM without NTP, a container).
// runsync takes the API's time from its Date header for windows, caps and X-RateLimit-Reset, so
// a skew loses no run and adds no wait, and `status` says the clocks differ.

describe("an API whose clock differs from this machine's", () => {
  const each = perTest();

  it.each([
    ['an hour ahead', 60],
    ['20 minutes behind', -20],
  ])('%s: two syncs load every run created before each, without waiting', { timeout: 180_000 }, async (_, minutes) => {
    const offset = minutes * MICROS_PER_MINUTE;
    const sims: Simulator[] = [];
    // A wall clock at speed 1, `offset` from this machine's: its Date and Reset headers follow it.
    const sim = await startSimulator({
      port: 0,
      seed: 33,
      size: 500,
      days: 0.02,
      clock: 'wall',
      now: systemMicros() + offset,
      runs: { lateFraction: 0 },
      rateLimit: { perKey: { limit: 100, windowSeconds: 2 } },
    });
    sims.push(sim);
    const dir = each.dir();
    const env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: formatTimestamp((sim.clock.now() - 0.03 * 86_400_000_000) as Micros),
    };
    try {
      const expectAllBefore = async (before: Micros) => {
        const have = await stored(dir);
        const missing = [...truth(sim, before).keys()].filter((id) => !have.has(id));
        expect(missing).toEqual([]);
      };
      for (let pass = 0; pass < 2; pass++) {
        const startedAt = sim.clock.now();
        const t0 = Date.now();
        const r = await runCli(['sync', '--no-export'], env);
        expect(r.code, r.stderr).toBe(0);
        // A Reset read on this machine's clock would have held the pass for as long as the skew.
        expect(Date.now() - t0).toBeLessThan(90_000);
        await expectAllBefore((startedAt - SETTLE) as Micros);
        // New runs appear every few seconds: the second pass has some to find.
        if (pass === 0) await new Promise((r) => setTimeout(r, 8000));
      }
      const status = await runCli(['status'], env);
      const way = minutes > 0 ? 'ahead of' : 'behind';
      expect(status.stdout).toMatch(new RegExp(`the API's clock is (60 ?min|1 ?h|20 ?min) ${way} this machine's`));
    } finally {
      for (const s of sims) await s.close();
    }
  });
});
