import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/commands/status.ts';
import { schemaContract } from '../../src/config/index.ts';
import { parseContract } from '../../src/resources/contract.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { type PassResult, runPass } from '../../src/sync/index.ts';
import { readStatus } from '../../src/sync/status.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.ts';
import { rebuildInPlace } from '../../src/warehouse/rebuild.ts';
import { runCli } from '../support/cli.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from './kit.ts';

// Schema contracts: under evolve a member whose type changes widens its column to one that holds
// both kinds of value; under freeze a record with a new member or a changed type is kept out and
// said so, and loads exact once the contract is widened and the quarantine replayed; under
// discard the member stays in the raw archive only.

/** cost_usd of every run the simulator shows now (a number, or text once retyped), by id. */
function costTruth(sim: Simulator, before: Micros): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const d of sim.world.truthRunDetails()) {
    if ((parseTimestamp(d.created_at as string) as Micros) >= before || d.cost_usd === undefined) continue;
    out.set(d.id as string, d.cost_usd);
  }
  return out;
}

async function read<T>(dir: string, fn: (wh: Warehouse) => Promise<T>): Promise<T> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    return await fn(wh);
  } finally {
    await wh.close();
  }
}

async function pass(sim: Simulator, dir: string, env: Record<string, string> = {}): Promise<PassResult> {
  const engine = engineFor({ sim, dir, env });
  try {
    const r = await runPass(engine.deps);
    expect(r.status, r.errors.join('; ')).toBe('ok');
    return r;
  } finally {
    await engine.close();
  }
}

const typeOf = (dir: string, table: string, column: string) =>
  read(dir, async (wh) => {
    const [row] = await wh.all<{ t: string }>(
      `SELECT data_type AS t FROM information_schema.columns WHERE table_name = $1 AND column_name = $2`,
      [table, column],
    );
    return row?.t ?? null;
  });

/** cost_usd as stored: the JSON value, by run id. */
const storedCost = (dir: string) =>
  read(dir, async (wh) => {
    const rows = await wh.all<{ id: string; c: string }>(
      `SELECT id, cost_usd::VARCHAR AS c FROM runs WHERE cost_usd IS NOT NULL`,
    );
    return new Map(rows.map((r) => [r.id, JSON.parse(r.c) as unknown]));
  });

const quarantined = (dir: string) =>
  read(dir, (wh) =>
    wh.all<{ id: string; reasons: string[] }>(
      `SELECT record_id AS id, reasons FROM _sync_quarantine WHERE resource = 'runs' ORDER BY 1`,
    ),
  );

const archivedKeptOut = (dir: string) =>
  read(dir, async (wh) => {
    const [row] = await wh.all<{ n: bigint }>(
      `SELECT count(*) AS n FROM read_parquet('${join(dir, 'raw', 'runs', '*', '*.parquet')}') WHERE kind = 'quarantined'`,
    );
    return Number(row?.n ?? 0);
  });

