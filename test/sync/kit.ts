import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/index.ts';
import { createEngine, type Engine, type EngineOptions } from '../../src/sync/index.ts';
import { createLogger, type Logger } from '../../src/util/logger.ts';
import {
  formatTimestamp,
  MICROS_PER_DAY,
  MICROS_PER_SECOND,
  type Micros,
  parseTimestamp,
} from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';

// What the sync engine tests share: a simulator on a manual clock, an engine wired as the CLI wires
// it (with the simulator's clock, short retry delays), and the comparison with ground truth.

export const NOW = '2026-03-01T00:00:00Z';
export const SETTLE = 5 * MICROS_PER_SECOND;

export function tempDir(prefix = 'runsync-sync-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For a describe block whose tests each start a simulator or make a directory: what a test made
 * is closed or removed after it, passed or not.
 */
export function perTest(): { sim(options?: SimulatorOptions): Promise<Simulator>; dir(prefix?: string): string } {
  let sims: Simulator[] = [];
  let dirs: ReturnType<typeof tempDir>[] = [];
  afterEach(async () => {
    for (const sim of sims) await sim.close();
    for (const dir of dirs) dir.cleanup();
    sims = [];
    dirs = [];
  });
  return {
    async sim(options) {
      const sim = await startSim(options);
      sims.push(sim);
      return sim;
    },
    dir(prefix) {
      const dir = tempDir(prefix);
      dirs.push(dir);
      return dir.dir;
    },
  };
}

export function startSim(options: SimulatorOptions = {}): Promise<Simulator> {
  // Unlimited unless a test sets a limit: the engine's pacing has its own tests and benches.
  return startSimulator({ port: 0, seed: 11, size: 600, days: 10, now: NOW, rateLimit: { perKey: null }, ...options });
}

export interface EngineFor {
  sim: Simulator;
  dir: string;
  env?: Record<string, string>;
  options?: Partial<EngineOptions>;
  logger?: Logger;
}

export function spanStart(sim: Simulator): Micros {
  return (parseTimestamp(NOW) as Micros) - sim.world.options.days * MICROS_PER_DAY;
}

export function engineFor({ sim, dir, env = {}, options = {}, logger }: EngineFor): Engine {
  const config = loadConfig({
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
    ...env,
  });
  return createEngine(config, {
    logger: logger ?? createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    signal: new AbortController().signal,
    now: () => sim.clock.now(),
    retry: { baseDelayMs: 2, maxDelayMs: 20 },
    lockWaitMs: 30_000,
    ...options,
  });
}

export interface RunFacts {
  status: string | null;
  updatedAt: number;
  resolution: string | null;
  messages: string;
  steps: string;
  evals: string;
}

/** Ground truth: every run the simulator shows now, created before `before`. */
export function truth(sim: { world: Simulator['world'] }, before: Micros): Map<string, RunFacts> {
  const out = new Map<string, RunFacts>();
  for (const d of sim.world.truthRunDetails()) {
    const created = parseTimestamp(d.created_at as string) as Micros;
    if (created >= before) continue;
    const ids = (k: string) =>
      ((d[k] as { id: string }[]) ?? [])
        .map((x) => x.id)
        .sort()
        .join(',');
    out.set(d.id as string, {
      status: (d.status as string | null) ?? null,
      updatedAt: parseTimestamp(d.updated_at as string) as number,
      resolution: (d.resolution as { type: string } | null)?.type ?? null,
      messages: ids('conversation'),
      steps: ids('steps'),
      evals: ids('evaluation_attributes'),
    });
  }
  return out;
}

/** The same facts, read from the warehouse. */
export async function storedCount(dir: string): Promise<number> {
  return (await stored(dir)).size;
}

/**
 * The warehouse opened to read, waiting for the file as `runsync status` does: tests read while
 * workers may still hold it for a commit (their next pass).
 */
function openReader(dir: string): ReturnType<typeof openWarehouse> {
  return openWarehouse(dir, { readOnly: true, lockWaitMs: 30_000 });
}

export async function stored(dir: string): Promise<Map<string, RunFacts>> {
  const wh = await openReader(dir);
  try {
    const rows = await wh.all<{
      id: string;
      status: string | null;
      u: bigint;
      r: string | null;
      m: string | null;
      s: string | null;
      e: string | null;
    }>(`
      -- An ordered aggregate (string_agg ... ORDER BY) keeps a buffer per group, which over thousands
      -- of runs outgrows the warehouse's memory limit; a list sorted afterwards does not.
      WITH m AS (SELECT run_id, array_to_string(list_sort(list(id)), ',') AS ids FROM run_messages GROUP BY run_id),
        s AS (SELECT run_id, array_to_string(list_sort(list(id)), ',') AS ids FROM run_steps GROUP BY run_id),
        e AS (SELECT run_id, array_to_string(list_sort(list(id)), ',') AS ids FROM run_evaluations GROUP BY run_id)
      SELECT r.id, r.status, epoch_us(r.updated_at) AS u, r.resolution_type AS r, m.ids AS m, s.ids AS s, e.ids AS e
      FROM runs r LEFT JOIN m ON m.run_id = r.id LEFT JOIN s ON s.run_id = r.id LEFT JOIN e ON e.run_id = r.id`);
    return new Map(
      rows.map((x) => [
        x.id,
        {
          status: x.status,
          updatedAt: Number(x.u),
          resolution: x.r,
          messages: x.m ?? '',
          steps: x.s ?? '',
          evals: x.e ?? '',
        },
      ]),
    );
  } finally {
    await wh.close();
  }
}

/** Differences between the warehouse and the truth, as lines (empty when equal). */
export async function diffWithTruth(sim: Simulator, dir: string, before: Micros): Promise<string[]> {
  return diffFacts(truth(sim, before), dir, { quick: false });
}

/** The same against truth computed once (computing it is heavy work in the simulator's process). */
export async function diffFacts(
  want: Map<string, RunFacts>,
  dir: string,
  o: { quick?: boolean } = {},
): Promise<string[]> {
  if (o.quick !== false) {
    const differs = await quickDiffers(want, dir);
    if (differs) return [differs];
  }
  const have = await stored(dir);
  const out: string[] = [];
  for (const [id, w] of want) {
    const h = have.get(id);
    if (!h) out.push(`missing ${id}`);
    else if (JSON.stringify(h) !== JSON.stringify(w))
      out.push(`differs ${id}: have ${JSON.stringify(h).slice(0, 200)} want ${JSON.stringify(w).slice(0, 200)}`);
  }
  for (const id of have.keys()) if (!want.has(id)) out.push(`extra ${id}`);
  return out;
}

/**
 * A cheap look (a count and a sum of updated_at), so tests polling while a worker syncs keep the
 * simulator's process, which shares this one, as idle as they can. Null when they agree.
 */
async function quickDiffers(want: Map<string, RunFacts>, dir: string): Promise<string | null> {
  const wh = await openReader(dir);
  let quick: { n: bigint; s: bigint | null } | undefined;
  try {
    [quick] = await wh.all<{ n: bigint; s: bigint | null }>(
      `SELECT count(*) AS n, sum(epoch_us(updated_at) % 1000000007)::BIGINT AS s FROM runs`,
    );
  } finally {
    await wh.close();
  }
  let sum = 0n;
  for (const f of want.values()) sum += BigInt(f.updatedAt) % 1000000007n;
  if (Number(quick?.n ?? 0) !== want.size || (quick?.s ?? 0n) !== sum)
    return `${quick?.n ?? 0} runs stored (${want.size} expected), or some not up to date`;
  return null;
}

const CATALOG: [kind: 'tool' | 'agent' | 'guideline' | 'guardrail' | 'runbook', table: string][] = [
  ['tool', 'tools'],
  ['agent', 'agents'],
  ['guideline', 'guidelines'],
  ['guardrail', 'guardrails'],
  ['runbook', 'runbooks'],
];

/** Catalog differences: ids and updated_at of every live table, and every vanished object marked deleted. */
export async function diffCatalog(sim: { world: Simulator['world'] }, dir: string): Promise<string[]> {
  const wh = await openReader(dir);
  const out: string[] = [];
  try {
    for (const [kind, table] of CATALOG) {
      const want = new Map(
        sim.world.catalogObjects(kind).map((o) => [o.id as string, parseTimestamp(o.updated_at as string)]),
      );
      const rows = await wh.all<{ id: string; u: bigint }>(`SELECT id, epoch_us(updated_at) AS u FROM ${table}`);
      const have = new Map(rows.map((r) => [r.id, Number(r.u)]));
      for (const [id, u] of want) if (have.get(id) !== u) out.push(`${table} ${id}: have ${have.get(id)} want ${u}`);
      for (const id of have.keys()) if (!want.has(id)) out.push(`${table} ${id}: still live, gone upstream`);
      const deleted = await wh.all<{ id: string }>(
        `SELECT id FROM ${table}_history WHERE valid_to IS NULL AND is_deleted`,
      );
      for (const { id } of deleted) if (want.has(id)) out.push(`${table}_history ${id}: marked deleted, live upstream`);
      const everSeen = await wh.all<{ id: string }>(`SELECT DISTINCT id FROM ${table}_history`);
      const deletedSet = new Set(deleted.map((d) => d.id));
      for (const { id } of everSeen)
        if (!want.has(id) && !deletedSet.has(id)) out.push(`${table}_history ${id}: gone upstream, not marked deleted`);
    }
  } finally {
    await wh.close();
  }
  return out;
}
