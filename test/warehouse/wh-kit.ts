import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimClock } from '../../src/simulator/clock.ts';
import { SimWorld } from '../../src/simulator/world.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import type { SqlRunner } from '../../src/warehouse/types.ts';

// Shared by the warehouse, archive and export tests: temp directories, simulator data, and a
// comparable dump of every table.

export const SIM_NOW = '2026-03-01T00:00:00Z';

/** The simulator's object kind of each catalog table. */
export const CATALOG_KIND = {
  tools: 'tool',
  agents: 'agent',
  guidelines: 'guideline',
  guardrails: 'guardrail',
  runbooks: 'runbook',
} as const;

export function tempDir(prefix = 'runsync-wh-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function simWorld(seed: number, size: number, days = 10): SimWorld {
  const now = parseTimestamp(SIM_NOW) as Micros;
  return new SimWorld({ seed, size, days, initialNow: now }, new SimClock(now));
}

export function simDetails(seed: number, size: number, days = 10): Record<string, unknown>[] {
  return [...simWorld(seed, size, days).truthRunDetails()];
}

export const DATA_TABLES = [
  'runs',
  'run_messages',
  'run_steps',
  'run_evaluations',
  'run_tool_options',
  'tools',
  'tool_parameters',
  'agents',
  'guidelines',
  'guardrails',
  'runbooks',
  'tools_history',
  'tool_parameters_history',
  'agents_history',
  'guidelines_history',
  'guardrails_history',
  'runbooks_history',
] as const;

/**
 * Every row of a table as text, in a stable order: timestamps as epoch microseconds, everything
 * else through DuckDB's own VARCHAR cast, so two warehouses compare exactly.
 */
export async function dumpTable(db: SqlRunner, table: string, except: readonly string[] = []): Promise<string[]> {
  const cols = (
    await db.all<{ name: string; type: string }>(
      `SELECT column_name AS name, data_type AS type FROM information_schema.columns
       WHERE table_name = $1 ORDER BY ordinal_position`,
      [table],
    )
  ).filter((c) => !except.includes(c.name));
  const exprs = cols.map((c) =>
    c.type.startsWith('TIMESTAMP') ? `epoch_us("${c.name}")::VARCHAR` : `"${c.name}"::VARCHAR`,
  );
  const rows = await db.all<{ r: string }>(
    `SELECT to_json(list_value(${exprs.join(', ')}))::VARCHAR AS r FROM "${table}"`,
  );
  return rows.map((r) => r.r).sort();
}

export async function dumpAll(db: SqlRunner, except: readonly string[] = []): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of DATA_TABLES) out[t] = await dumpTable(db, t, except);
  return out;
}

export async function count(
  db: SqlRunner,
  sql: string,
  params?: readonly (string | number | bigint | boolean | null)[],
): Promise<number> {
  const rows = await db.all<Record<string, bigint | number>>(sql, params);
  return Number(Object.values(rows[0] ?? {})[0] ?? 0);
}

/** A deep copy, so a test can edit a simulator payload without touching the original. */
export function clone<T>(v: T): T {
  return structuredClone(v);
}

const HOLDER = fileURLToPath(new URL('./hold-warehouse.ts', import.meta.url));

/** Another process holding the warehouse in `dir` open, once it says so; see releaseHolder. */
export async function holdInAnotherProcess(dir: string): Promise<ChildProcessWithoutNullStreams> {
  const c = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], { stdio: 'pipe' });
  let out = '';
  c.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    c.stdout.on('data', (s: string) => {
      out += s;
      if (out.includes('ready')) resolve();
    });
    c.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return c;
}

/** Lets the holder close the warehouse and waits for it to exit (if it still runs). */
export async function releaseHolder(c: ChildProcessWithoutNullStreams): Promise<void> {
  if (c.exitCode !== null) return;
  c.stdin.end('release\n');
  await once(c, 'exit');
}