describe('schema contracts', () => {
  const each = perTest();

  it('evolve: a number that becomes text mid-way lands in one widened column with both kinds', async () => {
    const sim = await each.sim({ seed: 71, size: 300, runs: { postSettleFraction: 0 } });
    const dir = each.dir();
    await pass(sim, dir);
    sim.world.runs.grownSince = sim.clock.now();
    sim.advance('1d');
    await pass(sim, dir);
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('DOUBLE');
    sim.world.runs.retypedSince = sim.clock.now();
    sim.advance('1d');
    await pass(sim, dir);

    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('JSON');
    const before = sim.clock.now() - SETTLE;
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);
    const want = costTruth(sim, before);
    const kinds = new Set([...want.values()].map((v) => typeof v));
    expect(kinds).toEqual(new Set(['number', 'string']));
    expect(await storedCost(dir)).toEqual(want);
    await read(dir, async (wh) => {
      const status = await readStatus(wh);
      const widened = status.schemaChanges.filter((c) => c.change === 'widen');
      expect(widened.map((c) => [c.table, c.column, c.previousKind, c.kind])).toEqual([
        ['runs', 'cost_usd', 'double', 'json'],
      ]);
      const said = statusLines(join(dir, 'runsync.duckdb'), status, sim.clock.now()).join('\n');
      expect(said).toMatch(/^new columns .*runs\.cost_usd JSON \(was DOUBLE\)/m);
    });
    // The raw archive replays the same: a rebuild widens as the loads did.
    await rebuildInPlace(dir);
    expect(await storedCost(dir)).toEqual(want);
  });

  it('freeze: new members and changed types keep records out, said so, until widened and replayed', async () => {
    const sim = await each.sim({ seed: 72, size: 300, runs: { postSettleFraction: 0 } });
    const dir = each.dir();
    const FREEZE = { RUNSYNC_SCHEMA_CONTRACT: 'freeze' };
    await pass(sim, dir, FREEZE);

    // New members: the records that carry them are kept out, the tables stay as they were.
    sim.world.runs.grownSince = sim.clock.now();
    sim.advance('1d');
    const frozen = await pass(sim, dir, FREEZE);
    let before = sim.clock.now() - SETTLE;
    let grown = costTruth(sim, before);
    expect(grown.size).toBeGreaterThan(20);
    // Counted per load: an open run checked again in the same pass is kept out again.
    expect(frozen.runs.quarantined).toBeGreaterThanOrEqual(grown.size);
    const kept = await quarantined(dir);
    expect(kept.map((k) => k.id)).toEqual([...grown.keys()].sort());
    const reasons = new Set(kept.flatMap((k) => k.reasons));
    for (const r of [
      'runs.cost_usd is a new member (DOUBLE)',
      'run_steps.latency_ms is a new member (BIGINT)',
      'citations is a new array of objects (table run_citations)',
    ])
      expect(reasons).toContain(r);
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBeNull();
    const differs = await diffWithTruth(sim, dir, before);
    expect(differs.length).toBe(grown.size);
    await read(dir, async (wh) => {
      const said = statusLines(join(dir, 'runsync.duckdb'), await readStatus(wh), sim.clock.now()).join('\n');
      expect(said).toMatch(
        new RegExp(
          `^quarantined +${grown.size} record\\(s\\) the schema contract keeps out of frozen tables \\(runs ${grown.size}\\): .*run_steps\\.latency_ms is a new member`,
          'm',
        ),
      );
    });
    // Fetched again, a record kept out is archived once.
    const archived = await archivedKeptOut(dir);
    sim.advance('1m');
    await pass(sim, dir, FREEZE);
    expect(await archivedKeptOut(dir)).toBe(archived);
    // A rebuild under the same contract keeps the same records out.
    await rebuildInPlace(dir, { contract: parseContract('freeze') });
    expect((await quarantined(dir)).map((k) => k.id)).toEqual(kept.map((k) => k.id));

    // Widened, the quarantine replays from the raw archive, with no API call, and loads exact.
    const requests = sim.counters.snapshot().total;
    const env = { RUNSYNC_WAREHOUSE_DIR: dir, RUNSYNC_SCHEMA_CONTRACT: 'evolve' };
    const stillFrozen = await runCli(['quarantine', 'replay'], { ...env, RUNSYNC_SCHEMA_CONTRACT: 'freeze' });
    expect(stillFrozen.stdout).toContain(`0 let in by the contract (freeze); still kept out: ${grown.size} runs`);
    const replay = await runCli(['quarantine', 'replay'], env);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain(`${grown.size} let in by the contract (evolve)`);
    expect(sim.counters.snapshot().total).toBe(requests);
    expect(await quarantined(dir)).toEqual([]);
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);
    expect(await storedCost(dir)).toEqual(grown);
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('DOUBLE');

    // A changed type: the records whose cost_usd is now text are kept out, the column stays DOUBLE.
    sim.world.runs.retypedSince = sim.clock.now();
    sim.advance('1d');
    await pass(sim, dir, FREEZE);
    before = sim.clock.now() - SETTLE;
    grown = costTruth(sim, before);
    const texts = [...grown].filter(([, v]) => typeof v === 'string').map(([id]) => id);
    expect(texts.length).toBeGreaterThan(20);
    const retyped = await quarantined(dir);
    expect(retyped.map((k) => k.id)).toEqual(texts.sort());
    expect(retyped[0]?.reasons).toContain('runs.cost_usd changed type: a value needs JSON where the column is DOUBLE');
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('DOUBLE');

    const again = await runCli(['quarantine', 'replay'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(await quarantined(dir)).toEqual([]);
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('JSON');
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);
    expect(await storedCost(dir)).toEqual(grown);
    // And a rebuild under evolve derives the same from the raw archive.
    await rebuildInPlace(dir);
    expect(await storedCost(dir)).toEqual(grown);
    expect(await quarantined(dir)).toEqual([]);
  });

  it('discard, per table: the member stays in the raw archive, the record loads without it', async () => {
    const sim = await each.sim({ seed: 73, size: 200, runs: { postSettleFraction: 0 } });
    const dir = each.dir();
    const env = { RUNSYNC_SCHEMA_CONTRACT: 'evolve,run_steps=discard' };
    await pass(sim, dir, env);
    sim.world.runs.grownSince = sim.clock.now();
    sim.advance('1d');
    await pass(sim, dir, env);
    const before = sim.clock.now() - SETTLE;
    expect(await diffWithTruth(sim, dir, before)).toEqual([]);
    expect(await typeOf(dir, 'runs', 'cost_usd')).toBe('DOUBLE');
    expect(await typeOf(dir, 'run_steps', 'latency_ms')).toBeNull();
    const held = await read(dir, async (wh) => (await readStatus(wh)).schemaChanges.filter((c) => c.change === 'held'));
    expect(held.map((c) => `${c.table}.${c.column}`)).toEqual(['run_steps.latency_ms']);
    await rebuildInPlace(dir);
    expect(await typeOf(dir, 'run_steps', 'latency_ms')).toBe('BIGINT');
  });

  it('says what is wrong with the setting, one line each', () => {
    expect(() =>
      schemaContract({ RUNSYNC_SCHEMA_CONTRACT: 'freez, runs=evolve, run_stepz=discard, runs=freeze' }),
    ).toThrow(
      [
        'RUNSYNC_SCHEMA_CONTRACT: freez: the mode must be evolve, freeze or discard',
        'RUNSYNC_SCHEMA_CONTRACT: run_stepz=discard: no table run_stepz; name one of runs, run_messages, run_steps, run_evaluations, run_tool_options, tools, tool_parameters, agents, guidelines, guardrails, runbooks',
        'RUNSYNC_SCHEMA_CONTRACT: runs=freeze: runs is given twice',
      ].join('\n'),
    );
    const c = parseContract('freeze,runs=evolve,run_steps=discard');
    expect([c.modeOf('runs', 'runs'), c.modeOf('runs', 'run_steps'), c.modeOf('runs', 'run_messages')]).toEqual([
      'evolve',
      'discard',
      'evolve',
    ]);
    expect(c.modeOf('tools', 'tools')).toBe('freeze');
    expect(c.freezes('runs')).toBe(false);
    expect(c.freezes('tools')).toBe(true);
  });
});
