import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/commands/status.ts';
import { readReportData } from '../../src/report/data.ts';
import { type Change, type ChangeKind, catalogChanges, runChanges } from '../../src/simulator/changes.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { RECHECK_MAX } from '../../src/sync/open-due.ts';
import { readStatus } from '../../src/sync/status.ts';
import { MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { sqlRunner } from '../../src/warehouse/sql.ts';
import { engineFor, SETTLE, startSim, stored, tempDir, truth } from './kit.ts';

// Freshness end to end: the simulator's clock moves 45 seconds between passes while runs arrive
// (some late), open runs move and settle, settled runs change again and catalog objects are edited
// or removed. After every pass the Parquet tree is read as a BI tool reads it, and each change is
// timed from when the API first showed it to the first pass that left it in Parquet: new runs
// within a pass or two, changes to open runs as they come due, changes to settled runs within the
// reconciliation interval (scaled from an hour to 10 minutes here), the catalog with every pass.

const STEP = 45 * MICROS_PER_SECOND;
const EVERY = 10 * MICROS_PER_MINUTE;
const PASSES = 20;

/** What the Parquet tree holds: updated_at by table and id. */
async function parquetState(dir: string): Promise<Map<string, Micros>> {
  const instance = await DuckDBInstance.create(':memory:');
  const db = sqlRunner(await instance.connect());
  const out = new Map<string, Micros>();
  try {
    const tree = `${dir}/parquet`;
    const sources = [
      ['runs', `read_parquet('${tree}/runs/*/*.parquet', hive_partitioning = true)`],
      ...['tools', 'agents', 'guidelines', 'guardrails', 'runbooks'].map((t) => [t, `'${tree}/${t}/*.parquet'`]),
    ];
    for (const [table, source] of sources) {
      const rows = await db.all<{ id: string; u: bigint }>(`SELECT id, epoch_us(updated_at) AS u FROM ${source}`);
      for (const r of rows) out.set(`${table}/${r.id}`, Number(r.u));
    }
  } finally {
    instance.closeSync();
  }
  return out;
}

function arrived(c: Change, seen: Map<string, Micros>): boolean {
  const u = seen.get(`${c.table}/${c.id}`);
  return c.updatedAt === null ? u === undefined : u !== undefined && u >= c.updatedAt;
}

const seconds = (us: number) => us / MICROS_PER_SECOND;
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0;

describe('freshness with the clock moving', () => {
  let sim: Simulator | null = null;
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    await sim?.close();
    sim = null;
    for (const c of cleanups.splice(0)) c();
  });

  it('puts every change in Parquet within its goal, and leaves the warehouse exact', { timeout: 400_000 }, async () => {
    sim = await startSim({
      seed: 47,
      size: 3000,
      days: 3,
      runs: { postSettleFraction: 1, lateFraction: 0.1 },
      catalog: { tools: 400, agents: 30, guidelines: 200, guardrails: 60, runbooks: 120 },
    });
    const s = sim;
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const engine = engineFor({ sim: s, dir: tmp.dir, env: { RUNSYNC_RECONCILE_EVERY: '10m' } });
    const arrivals = new Map<Change, Micros>();
    const pending: Change[] = [];
    try {
      // The first sync loads history: its lags are not news, and are not measured.
      await runPass(engine.deps);
      let t = s.clock.now();
      for (let i = 0; i < PASSES; i++) {
        s.advance('45s');
        const now = s.clock.now();
        pending.push(...runChanges(s.world, t, now), ...catalogChanges(s.world, t, now));
        t = now;
        const r = await runPass(engine.deps);
        expect(r.status, r.errors.join('; ')).toBe('ok');
        const seen = await parquetState(tmp.dir);
        for (let j = pending.length - 1; j >= 0; j--) {
          const c = pending[j] as Change;
          if (!arrived(c, seen)) continue;
          arrivals.set(c, now - c.shownAt);
          pending.splice(j, 1);
        }
      }
      // Whatever is still on its way must be younger than its bound.
      const end = s.clock.now();
      for (const c of pending) {
        const bound = { 'settled run': EVERY, 'open run': RECHECK_MAX + STEP, 'new run': 2 * STEP, catalog: STEP }[
          c.kind
        ];
        expect(end - c.shownAt, `${c.kind} ${c.table}/${c.id}`).toBeLessThan(bound);
      }

      const lags = (kind: ChangeKind) => [...arrivals].filter(([c]) => c.kind === kind).map(([, l]) => seconds(l));
      expect(lags('new run').length).toBeGreaterThan(5);
      expect(quantile(lags('new run'), 0.95)).toBeLessThanOrEqual(60);
      expect(Math.max(...lags('new run'))).toBeLessThanOrEqual(seconds(2 * STEP + SETTLE));
      // An open run is looked at again after an eighth of the time it had been quiet, at least every
      // RECHECK_MAX: most changes come within a pass or two, a change after a long quiet later.
      expect(lags('open run').length).toBeGreaterThan(5);
      expect(quantile(lags('open run'), 0.5)).toBeLessThanOrEqual(seconds(STEP));
      expect(Math.max(...lags('open run'))).toBeLessThanOrEqual(seconds(RECHECK_MAX + STEP));
      // Changes to long-settled runs wait for the rolling reconciliation: within its interval.
      expect(lags('settled run').length).toBeGreaterThan(3);
      expect(Math.max(...lags('settled run'))).toBeLessThanOrEqual(seconds(EVERY + STEP));
      // Every pass snapshots the catalog.
      expect(lags('catalog').length).toBeGreaterThan(0);
      expect(Math.max(...lags('catalog'))).toBeLessThanOrEqual(seconds(STEP));

      // The same figures as runsync measured them, in status and in the report.
      const wh = await openWarehouse(tmp.dir, { readOnly: true });
      try {
        const status = await readStatus(wh);
        expect(status.lag.parquet?.p95).toBeLessThanOrEqual(seconds(EVERY + STEP));
        expect(status.lag.catalog.parquet?.max).toBeLessThanOrEqual(seconds(STEP));
        const said = statusLines(wh.file, status, end).join('\n');
        expect(said).toMatch(/^lag +changes of the last hour \(\d+ catalog objects\): to the warehouse p50 /m);
        const report = await readReportData(wh, { kind: 'warehouse', file: wh.file }, end);
        expect(report.lag?.lastHour.catalog.parquet?.count).toBeGreaterThan(0);
        // The round under way began at most an interval ago, and the one before it at most two.
        expect(report.lag?.horizonVerifiedSince).toBeGreaterThanOrEqual(end - 2 * EVERY);
      } finally {
        await wh.close();
      }

      // A whole-horizon pass at the end leaves the warehouse exact.
      await runPass(engine.deps, { reconcile: true, export: false });
      const want = truth(s, s.clock.now() - SETTLE);
      expect(await stored(tmp.dir)).toEqual(want);
    } finally {
      await engine.close();
    }
  });
});
