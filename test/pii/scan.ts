import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Simulator } from '../../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';

// Looking for personal data where runsync writes: every value of every table of the DuckDB file,
// every value of every Parquet file (the raw archive's payloads decompressed), the staged details
// unzipped, and the bytes of every other file; and what the simulator's customers gave away.

export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

async function duckText(dbFile: string | null, parquet: readonly string[]): Promise<string> {
  const instance = await DuckDBInstance.create(dbFile ?? ':memory:', dbFile ? { access_mode: 'READ_ONLY' } : {});
  const c = await instance.connect();
  const parts: string[] = [];
  try {
    if (dbFile) {
      const tables = (
        await c.runAndReadAll(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_type = 'BASE TABLE'`,
        )
      ).getRowObjectsJS() as { table_name: string }[];
      for (const { table_name } of tables) {
        const r = await c.runAndReadAll(`SELECT to_json(t)::VARCHAR AS j FROM "${table_name}" t`);
        parts.push(...(r.getRowObjectsJS() as { j: string }[]).map((x) => x.j));
      }
    }
    for (const f of parquet) {
      const r = await c.runAndReadAll(
        `SELECT to_json(t)::VARCHAR AS j FROM read_parquet('${f.replace(/'/g, "''")}') t`,
      );
      parts.push(...(r.getRowObjectsJS() as { j: string }[]).map((x) => x.j));
    }
  } finally {
    c.closeSync();
    instance.closeSync();
  }
  // JSON text escapes nothing a needle holds but quotes and backslashes, which no needle has; the
  // values are also unescaped (\u… of non-ASCII names) to be sure.
  const text = parts.join('\n');
  return `${text}\n${text.replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))}`;
}

export interface Everywhere {
  warehouse: string;
  parquet: string;
  raw: string;
  staged: string;
  otherFiles: string;
}

/** Everything under a warehouse folder, as text. */
export async function everythingUnder(dir: string): Promise<Everywhere> {
  const files = filesUnder(dir);
  const parquet = files.filter((f) => f.endsWith('.parquet') && !f.includes('/raw/'));
  const raw = files.filter((f) => f.endsWith('.parquet') && f.includes('/raw/'));
  const staged = files.filter((f) => f.endsWith('.json.gz')).map((f) => gunzipSync(readFileSync(f)).toString('utf8'));
  const plain = files
    .filter((f) => statSync(f).isFile() && !f.endsWith('.parquet') && !f.endsWith('.duckdb') && !f.endsWith('.gz'))
    .map((f) => readFileSync(f, 'utf8'));
  return {
    warehouse: await duckText(join(dir, 'runsync.duckdb'), []),
    parquet: await duckText(null, parquet),
    raw: await duckText(null, raw),
    staged: staged.join('\n'),
    otherFiles: plain.join('\n'),
  };
}

export interface Needles {
  names: string[];
  emails: string[];
  phones: string[];
  /** Cards, IBANs and IP addresses. */
  others: string[];
}

/**
 * What the simulator's runs created before `before` give away: the customers' names (and every
 * other person's name in a conversation), and the emails, phone numbers, cards, IBANs and
 * addresses their texts and tool calls hold, as served.
 */
export function needlesOf(sim: Simulator, before: Micros): Needles {
  const names = new Set<string>();
  const contacts = new Map<number, ReturnType<Simulator['world']['runs']['contact']>>();
  const served: string[] = [];
  for (const d of sim.world.truthRunDetails()) {
    if ((parseTimestamp(d.created_at as string) as Micros) >= before) continue;
    const trigger = d.trigger as { customer_name?: string | null };
    if (trigger.customer_name) names.add(trigger.customer_name);
    for (const m of d.conversation as { role: string; user_name: string }[])
      if (m.role !== 'ai_agent') names.add(m.user_name);
    const index = sim.world.runs.indexOfId(d.id as string) as number;
    const plan = sim.world.runs.plan(index);
    contacts.set(plan.ticketNo, sim.world.runs.contact(plan));
    served.push(JSON.stringify(d));
  }
  const text = served.join('\n');
  const given = (pick: (c: ReturnType<Simulator['world']['runs']['contact']>) => string) =>
    [...new Set([...contacts.values()].map(pick))].filter((v) => text.includes(v));
  return {
    names: [...names],
    emails: given((c) => c.email),
    phones: given((c) => c.phone),
    others: [...given((c) => c.card), ...given((c) => c.iban), ...given((c) => c.ip)],
  };
}

/** Needles found in a text, by kind, at most a few of each. */
export function found(text: string, needles: Needles): string[] {
  const out: string[] = [];
  for (const [kind, list] of Object.entries(needles) as [string, string[]][]) {
    const hits = list.filter((n) => text.includes(n));
    if (hits.length) out.push(`${hits.length} ${kind}, e.g. ${hits.slice(0, 3).join(' | ')}`);
  }
  return out;
}
