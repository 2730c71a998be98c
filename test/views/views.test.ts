import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { ANALYTICS_FILE, openWarehouse, type Warehouse } from '../../src/warehouse/index.ts';
import { sqlRunner } from '../../src/warehouse/sql.ts';
import { diffWithTruth, SETTLE } from '../sync/kit.ts';
import { close, expectSame, rows } from './compare.ts';
import { fixtureTruth, type ViewsFixture, viewsFixture } from './fixture.ts';
import {
  agentVersions,
  awaitingApproval,
  byAgent,
  byCategory,
  evaluationAttributes,
  evaluationValues,
  groupBy,
  resolutionCounts,
  runAgentConfig,
  seenCatalog,
  type TruthRun,
  toolStats,
  truthRuns,
} from './truth.ts';

// The ready-made views (schemas/duckdb/views.sql) against a warehouse synced from the simulator,
// each figure computed again in TypeScript from the simulator's ground truth; then the same views
// in analytics.duckdb, over the Parquet tree, give the same answers.

const VIEWS = [
  'v_runs_daily',
  'v_runs_daily_resolution',
  'v_resolution_by_agent',
  'v_resolution_by_category',
  'v_tool_stats',
  'v_runs_awaiting_approval',
  'v_evaluation_values',
  'v_evaluation_attributes',
  'v_run_agent_config',
  'v_table_freshness',
];

