import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { readFromSummaries } from '../../src/report/from-summaries.ts';
import { runBackfill } from '../../src/sync/backfill.ts';
import { runPass } from '../../src/sync/index.ts';
import { MICROS_PER_DAY } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { rebuildInPlace } from '../../src/warehouse/rebuild.ts';
import { engineFor, perTest, spanStart } from './kit.ts';

// Runs the API deleted: a whole listing of their created day no longer shows them and their
// detail answers not_found. They stay in runs, marked, without their child rows (in the tables and
// the Parquet tree); their states are closed in runs_history (soft) or gone from it (hard). A run
// that comes back is restored; a listing of a day in part (a filtered backfill) deletes nothing.

type Sim = Awaited<ReturnType<ReturnType<typeof perTest>['sim']>>;

/** Runs of the first full day of the simulated span that have child rows. */
function someRuns(sim: Sim, n: number): string[] {
  const from = spanStart(sim) + MICROS_PER_DAY / 4;
  const out: string[] = [];
  for (const { plan, version } of sim.world.visibleRuns(from, from + MICROS_PER_DAY)) {
    if (version.steps > 0 && version.messages > 0) out.push(plan.id);
    if (out.length === n) break;
  }
  return out;
}

async function simAdmin(sim: Sim, what: 'delete' | 'restore', ids: string[]): Promise<string[]> {
  const res = await fetch(`${sim.url}/_sim/runs/${what}`, { method: 'POST', body: JSON.stringify({ ids }) });
  const body = (await res.json()) as Record<string, string[]>;
  return body[what === 'delete' ? 'deleted' : 'restored'] ?? [];
}

interface Facts {
  deleted: boolean[];
  children: number;
  openStates: number;
  states: number;
  closedAtDeletion: number;
  /** Of the runs, how many the ready-made per-run view shows. */
  inViews: number;
  /** The runs the report counts, and the runs the API still has. */
  reported: number;
  live: number;
}

async function facts(dir: string, ids: string[]): Promise<Facts> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    const list = `(${ids.map((i) => `'${i}'`).join(', ')})`;
    const runs = await wh.all<{ d: boolean }>(`SELECT is_deleted AS d FROM runs WHERE id IN ${list} ORDER BY id`);
    const [c] = await wh.all<{ n: bigint }>(
      `SELECT (SELECT count(*) FROM run_messages WHERE run_id IN ${list})
            + (SELECT count(*) FROM run_steps WHERE run_id IN ${list})
            + (SELECT count(*) FROM run_evaluations WHERE run_id IN ${list}) AS n`,
    );
    const [h] = await wh.all<{ open: bigint; all: bigint; closed: bigint }>(
      `SELECT count(*) FILTER (WHERE h.valid_to IS NULL) AS open, count(*) AS "all",
              count(*) FILTER (WHERE h.valid_to = r.deleted_at) AS closed
       FROM runs_history h JOIN runs r USING (id) WHERE h.id IN ${list}`,
    );
    const [v] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM v_run_agent_config WHERE run_id IN ${list}`);
    const report = await readFromSummaries(wh, 1000, 10);
    const [live] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs WHERE NOT is_deleted`);
    return {
      deleted: runs.map((r) => r.d),
      children: Number(c?.n),
      openStates: Number(h?.open),
      states: Number(h?.all),
      closedAtDeletion: Number(h?.closed),
      inViews: Number(v?.n),
      reported: report.days.reduce((n, d) => n + Number(d.runs), 0),
      live: Number(live?.n),
    };
  } finally {
    await wh.close();
  }
}

/** Child rows of the runs in the exported Parquet tree. */
async function parquetChildren(dir: string, ids: string[]): Promise<number> {
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const list = `(${ids.map((i) => `'${i}'`).join(', ')})`;
  const reader = await db.runAndReadAll(
    `SELECT count(*) AS n FROM read_parquet('${join(dir, 'parquet', 'run_steps')}/*/*.parquet', hive_partitioning = true)
     WHERE run_id IN ${list}`,
  );
  const n = Number(reader.getRowObjects()[0]?.n);
  db.closeSync();
  return n;
}

