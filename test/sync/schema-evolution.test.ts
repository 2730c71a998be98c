import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { ArchiveWriter } from '../../src/archive/writer.ts';
import { statusLines } from '../../src/cli/commands/status.ts';
import { exportParquet } from '../../src/export/parquet.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { readStatus } from '../../src/sync/status.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.ts';
import { rebuildInPlace, rebuildInto } from '../../src/warehouse/rebuild.ts';
import { runDetail } from '../warehouse/run-fixture.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from './kit.ts';

// The API grows: from a moment on, runs carry cost_usd, their steps latency_ms, and a new array of
// citations. Members nobody declared become columns (and the array a table) on their own, their
// values land from then on, and a rebuild fills them from the raw archive for runs loaded while
// schema evolution was off, with the Parquet tree and analytics.duckdb in step.

interface Grown {
  cost: Map<string, number>;
  latency: Map<string, number>;
  citations: Map<string, number>;
}

/** What the simulator's runs carry of the new members now (runs whose version is from after the growth). */
function grownTruth(sim: Simulator, before: Micros): Grown {
  const out: Grown = { cost: new Map(), latency: new Map(), citations: new Map() };
  for (const d of sim.world.truthRunDetails()) {
    if ((parseTimestamp(d.created_at as string) as Micros) >= before || d.cost_usd === undefined) continue;
    out.cost.set(d.id as string, d.cost_usd as number);
    out.citations.set(d.id as string, (d.citations as unknown[]).length);
    for (const s of d.steps as { id: string; latency_ms: number }[]) out.latency.set(`${d.id}/${s.id}`, s.latency_ms);
  }
  return out;
}

