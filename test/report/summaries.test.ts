import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportParquet } from '../../src/export/parquet.ts';
import { type ReportData, readReportData } from '../../src/report/data.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { viewsFixture } from '../views/fixture.ts';
import { tempDir } from '../warehouse/wh-kit.ts';

// The report reads the warehouse's sums per day rather than every row: what it shows must be what
// the views show, however the sums stand (kept by the last export, days changed since, days never
// summed), medians read from the buckets within half a percent.

const SOURCE = { kind: 'warehouse', file: 'runsync.duckdb' } as const;

/** What the report shows from the views (the sums set aside: _report_days is what marks them kept). */
async function fromViews(wh: Warehouse): Promise<ReportData> {
  await wh.run('BEGIN TRANSACTION');
  try {
    await wh.run('ALTER TABLE _report_days RENAME TO _report_days_aside');
    return await readReportData(wh, SOURCE, 0);
  } finally {
    await wh.run('ROLLBACK');
  }
}

function expectSame(got: ReportData, want: ReportData): void {
  expect(got.days).toEqual(want.days);
  expect(got.agents).toEqual(want.agents);
  expect(got.toolTotals).toEqual(want.toolTotals);
  expect(got.tools.map(({ medianSeconds, ...t }) => t)).toEqual(want.tools.map(({ medianSeconds, ...t }) => t));
  for (const [i, t] of got.tools.entries()) {
    const median = want.tools[i]?.medianSeconds ?? null;
    if (median === null || median <= 0) expect(t.medianSeconds, t.name).toBe(median === null ? null : 0);
    else expect(Math.abs((t.medianSeconds as number) / median - 1), t.name).toBeLessThanOrEqual(0.005);
  }
  expect(got.evaluations.map(({ avgNumeric, ...e }) => e)).toEqual(want.evaluations.map(({ avgNumeric, ...e }) => e));
  for (const [i, e] of got.evaluations.entries())
    expect(e.avgNumeric ?? Number.NaN, e.name).toBeCloseTo(want.evaluations[i]?.avgNumeric ?? Number.NaN, 9);
  expect(got.waiting).toEqual(want.waiting);
  expect(got.waitingTotal).toBe(want.waitingTotal);
}

describe('the report from the sums per day', () => {
  const tmp = tempDir('runsync-report-sums-');
  let wh: Warehouse;
  beforeAll(async () => {
    const fixture = await viewsFixture();
    copyFileSync(join(fixture.dir, 'runsync.duckdb'), join(tmp.dir, 'runsync.duckdb'));
    wh = await openWarehouse(tmp.dir);
  });
  afterAll(async () => {
    await wh.close();
    tmp.cleanup();
  });

  it('shows what the views show once the export has summed every day', async () => {
    const [days] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _report_days`);
    const [runDays] = await wh.all<{ n: bigint }>(`SELECT count(DISTINCT created_date) AS n FROM runs`);
    expect(Number(days?.n)).toBe(Number(runDays?.n));
    const got = await readReportData(wh, SOURCE, 0);
    expect(got.tools.length).toBeGreaterThan(3);
    expect(got.evaluations.length).toBeGreaterThan(0);
    expect(got.waitingTotal).toBeGreaterThan(0);
    expectSame(got, await fromViews(wh));
  });

  it('sums from the tables the days changed since the export, and those never summed', async () => {
    const [newest, oldest] = (
      await wh.all<{ d: string }>(
        `SELECT CAST(created_date AS VARCHAR) AS d FROM _report_days
         WHERE created_date IN ((SELECT max(created_date) FROM runs), (SELECT min(created_date) FROM runs))
         ORDER BY 1 DESC`,
      )
    ).map((r) => r.d);
    // A day changed since the export (its runs resolved otherwise, a waiting run approved, a step
    // errored, as a load would change them), marked as loads mark it.
    await wh.run(
      `UPDATE runs SET resolution_type = 'escalated', approval_waiting_for_approval = false
       WHERE created_date = $1::DATE AND hash(id) % 3 = 0`,
      [newest as string],
    );
    await wh.run(
      `UPDATE run_steps SET tool_error = 'timed out', duration_seconds = duration_seconds * 7
       WHERE created_date = $1::DATE AND type = 'tool_call' AND hash(id) % 4 = 0`,
      [newest as string],
    );
    await wh.run(`INSERT INTO _sync_export_dirty (table_name, created_date) VALUES ('runs', $1::DATE)`, [
      newest as string,
    ]);
    // A day never summed (a warehouse made before the sums), with nothing kept for it.
    await wh.run(`DELETE FROM _report_days WHERE created_date = $1::DATE`, [oldest as string]);
    for (const t of [
      '_report_runs_day',
      '_report_tool_calls_day',
      '_report_evaluation_values_day',
      '_report_attributes_day',
      '_report_waiting_day',
    ])
      await wh.run(`DELETE FROM ${t} WHERE created_date = $1::DATE`, [oldest as string]);
    expectSame(await readReportData(wh, SOURCE, 0), await fromViews(wh));
  });

  it('the export sums again the days it writes, and catches up days never summed a few at a time', async () => {
    const [runDays] = await wh.all<{ n: bigint }>(`SELECT count(DISTINCT created_date) AS n FROM runs`);
    const n = Number(runDays?.n);
    // The tree written whole first (the copy has none), which sums every day.
    expect((await exportParquet(wh)).summarized).toHaveLength(n);
    await wh.run(`DELETE FROM _report_days`);
    await wh.run(
      `INSERT INTO _sync_export_dirty (table_name, created_date) SELECT 'runs', max(created_date) FROM runs`,
    );
    const r = await exportParquet(wh);
    // The changed day, and three never summed.
    expect(r.summarized).toHaveLength(4);
    const [days] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _report_days`);
    expect(Number(days?.n)).toBe(4);
    expectSame(await readReportData(wh, SOURCE, 0), await fromViews(wh));
    let passes = 0;
    while ((await exportParquet(wh)).summarized.length > 0) passes++;
    expect(passes).toBe(Math.ceil((n - 4) / 3));
    expectSame(await readReportData(wh, SOURCE, 0), await fromViews(wh));
  });
});
