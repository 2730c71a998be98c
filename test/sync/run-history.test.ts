import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunVersion } from '../../src/simulator/runs.ts';
import { runPass } from '../../src/sync/index.ts';
import { MICROS_PER_DAY, MICROS_PER_SECOND, type Micros } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { rebuildInto } from '../../src/warehouse/rebuild.ts';
import { engineFor, perTest } from './kit.ts';

// A run's day, as runs_history and its views show it: created running, paused waiting for
// approval, running again, completed, and an evaluation recorded later with a corrected
// resolution. The simulator's run goes
// through those versions as its clock passes them; a pass after each one observes it.

type Sim = Awaited<ReturnType<ReturnType<typeof perTest>['sim']>>;

const SHAPE = ['running', 'paused', 'running', 'completed', 'completed'];

/** A run created after `from` whose versions are that day, each at least `gap` after the one before. */
function approvalRun(sim: Sim, from: Micros, gap: Micros): { index: number; versions: RunVersion[] } {
  const runs = sim.world.runs;
  for (let i = runs.firstIndexAtOrAfter(from); i < runs.firstIndexAtOrAfter(from) + 20_000; i++) {
    const p = runs.plan(i, false);
    const v = p.versions;
    if (p.visibleAt !== p.createdAt || v.map((x) => x.status).join() !== SHAPE.join()) continue;
    if (!v[1]?.waiting || (v[4]?.evals ?? 0) <= (v[3]?.evals ?? 0)) continue;
    // The evaluation recorded later comes with a corrected resolution.
    if (!v[3]?.resolution || v[4]?.resolution?.type === v[3].resolution.type) continue;
    const spaced = v.every((x, k) => k === 0 || x.at - (v[k - 1] as RunVersion).at >= gap);
    if (spaced && (v[4] as RunVersion).at - p.createdAt < MICROS_PER_DAY) return { index: i, versions: v };
  }
  throw new Error('no run with that day in the simulated world');
}

const seconds = (us: number) => us / MICROS_PER_SECOND;

describe('runs_history', () => {
  const each = perTest();

  it('holds every observed state of a run over a day, and the views give its durations', async () => {
    const sim = await each.sim({ seed: 5, size: 300, days: 2 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    let open = true;
    try {
      const { index, versions } = approvalRun(sim, sim.clock.now() + MICROS_PER_SECOND, 30 * MICROS_PER_SECOND);
      const id = sim.world.runs.plan(index).id;
      const created = versions[0]?.at as Micros;
      expect((await runPass(engine.deps)).status).toBe('ok');
      // One pass a little after each version: the last, an evaluation recorded after the run
      // settled, is found by reconciliation.
      for (const [k, v] of versions.entries()) {
        sim.advance(v.at + (k === 0 ? 10 : 1) * MICROS_PER_SECOND - sim.clock.now());
        expect((await runPass(engine.deps, { reconcile: k === versions.length - 1 })).status).toBe('ok');
      }
      // A pass that finds nothing new makes no new state.
      sim.advance('1m');
      expect((await runPass(engine.deps, { reconcile: true })).status).toBe('ok');
      open = false;
      await engine.close();

      const wh = await openWarehouse(dir, { readOnly: true });
      try {
        const states = await wh.all<{ status: string; w: boolean; from: bigint; to: bigint | null; e: bigint }>(
          `SELECT status, approval_waiting_for_approval AS w, epoch_us(valid_from) AS "from",
                  epoch_us(valid_to) AS "to", evaluation_count AS e
           FROM runs_history WHERE id = $1 ORDER BY valid_from`,
          [id],
        );
        expect(states.map((s) => s.status)).toEqual(SHAPE);
        expect(states.map((s) => s.w)).toEqual([false, true, false, false, false]);
        expect(states.map((s) => Number(s.from))).toEqual(versions.map((v) => v.at));
        expect(states.map((s) => (s.to === null ? null : Number(s.to)))).toEqual([
          ...versions.slice(1).map((v) => v.at),
          null,
        ]);
        expect(Number(states[4]?.e)).toBe(Number(states[3]?.e) + 1);

        const at = (k: number) => (versions[k] as RunVersion).at;
        const durations = await wh.all<{ status: string; to: number; in: number; cur: boolean }>(
          `SELECT status, seconds_to_status AS "to", seconds_in_status AS "in", is_current AS cur
           FROM run_status_durations WHERE run_id = $1 ORDER BY first_at`,
          [id],
        );
        expect(durations).toEqual([
          { status: 'running', to: 0, in: seconds(at(1) - at(0) + at(3) - at(2)), cur: false },
          { status: 'paused', to: seconds(at(1) - created), in: seconds(at(2) - at(1)), cur: false },
          { status: 'completed', to: seconds(at(3) - created), in: seconds(at(4) - at(3)), cur: true },
        ]);
        const waits = await wh.all<{ s: number }>(
          `SELECT seconds_waited AS s FROM run_approval_waits WHERE run_id = $1`,
          [id],
        );
        expect(waits).toEqual([{ s: seconds(at(2) - at(1)) }]);
        const moves = await wh.all<{ from: string | null; to: string }>(
          `SELECT from_status AS "from", to_status AS "to" FROM run_transitions WHERE run_id = $1 ORDER BY seq`,
          [id],
        );
        expect(moves).toEqual([
          { from: null, to: 'running' },
          { from: 'running', to: 'paused' },
          { from: 'paused', to: 'running' },
          { from: 'running', to: 'completed' },
          { from: 'completed', to: 'completed' },
        ]);
        const corrected = await wh.all<{ from: string; to: string }>(
          `SELECT from_resolution_type AS "from", to_resolution_type AS "to" FROM run_resolution_changes WHERE run_id = $1`,
          [id],
        );
        expect(corrected).toEqual([{ from: versions[3]?.resolution?.type, to: versions[4]?.resolution?.type }]);
        const reopened = await wh.all(`SELECT * FROM run_reopened WHERE run_id = $1`, [id]);
        expect(reopened).toEqual([]);
        // Every run has exactly one current state, the one runs holds.
        const [check] = await wh.all<{ runs: bigint; current: bigint; same: bigint }>(
          `SELECT (SELECT count(*) FROM runs) AS runs, count(*) AS current,
                  count(*) FILTER (WHERE h.updated_at = r.updated_at AND h.status IS NOT DISTINCT FROM r.status) AS same
           FROM runs_history h JOIN runs r USING (id) WHERE h.valid_to IS NULL`,
        );
        expect(check?.current).toBe(check?.runs);
        expect(check?.same).toBe(check?.runs);
      } finally {
        await wh.close();
      }

      // Rebuild from the raw archive gives the same history.
      const fresh = join(each.dir(), 'rebuilt');
      await rebuildInto(dir, fresh);
      expect(await historyOf(fresh)).toEqual(await historyOf(dir));
    } finally {
      if (open) await engine.close();
    }
  });
});

async function historyOf(dir: string): Promise<unknown[]> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    return await wh.all(
      `SELECT * EXCLUDE (observed_at), epoch_us(observed_at) AS observed_us FROM runs_history ORDER BY id, valid_from`,
    );
  } finally {
    await wh.close();
  }
}