describe('ready-made views', () => {
  let fixture: ViewsFixture;
  let sim: Simulator;
  let wh: Warehouse;
  let runs: TruthRun[];

  beforeAll(async () => {
    fixture = await viewsFixture();
    sim = await fixtureTruth(fixture);
    wh = await openWarehouse(fixture.dir, { readOnly: true });
    runs = truthRuns(sim, sim.clock.now() - SETTLE);
  }, 180_000);
  afterAll(async () => {
    await wh?.close();
    await sim?.close();
  });

  it('stand on a warehouse that is the ground truth, with agents edited between passes', async () => {
    await wh.close();
    expect(await diffWithTruth(sim, fixture.dir, sim.clock.now() - SETTLE)).toEqual([]);
    wh = await openWarehouse(fixture.dir, { readOnly: true });
    const versions = await rows(wh, `SELECT count(*) AS n, count(DISTINCT id) AS agents FROM agents_history`);
    expect(versions[0]?.n as number).toBeGreaterThan((versions[0]?.agents as number) + 2);
  });

  it('v_runs_daily and v_runs_daily_resolution count runs per day by status and resolution', async () => {
    const daily = await rows(
      wh,
      `SELECT CAST(day AS VARCHAR) AS day, status, resolution_type, runs, waiting_for_approval, avg_duration_seconds
       FROM v_runs_daily`,
    );
    const key = (day: unknown, status: unknown, res: unknown) => `${String(day)} ${String(status)} ${String(res)}`;
    const want = new Map<string, Record<string, unknown>>();
    for (const [k, group] of groupBy(runs, (r) => key(r.day, r.status, r.resolution))) {
      want.set(k, {
        runs: group.length,
        waiting_for_approval: group.filter((r) => r.waiting).length,
        avg_duration_seconds: group.reduce((a, r) => a + r.duration, 0) / group.length,
      });
    }
    expectSame(new Map(daily.map((r) => [key(r.day, r.status, r.resolution_type), r])), want, 'v_runs_daily');
    expect(new Set(daily.map((r) => r.status)).size).toBeGreaterThan(2);

    const wide = await rows(wh, `SELECT CAST(day AS VARCHAR) AS day, * EXCLUDE (day) FROM v_runs_daily_resolution`);
    const wantWide = new Map(
      [...groupBy(runs, (r) => r.day)].map(([day, group]) => [
        day,
        { ...resolutionCounts(group), other_resolution: 0 },
      ]),
    );
    expectSame(new Map(wide.map((r) => [r.day as string, r])), wantWide, 'v_runs_daily_resolution');
    expect(wide.map((r) => r.day)).toEqual([...wantWide.keys()].sort());
  });

  it('v_resolution_by_agent and v_resolution_by_category give deflection and escalation rates', async () => {
    const agents = await rows(wh, `SELECT coalesce(agent_id, '') AS k, * FROM v_resolution_by_agent`);
    const seen = seenCatalog(sim, 'agent', fixture.passTimes);
    expectSame(new Map(agents.map((r) => [r.k as string, r])), byAgent(seen, runs), 'v_resolution_by_agent');
    expect(agents.length).toBeGreaterThan(5);
    const categories = await rows(wh, `SELECT coalesce(category_id, '') AS k, * FROM v_resolution_by_category`);
    expectSame(new Map(categories.map((r) => [r.k as string, r])), byCategory(runs), 'v_resolution_by_category');
    // Busiest first.
    expect(agents.map((r) => r.runs)).toEqual(agents.map((r) => r.runs as number).sort((a, b) => b - a));
  });

  it('v_tool_stats counts calls, errors and the median duration per tool, joined to the catalog', async () => {
    const tools = await rows(wh, `SELECT coalesce(tool_id, tool_name || ' ' || tool_type) AS k, * FROM v_tool_stats`);
    const labels = new Map(sim.world.toolOptions().map((o) => [o.tool_name as string, o.display_name as string]));
    const want = toolStats(seenCatalog(sim, 'tool', fixture.passTimes), labels, runs);
    expectSame(new Map(tools.map((r) => [r.k as string, r])), want, 'v_tool_stats');
    // The data has both: tools called that the catalog no longer lists, and errors.
    expect(tools.some((r) => !r.in_catalog && (r.calls as number) > 0)).toBe(true);
    expect(tools.reduce((a, r) => a + (r.errors as number), 0)).toBeGreaterThan(0);
    // Every tool-call step is counted once, and only those.
    const [steps] = await rows(wh, `SELECT count(*) AS n FROM run_steps WHERE type = 'tool_call'`);
    expect(tools.reduce((a, r) => a + (r.calls as number), 0)).toBe(steps?.n);
  });

  it('v_runs_awaiting_approval lists the runs waiting for an approval, with the pending tool', async () => {
    const waiting = await rows(
      wh,
      `SELECT run_id, pending_tool_name, epoch_us(pending_step_at) AS at FROM v_runs_awaiting_approval`,
    );
    const want = awaitingApproval(runs);
    expect(want.size).toBeGreaterThan(0);
    expectSame(
      new Map(waiting.map((r) => [r.run_id as string, { tool: r.pending_tool_name, stepAt: r.at }])),
      new Map([...want].map(([k, v]) => [k, { ...v }])),
      'v_runs_awaiting_approval',
    );
  });

  it('v_evaluation_values and v_evaluation_attributes give the distribution of evaluation values', async () => {
    const values = await rows(wh, `SELECT attribute_id || ' ' || value AS k, * FROM v_evaluation_values`);
    expectSame(new Map(values.map((r) => [r.k as string, r])), evaluationValues(runs), 'v_evaluation_values');
    const attrs = await rows(wh, `SELECT * FROM v_evaluation_attributes`);
    const want = evaluationAttributes(runs);
    expectSame(new Map(attrs.map((r) => [r.attribute_id as string, r])), want, 'v_evaluation_attributes');
    expect([...want.values()].some((a) => (a.numeric_evaluations as number) > 0)).toBe(true);
  });

  it('v_run_agent_config joins each run to its agent as configured when the run was created', async () => {
    const have = await rows(
      wh,
      `SELECT run_id, agent_config_match, epoch_us(agent_updated_at) AS u, agent_version_deleted AS d,
              agent_instructions
       FROM v_run_agent_config`,
    );
    const want = runAgentConfig(runs, agentVersions(sim, fixture.passTimes));
    expectSame(
      new Map(have.map((r) => [r.run_id as string, { match: r.agent_config_match, updatedAt: r.u, deleted: r.d }])),
      new Map([...want].map(([k, v]) => [k, { ...v }])),
      'v_run_agent_config',
    );
    // Both kinds occur, and some runs of one agent were made under different configurations.
    const matches = new Set([...want.values()].map((v) => v.match));
    expect(matches).toEqual(new Set(['as_of_creation', 'earliest_known']));
    const perAgent = await rows(
      wh,
      `SELECT agent_id, count(DISTINCT agent_version_hash) AS n FROM v_run_agent_config GROUP BY agent_id HAVING n > 1`,
    );
    expect(perAgent.length).toBeGreaterThan(0);
    expect(have.every((r) => typeof r.agent_instructions === 'string')).toBe(true);
  });

  it('v_table_freshness gives each table its rows and newest change', async () => {
    const fresh = new Map(
      (await rows(wh, `SELECT table_name, row_count, epoch_us(newest_change_at) AS newest FROM v_table_freshness`)).map(
        (r) => [r.table_name as string, r],
      ),
    );
    expect(fresh.get('runs')).toEqual({
      table_name: 'runs',
      row_count: runs.length,
      newest: Math.max(...runs.map((r) => parseTimestamp(r.detail.updated_at as string) as Micros)),
    });
    expect(fresh.get('agents')?.row_count).toBe(sim.world.catalogObjects('agent').length);
    expect(fresh.get('tools')?.row_count).toBe(sim.world.catalogObjects('tool').length);
  });

  it('answer the same in analytics.duckdb, over the Parquet tree', async () => {
    const instance = await DuckDBInstance.create(join(fixture.dir, ANALYTICS_FILE), { access_mode: 'READ_ONLY' });
    const conn = await instance.connect();
    try {
      const analytics = sqlRunner(conn);
      await analytics.run(`SET TimeZone = 'UTC'`);
      for (const v of VIEWS) {
        const q = `SELECT * FROM ${v} ORDER BY ALL`;
        const a = await rows(analytics, q);
        const w = await rows(wh, q);
        expect(a.length, v).toBe(w.length);
        const diffs = a.flatMap((row, i) =>
          Object.entries(row)
            .filter(
              ([k, x]) =>
                !close(x, (w[i] as Record<string, unknown>)[k]) &&
                JSON.stringify(x) !== JSON.stringify((w[i] as Record<string, unknown>)[k]),
            )
            .map(([k]) => `${v} row ${i} ${k}`),
        );
        expect(diffs.slice(0, 5), v).toEqual([]);
      }
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });
});
