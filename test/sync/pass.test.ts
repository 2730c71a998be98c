import { describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { type PassResult, runPass } from '../../src/sync/index.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { diffCatalog, diffWithTruth, engineFor, perTest, SETTLE } from './kit.ts';

// The whole pass against the simulator with its clock moving: after every pass the warehouse is
// the simulator's ground truth, run for run (status, updated_at, every child row) and object for
// object in the catalog.

describe('sync passes against the simulator', () => {
  const each = perTest();

  async function expectExact(s: Simulator, dir: string): Promise<void> {
    expect(await diffWithTruth(s, dir, s.clock.now() - SETTLE)).toEqual([]);
    expect(await diffCatalog(s, dir)).toEqual([]);
  }

  it('follows new runs, late arrivals, runs settling weeks later, and catalog edits and deletions', async () => {
    // Every change happens to a run still open, so plain passes (no reconciliation) must be exact.
    const sim = await each.sim({ size: 400, runs: { postSettleFraction: 0 } });
    const dir = each.dir();
    const engine = engineFor({ sim, dir: dir });
    const passes: PassResult[] = [];
    try {
      passes.push(await runPass(engine.deps));
      await expectExact(sim, dir);
      for (const step of ['7m', '1d', '6d', '12d']) {
        sim.advance(step);
        passes.push(await runPass(engine.deps));
        await expectExact(sim, dir);
      }
    } finally {
      await engine.close();
    }
    expect(passes.every((p) => p.status === 'ok')).toBe(true);
    // Later passes changed things and found them by the open-run refresh, not by re-reading history.
    const later = passes.slice(1);
    expect(later.reduce((a, p) => a + p.runs.changed, 0)).toBeGreaterThan(10);
    expect(later.reduce((a, p) => a + p.openRunsChecked, 0)).toBeGreaterThan(0);
    const catalogChanges = later.reduce(
      (a, p) => a + Object.values(p.catalog?.tables ?? {}).reduce((b, t) => b + t.changed + t.deleted + t.added, 0),
      0,
    );
    expect(catalogChanges).toBeGreaterThan(0);
    // Each pass left its audit row.
    const wh = await openWarehouse(dir, { readOnly: true });
    try {
      const rows = await wh.all<{ status: string; n: bigint }>(
        `SELECT status, count(*) AS n FROM _sync_audit GROUP BY status`,
      );
      expect(rows).toEqual([{ status: 'ok', n: BigInt(passes.length) }]);
    } finally {
      await wh.close();
    }
  });

  it('with --reconcile, also catches runs that changed after they looked settled', async () => {
    const sim = await each.sim({ seed: 12, size: 300, runs: { postSettleFraction: 0.3 } });
    const dir = each.dir();
    // Without the rolling reconciliation, which would catch them over the passes.
    const engine = engineFor({ sim, dir: dir, env: { RUNSYNC_RECONCILE_EVERY: 'off' } });
    try {
      await runPass(engine.deps);
      sim.advance('3d');
      const plain = await runPass(engine.deps);
      const missed = await diffWithTruth(sim, dir, sim.clock.now() - SETTLE);
      // Without reconciliation, changes to settled runs older than the lookback are not seen.
      expect(missed.length).toBeGreaterThan(0);
      const reconciled = await runPass(engine.deps, { reconcile: true });
      expect(reconciled.reconciled).not.toBeNull();
      await expectExact(sim, dir);
      // It listed the horizon by summaries and fetched only what moved.
      expect(reconciled.runs.fetched).toBe(missed.length);
      // About one list request per 100 runs of the horizon (plus the live window's and the refresh's).
      expect(reconciled.runs.pages).toBeLessThanOrEqual(Math.ceil(reconciled.runs.listed / 100) + 3);
      expect(plain.status).toBe('ok');
    } finally {
      await engine.close();
    }
  });

  it('ends exact with every fault of the simulator switched on', async () => {
    const sim = await each.sim({
      seed: 13,
      size: 300,
      runs: { postSettleFraction: 0 },
      faults: {
        serverErrorRate: 0.05,
        burst429Rate: 0.005,
        burst429Seconds: 1,
        resetRate: 0.02,
        latencyRate: 0.05,
        latencyMaxMs: 300,
        malformedRate: 0.02,
        truncatedRate: 0.02,
        seed: 5,
      },
    });
    const dir = each.dir();
    const engine = engineFor({
      sim,
      dir: dir,
      options: { retry: { baseDelayMs: 2, maxDelayMs: 20, maxAttempts: 8 } },
    });
    try {
      const first = await runPass(engine.deps);
      expect(first.requests.retries).toBeGreaterThan(0);
      for (const step of ['1h', '2d']) {
        sim.advance(step);
        await runPass(engine.deps);
      }
      await expectExact(sim, dir);
    } finally {
      await engine.close();
    }
  });
});