describe('deletions', () => {
  const each = perTest();

  it('soft: marks a run the API deleted, closes its states, and restores it when it comes back', async () => {
    const sim = await each.sim({ seed: 17, size: 300, days: 3 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    try {
      expect((await runPass(engine.deps)).status).toBe('ok');
      const ids = someRuns(sim, 3);
      expect(await parquetChildren(dir, ids)).toBeGreaterThan(0);
      // A reconciliation that finds nothing changed: what a pass costs without deletions.
      sim.counters.reset();
      expect((await runPass(engine.deps, { reconcile: true })).status).toBe('ok');
      const baseline = sim.counters.count('runs.list');
      expect(sim.counters.count('runs.get')).toBe(0);

      expect(await simAdmin(sim, 'delete', ids)).toEqual(ids);
      // A day listed in part (only completed runs) deletes nothing and asks for nothing.
      sim.counters.reset();
      const backfill = await runBackfill(engine.deps, {
        from: spanStart(sim),
        to: sim.clock.now() - MICROS_PER_DAY,
        filter: { status: ['completed'] },
        force: false,
        sliceMicros: MICROS_PER_DAY,
      });
      expect(backfill.status).toBe('ok');
      expect(sim.counters.count('runs.get')).toBe(0);
      expect((await facts(dir, ids)).deleted).toEqual([false, false, false]);

      // A whole re-listing: the runs are missed, asked for once each, and found deleted.
      sim.counters.reset();
      const pass = await runPass(engine.deps, { reconcile: true });
      expect(pass.status).toBe('ok');
      expect(pass.runs.deleted).toBe(3);
      expect(sim.counters.count('runs.list')).toBe(baseline);
      expect(sim.counters.count('runs.get')).toBe(3);
      expect(sim.counters.count('runs.get', 404)).toBe(3);
      const gone = await facts(dir, ids);
      expect(gone).toMatchObject({
        deleted: [true, true, true],
        children: 0,
        openStates: 0,
        closedAtDeletion: 3,
        inViews: 0,
      });
      expect(gone.reported).toBe(gone.live);
      expect(gone.states).toBeGreaterThanOrEqual(3);
      expect(await parquetChildren(dir, ids)).toBe(0);
      // Nothing more is asked for them by the next pass.
      sim.counters.reset();
      expect((await runPass(engine.deps, { reconcile: true })).status).toBe('ok');
      expect(sim.counters.count('runs.get')).toBe(0);

      // A rebuild from the raw archive applies the deletions again.
      await engine.close();
      const before = await facts(dir, ids);
      await rebuildInPlace(dir);
      expect(await facts(dir, ids)).toEqual(before);

      // Back upstream, unchanged: the next whole listing fetches and restores them.
      const again = engineFor({ sim, dir });
      try {
        expect(await simAdmin(sim, 'restore', ids)).toEqual(ids);
        sim.advance('1m');
        expect((await runPass(again.deps, { reconcile: true })).status).toBe('ok');
        const back = await facts(dir, ids);
        expect(back.deleted).toEqual([false, false, false]);
        expect(back.children).toBeGreaterThan(0);
        expect(back.openStates).toBe(3);
        expect(back.inViews).toBe(3);
        expect(back.reported).toBe(back.live);
        expect(back.states).toBe(before.states + 3);
        expect(await parquetChildren(dir, ids)).toBeGreaterThan(0);
      } finally {
        await again.close();
      }
    } finally {
      await engine.close().catch(() => undefined);
    }
  });

  it('hard: a run the API deleted leaves no state in runs_history', async () => {
    const sim = await each.sim({ seed: 19, size: 200, days: 3 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir, env: { RUNSYNC_DELETES: 'hard' } });
    try {
      expect((await runPass(engine.deps)).status).toBe('ok');
      const ids = someRuns(sim, 2);
      sim.world.deleteRuns(ids);
      expect((await runPass(engine.deps, { reconcile: true })).runs.deleted).toBe(2);
      expect(await facts(dir, ids)).toMatchObject({ deleted: [true, true], children: 0, states: 0 });
    } finally {
      await engine.close();
    }
  });
});