async function columnsOf(wh: Warehouse, table: string): Promise<string[]> {
  const rows = await wh.all<{ c: string }>(
    `SELECT column_name AS c FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  return rows.map((r) => r.c);
}

describe('schema evolution', () => {
  const each = perTest();

  it('turns members the API adds into typed columns and a table, and fills them for history on rebuild', async () => {
    const sim = await each.sim({ size: 300, runs: { postSettleFraction: 0 } });
    const dir = each.dir();
    const pass = async (env: Record<string, string> = {}) => {
      const engine = engineFor({ sim, dir, env });
      try {
        const r = await runPass(engine.deps);
        expect(r.status, r.errors.join('; ')).toBe('ok');
      } finally {
        await engine.close();
      }
    };
    const read = async <T>(fn: (wh: Warehouse) => Promise<T>): Promise<T> => {
      const wh = await openWarehouse(dir, { readOnly: true });
      try {
        return await fn(wh);
      } finally {
        await wh.close();
      }
    };

    await pass();
    expect(await read((wh) => columnsOf(wh, 'runs'))).not.toContain('cost_usd');

    // The API grows; a runsync with schema evolution off keeps the new members in the raw archive only.
    sim.world.runs.grownSince = sim.clock.now();
    sim.advance('1d');
    await pass({ RUNSYNC_SCHEMA_EVOLUTION: 'off' });
    const held = await read(async (wh) => (await readStatus(wh)).schemaChanges);
    expect(held.map((c) => [c.change, c.table, c.column])).toEqual(
      expect.arrayContaining([
        ['held', 'runs', 'cost_usd'],
        ['held', 'run_steps', 'latency_ms'],
        ['held', 'run_citations', null],
      ]),
    );
    const heldSaid = await read(async (wh) =>
      statusLines(join(dir, 'runsync.duckdb'), await readStatus(wh), sim?.clock.now() as Micros).join('\n'),
    );
    expect(heldSaid).toMatch(
      /^held +\d+ new API member\(s\) kept in the raw archive only.*runs\.cost_usd DOUBLE.*table run_citations/m,
    );
    expect(heldSaid).not.toMatch(/^new columns/m);
    expect(await read((wh) => columnsOf(wh, 'runs'))).not.toContain('cost_usd');
    const heldRuns = await read((wh) =>
      wh.all<{ id: string }>(`SELECT id FROM runs WHERE updated_at >= make_timestamp($1::BIGINT)`, [
        BigInt(sim?.world.runs.grownSince as number),
      ]),
    );
    expect(heldRuns.length).toBeGreaterThan(5);

    // With evolution on, the members become typed columns and the array a table, from this pass on.
    sim.advance('1d');
    await pass();
    await read(async (wh) => {
      expect(await columnsOf(wh, 'runs')).toContain('cost_usd');
      expect(await columnsOf(wh, 'run_steps')).toContain('latency_ms');
      expect(await columnsOf(wh, 'run_citations')).toEqual([
        'run_id',
        'item_index',
        'url',
        'title',
        'score',
        'created_date',
      ]);
      const types = await wh.all<{ c: string; t: string }>(
        `SELECT column_name AS c, data_type AS t FROM information_schema.columns
         WHERE (table_name = 'runs' AND column_name = 'cost_usd')
            OR (table_name = 'run_steps' AND column_name = 'latency_ms')
         ORDER BY 1`,
      );
      expect(types).toEqual([
        { c: 'cost_usd', t: 'DOUBLE' },
        { c: 'latency_ms', t: 'BIGINT' },
      ]);
      const status = await readStatus(wh);
      expect(
        status.schemaChanges.filter((c) => c.change !== 'held').map((c) => `${c.table}.${c.column ?? ''}`),
      ).toEqual(
        expect.arrayContaining(['runs.cost_usd', 'run_steps.latency_ms', 'run_citations.', 'run_citations.url']),
      );
      const said = statusLines(join(dir, 'runsync.duckdb'), status, sim.clock.now()).join('\n');
      expect(said).toMatch(/^new columns .*run_steps\.latency_ms BIGINT.*runs\.cost_usd DOUBLE/m);
      expect(said).toMatch(/table run_citations \(from citations\)/);
      expect(said).not.toMatch(/^held/m);
    });
    const before = sim.clock.now() - SETTLE;
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);
    const want = grownTruth(sim, before);
    const filled = async () =>
      read((wh) =>
        wh.all<{ id: string; cost: number | null }>(`SELECT id, cost_usd AS cost FROM runs WHERE cost_usd IS NOT NULL`),
      );
    const afterPass = await filled();
    expect(afterPass.length).toBeGreaterThan(0);
    for (const r of afterPass) expect(r.cost, r.id).toBe(want.cost.get(r.id));
    // Runs loaded while evolution was off and unchanged since still lack the value.
    expect(afterPass.length).toBeLessThan(want.cost.size);

    // A rebuild fills the columns for every run from the raw archive, with no API call.
    const requests = sim.counters.snapshot().total;
    const rebuilt = await rebuildInPlace(dir);
    expect(sim.counters.snapshot().total).toBe(requests);
    expect(rebuilt.newColumns).toEqual([]);
    const all = await filled();
    expect(new Map(all.map((r) => [r.id, r.cost]))).toEqual(want.cost);
    await read(async (wh) => {
      const steps = await wh.all<{ k: string; l: bigint }>(
        `SELECT run_id || '/' || id AS k, latency_ms AS l FROM run_steps WHERE latency_ms IS NOT NULL`,
      );
      expect(new Map(steps.map((s) => [s.k, Number(s.l)]))).toEqual(want.latency);
      const cites = await wh.all<{ id: string; n: bigint }>(
        `SELECT run_id AS id, count(*) AS n FROM run_citations GROUP BY 1`,
      );
      expect(new Map(cites.map((c) => [c.id, Number(c.n)]))).toEqual(
        new Map([...want.citations].filter(([, n]) => n > 0)),
      );
    });
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);

    // The Parquet tree and analytics.duckdb carry the new columns and table.
    const wh = await openWarehouse(dir);
    try {
      await exportParquet(wh, { full: true });
    } finally {
      await wh.close();
    }
    const analytics = await (
      await DuckDBInstance.create(join(dir, 'analytics.duckdb'), { access_mode: 'READ_ONLY' })
    ).connect();
    try {
      const q = async (sql: string) => (await analytics.runAndReadAll(sql)).getRowObjectsJS();
      expect(await q(`SELECT count(*) AS n FROM runs WHERE cost_usd IS NOT NULL`)).toEqual([
        { n: BigInt(want.cost.size) },
      ]);
      expect(await q(`SELECT count(*) AS n FROM run_steps WHERE latency_ms IS NOT NULL`)).toEqual([
        { n: BigInt(want.latency.size) },
      ]);
      const cited = [...want.citations.values()].reduce((a, n) => a + n, 0);
      expect(await q(`SELECT count(*) AS n FROM run_citations`)).toEqual([{ n: BigInt(cited) }]);
      expect(await q(`SELECT count(*) AS n FROM v_runs_daily_resolution`)).not.toEqual([{ n: 0n }]);
    } finally {
      analytics.closeSync();
    }
  });

  it('takes in the members of an archive written before loads noted what they observed', async () => {
    const dir = each.dir();
    const source = join(dir, 'old');
    const at = Date.parse('2026-03-01T00:00:00Z') * 1000;
    // An archive file as an older runsync wrote it: payloads only, no note in its footer.
    const archive = await ArchiveWriter.open(source, 'runs', at);
    const detail = runDetail({ id: 'run-old', cost_usd: 0.5, steps: [{ id: 's1', order: 1, latency_ms: 40 }] });
    await archive.append({
      kind: 'payload',
      id: 'run-old',
      updatedAt: detail.updated_at as string,
      fetchedAt: at,
      listedAt: null,
      payload: JSON.stringify(detail),
    });
    await archive.commit();
    const rebuilt = await rebuildInto(source, join(dir, 'new'));
    expect(rebuilt.newColumns).toEqual(['runs.cost_usd', 'run_steps.latency_ms']);
    const wh = await openWarehouse(join(dir, 'new'), { readOnly: true });
    try {
      expect(await wh.all(`SELECT cost_usd FROM runs`)).toEqual([{ cost_usd: 0.5 }]);
      expect(await wh.all(`SELECT latency_ms FROM run_steps`)).toEqual([{ latency_ms: 40n }]);
    } finally {
      await wh.close();
    }
  });
});
