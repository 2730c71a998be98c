import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json, Simulator } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { formatTimestamp, type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { ANALYTICS_FILE, openWarehouse, type SqlRunner, type Warehouse } from '../../src/warehouse/index.ts';
import { sqlRunner } from '../../src/warehouse/sql.ts';
import { type HostileProxy, hostileProxy } from '../hostile/proxy.ts';
import { engineFor, SETTLE, startSim, tempDir } from '../sync/kit.ts';
import { expectSame, rows } from './compare.ts';
import { byAgent, byCategory, evaluationAttributes, seenCatalog, toolStats, truthRuns } from './truth.ts';

// The views that group by agent, category and tool, over an API whose names change and go
// missing: between two passes a category, an agent and a tool are renamed (runs created after
// that carry the new names, the catalog shows them), one category never has a name, and the
// simulator's own runs leave category ids and names empty now and then. A proxy in front of the
// simulator does the renaming; the truth applies the same renaming to the simulator's ground truth.

const SIM = { seed: 31, size: 400, days: 8, runs: { postSettleFraction: 0 } };

interface Renames {
  /** Runs created at or after this carry the new names; the catalog shows them once `on`. */
  from: Micros;
  on: boolean;
  category: { id: string; to: string };
  nameless: string;
  agent: { id: string; to: string };
  tool: { name: string; to: string };
}

function renameRun(detail: Json, r: Renames): Json {
  const d = structuredClone(detail);
  const category = d.category as { id: string | null; name: string | null } | null;
  if (category?.id === r.nameless) category.name = null;
  const created = parseTimestamp(d.created_at as string) as Micros;
  if (!r.on || created < r.from) return d;
  if (category && category.id === r.category.id && category.name !== null) category.name = r.category.to;
  const agent = d.agent as { id: string | null; name: string | null } | null;
  if (agent?.id === r.agent.id && agent.name !== null) agent.name = r.agent.to;
  for (const s of (d.steps as Json[] | undefined) ?? []) {
    const tool = s.tool as Json | undefined;
    if (tool && tool.name === r.tool.name) tool.name = r.tool.to;
  }
  return d;
}

function renameCatalog(o: Json, r: Renames): Json {
  if (!r.on) return o;
  const at = parseTimestamp(o.updated_at as string) as Micros;
  const renamed =
    (o.object === 'agent' && o.id === r.agent.id && { name: r.agent.to }) ||
    (o.object === 'tool' && o.name === r.tool.name && { name: r.tool.to });
  return renamed ? { ...o, ...renamed, updated_at: formatTimestamp(Math.max(at, r.from)) } : o;
}

function rewrite(path: string, body: Json, r: Renames): Json {
  const p = path.split('?')[0] as string;
  const data = body.data;
  if (p === '/api/v1/runs/tool-options' && Array.isArray(data) && r.on)
    return {
      ...body,
      data: (data as Json[]).map((o) => (o.tool_name === r.tool.name ? { ...o, tool_name: r.tool.to } : o)),
    };
  if (p.startsWith('/api/v1/runs')) {
    if (Array.isArray(data)) return { ...body, data: (data as Json[]).map((d) => renameRun(d, r)) };
    if (data && typeof data === 'object') return { ...body, data: renameRun(data as Json, r) };
  }
  if (p.startsWith('/api/v1/agents') || p.startsWith('/api/v1/tools')) {
    if (Array.isArray(data)) return { ...body, data: (data as Json[]).map((o) => renameCatalog(o, r)) };
    if (data && typeof data === 'object') return { ...body, data: renameCatalog(data as Json, r) };
  }
  return body;
}

/** Turns the renaming on from `from`, for the busiest agent and catalog tool on both sides of it. */
function renameFrom(sim: Simulator, r: Renames, from: Micros): Renames {
  const busiest = (pick: (d: Json) => (string | null)[]) => {
    const before = new Map<string, number>();
    const after = new Map<string, number>();
    for (const d of sim.world.truthRunDetails()) {
      const side = (parseTimestamp(d.created_at as string) as Micros) < from ? before : after;
      for (const k of pick(d)) if (k) side.set(k, (side.get(k) ?? 0) + 1);
    }
    const both = [...after].filter(([k]) => before.has(k)).map(([k, n]) => [k, Math.min(n, before.get(k) ?? 0)]);
    return both.sort((a, b) => (b[1] as number) - (a[1] as number)).map(([k]) => k as string);
  };
  const liveTools = new Set(sim.world.catalogObjects('tool').map((t) => t.name as string));
  const agent = busiest((d) => [(d.agent as { id: string | null } | null)?.id ?? null])[0] as string;
  const tool = busiest((d) =>
    (d.steps as Json[]).filter((s) => s.type === 'tool_call').map((s) => (s.tool as Json).name as string),
  ).filter((t) => liveTools.has(t))[0] as string;
  return { ...r, on: true, from, agent: { ...r.agent, id: agent }, tool: { name: tool, to: `${tool}_renamed` } };
}

describe('views with renamed and missing names', () => {
  let sim: Simulator;
  let proxy: HostileProxy;
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  const passTimes: Micros[] = [];
  let renames: Renames;

  beforeAll(async () => {
    sim = await startSim(SIM);
    const catalog = sim.world.catalog;
    renames = {
      from: 0,
      on: false,
      category: { id: catalog.categories[5]?.id as string, to: 'Customer feedback' },
      nameless: catalog.categories[8]?.id as string,
      agent: { id: '', to: 'Front desk (renamed)' },
      tool: { name: '', to: '' },
    };
    proxy = await hostileProxy(sim.url, (x) => ({
      body: rewrite(x.path, x.body as Json, renames),
    }));
    tmp = tempDir('runsync-views-renamed-');
    const engine = engineFor({ sim: { ...sim, url: proxy.url }, dir: tmp.dir });
    try {
      for (const step of [null, '1d', '2d']) {
        if (step) sim.advance(step);
        if (step === '1d') renames = renameFrom(sim, renames, sim.clock.now() - 12 * 3600e6);
        const pass = await runPass(engine.deps, { export: step === '2d' });
        expect(pass.status, pass.errors.join('; ')).toBe('ok');
        passTimes.push(sim.clock.now());
      }
    } finally {
      await engine.close();
    }
    wh = await openWarehouse(tmp.dir, { readOnly: true });
  }, 180_000);

  afterAll(async () => {
    await wh?.close();
    await proxy?.close();
    await sim?.close();
    tmp?.cleanup();
  });

  const runs = () => truthRuns(sim, sim.clock.now() - SETTLE, (d) => renameRun(d, renames));
  const catalogAt = (kind: 'agent' | 'tool') =>
    seenCatalog(sim, kind, passTimes, (o, pass) => renameCatalog(o, { ...renames, on: pass > 0 }));

  async function check(db: SqlRunner): Promise<void> {
    const truth = runs();
    const categories = await rows(db, `SELECT coalesce(category_id, '') AS k, * FROM v_resolution_by_category`);
    expectSame(new Map(categories.map((r) => [r.k as string, r])), byCategory(truth), 'v_resolution_by_category');
    const names = categories.map((r) => r.category_name as string);
    // One row per category, each name once; runs without a category id under their own label.
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('Customer feedback');
    expect(names).not.toContain('Feedback');
    expect(names).toContain('(no category)');
    expect(names).toContain('(unnamed category)');
    const oldAndNew = truth.filter((r) => r.categoryId === renames.category.id).map((r) => r.categoryName);
    expect(oldAndNew).toContain('Feedback');
    expect(oldAndNew).toContain('Customer feedback');

    const agents = await rows(db, `SELECT coalesce(agent_id, '') AS k, * FROM v_resolution_by_agent`);
    expectSame(new Map(agents.map((r) => [r.k as string, r])), byAgent(catalogAt('agent'), truth), 'by agent');
    expect(agents.find((r) => r.agent_id === renames.agent.id)?.agent_name).toBe(renames.agent.to);

    const tools = await rows(db, `SELECT coalesce(tool_id, tool_name || ' ' || tool_type) AS k, * FROM v_tool_stats`);
    const labels = new Map(
      sim.world
        .toolOptions()
        .map((o) => [
          o.tool_name === renames.tool.name ? renames.tool.to : (o.tool_name as string),
          o.display_name as string,
        ]),
    );
    expectSame(new Map(tools.map((r) => [r.k as string, r])), toolStats(catalogAt('tool'), labels, truth), 'tools');
    const renamed = tools.find((r) => r.tool_name === renames.tool.to);
    expect(renamed?.recorded_tool_names).toEqual([renames.tool.name, renames.tool.to].sort());
    expect(tools.filter((r) => r.tool_name === renames.tool.name)).toEqual([]);

    const attributes = await rows(db, `SELECT * FROM v_evaluation_attributes`);
    const want = evaluationAttributes(truth);
    expectSame(new Map(attributes.map((r) => [r.attribute_id as string, r])), want, 'v_evaluation_attributes');
  }

  it('group by id in runsync.duckdb, labelled with the latest name or a clear placeholder', async () => {
    await check(wh);
  });

  it('answer the same in analytics.duckdb', async () => {
    const instance = await DuckDBInstance.create(join(tmp.dir, ANALYTICS_FILE), { access_mode: 'READ_ONLY' });
    const conn = await instance.connect();
    try {
      const db = sqlRunner(conn);
      await db.run(`SET TimeZone = 'UTC'`);
      await check(db);
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });
});
