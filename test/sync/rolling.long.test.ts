import { afterEach, describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/commands/status.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { type Engine, type PassResult, runPass } from '../../src/sync/index.ts';
import { readStatus } from '../../src/sync/status.ts';
import { MICROS_PER_MINUTE } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { engineFor, type RunFacts, SETTLE, startSim, stored, tempDir, truth } from './kit.ts';

// Rolling reconciliation: runs that looked settled and changed later (an evaluation recorded, a
// resolution corrected) are caught by plain passes, each re-listing a step of the horizon, so no
// run goes unchecked longer than RUNSYNC_RECONCILE_EVERY.

const EVERY = 60 * MICROS_PER_MINUTE;
const GAP = 10 * MICROS_PER_MINUTE;

/** Runs whose last change is older than `before` and that the warehouse does not show as they are. */
function stale(want: Map<string, RunFacts>, have: Map<string, RunFacts>, before: number): string[] {
  const out: string[] = [];
  for (const [id, w] of want) {
    if (w.updatedAt >= before) continue;
    if (JSON.stringify(have.get(id)) !== JSON.stringify(w)) out.push(id);
  }
  return out;
}

describe('rolling reconciliation', () => {
  let sim: Simulator | null = null;
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    await sim?.close();
    sim = null;
    for (const c of cleanups.splice(0)) c();
  });

  it('catches changes to long-settled runs within RUNSYNC_RECONCILE_EVERY, a step per pass', async () => {
    sim = await startSim({ seed: 21, size: 400, days: 12, runs: { postSettleFraction: 0.3 } });
    const s = sim;
    const on = tempDir();
    const off = tempDir();
    cleanups.push(on.cleanup, off.cleanup);
    const engines: Engine[] = [
      engineFor({ sim: s, dir: on.dir, env: { RUNSYNC_RECONCILE_EVERY: '1h' } }),
      engineFor({ sim: s, dir: off.dir, env: { RUNSYNC_RECONCILE_EVERY: 'off' } }),
    ];
    const [rolling, plain] = engines as [Engine, Engine];
    const steps: PassResult[] = [];
    try {
      await runPass(rolling.deps, { export: false });
      await runPass(plain.deps, { export: false });
      // Three days on: settled runs changed meanwhile, far behind the lookback; then a pass every
      // ten minutes for a little more than the interval.
      s.advance('3d');
      for (let i = 0; i < 8; i++) {
        steps.push(await runPass(rolling.deps, { export: false }));
        await runPass(plain.deps, { export: false });
        s.advance('10m');
      }
    } finally {
      for (const e of engines) await e.close();
    }
    const now = s.clock.now();
    const want = truth(s, now - SETTLE);
    const settledBefore = now - EVERY;
    expect(stale(want, await stored(on.dir), settledBefore)).toEqual([]);
    // The same passes without it leave some of those behind: the test can tell the difference.
    expect(stale(want, await stored(off.dir), settledBefore).length).toBeGreaterThan(3);

    // The first pass after three days re-listed the whole horizon; the next ones a step each, a
    // round spread over the passes.
    const walked = steps.filter((p) => p.rolling?.step);
    expect(walked.length).toBeGreaterThanOrEqual(6);
    expect(steps.every((p) => p.status === 'ok')).toBe(true);
    const spans = walked.slice(1).map((p) => (p.rolling?.step?.to ?? 0) - (p.rolling?.step?.from ?? 0));
    const horizon = 30 * 24 * 60 * MICROS_PER_MINUTE;
    expect(Math.max(...spans)).toBeLessThan(horizon / 2);

    // How fresh: after the first pass past the gap, every change arrived within the interval (and a
    // pass), most within the ten minutes between passes.
    const measured = steps.slice(1).flatMap((p) => (p.freshness?.warehouse ? [p.freshness.warehouse] : []));
    expect(measured.length).toBeGreaterThanOrEqual(2);
    for (const lag of measured) expect(lag.max, JSON.stringify(lag)).toBeLessThanOrEqual((EVERY + GAP) / 1e6);
    expect(Math.max(...measured.map((l) => l.p50))).toBeLessThanOrEqual(GAP / 1e6);

    const wh = await openWarehouse(on.dir, { readOnly: true });
    try {
      const said = statusLines(`${on.dir}/runsync.duckdb`, await readStatus(wh), now).join('\n');
      expect(said).toMatch(
        /^reconcile +rolling: every run of the horizon looked at since .* ago\); a round takes about/m,
      );
      expect(said).toMatch(/^lag +changes of the last hour \(\d+ runs\): to the warehouse p50 .*, p95 .*, max .*$/m);
    } finally {
      await wh.close();
    }
  });

  it('is held to RUNSYNC_RECONCILE_BUDGET of the key rate, and says a round then takes longer', async () => {
    sim = await startSim({ seed: 22, size: 400, days: 12, runs: { postSettleFraction: 0.2 } });
    const s = sim;
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    // 200 requests/s × 0.0002% and an hour between passes: about 1.4 list requests, 140 runs, a
    // step, where the horizon holds 400.
    const engine = engineFor({
      sim: s,
      dir: tmp.dir,
      env: { RUNSYNC_RECONCILE_EVERY: '1h', RUNSYNC_RECONCILE_BUDGET: '0.0002%', RUNSYNC_RATE_LIMIT: '200' },
    });
    const results: PassResult[] = [];
    try {
      await runPass(engine.deps, { export: false });
      for (let i = 0; i < 3; i++) {
        s.advance('1h');
        results.push(await runPass(engine.deps, { export: false }));
      }
    } finally {
      await engine.close();
    }
    const limited = results.filter((r) => r.rolling?.limitedByBudget);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.every((r) => (r.rolling?.roundMicros ?? 0) > EVERY)).toBe(true);
    const wh = await openWarehouse(tmp.dir, { readOnly: true });
    try {
      const said = statusLines(`${tmp.dir}/runsync.duckdb`, await readStatus(wh), s.clock.now()).join('\n');
      expect(said).toMatch(/RUNSYNC_RECONCILE_BUDGET holds a round to about/);
    } finally {
      await wh.close();
    }
  });
});
