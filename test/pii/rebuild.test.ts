import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportParquet } from '../../src/export/parquet.ts';
import { defaultPolicyFile, isHashed, parsePolicy } from '../../src/pii/index.ts';
import type { PiiPolicy } from '../../src/pii/types.ts';
import { RESOURCES } from '../../src/resources/registry.ts';
import { tablesOf } from '../../src/resources/tables.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/index.ts';
import { checkWarehouse } from '../../src/warehouse/pii-check.ts';
import { rebuildInPlace } from '../../src/warehouse/rebuild.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from '../sync/kit.ts';
import { everythingUnder, found, needlesOf } from './scan.ts';

// The policy and the tables: hashed columns join and count as the names did, a rebuild gives the
// same tables, and a policy chosen later reaches everything once the warehouse is rebuilt.

const KEY = 'a key for the tests, long enough';
const ENV = { RUNSYNC_PII_POLICY: 'default', RUNSYNC_PII_KEY: KEY };
const defaultPolicy = (): PiiPolicy =>
  parsePolicy(readFileSync(defaultPolicyFile(), 'utf8'), { key: Buffer.from(KEY), source: 'default' });

async function sync(sim: Simulator, dir: string, env: Record<string, string>): Promise<void> {
  const engine = engineFor({ sim, dir, env });
  try {
    const r = await runPass(engine.deps);
    expect(r.status, r.errors.join('; ')).toBe('ok');
  } finally {
    await engine.close();
  }
}

async function read<T>(dir: string, fn: (wh: Warehouse) => Promise<T>): Promise<T> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    return await fn(wh);
  } finally {
    await wh.close();
  }
}

/** Every row of every resource table, but when it was fetched. */
async function dump(dir: string): Promise<Record<string, string[]>> {
  return read(dir, async (wh) => {
    const out: Record<string, string[]> = {};
    for (const t of RESOURCES.flatMap(tablesOf)) {
      const cols = await wh.all<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_name = $1`,
        [t.name],
      );
      const keep = cols.map((c) => c.c).filter((c) => !['fetched_at', 'valid_from', 'valid_to'].includes(c));
      const rows = await wh.all<{ j: string }>(
        `SELECT to_json(x)::VARCHAR AS j FROM (SELECT ${keep.map((c) => `"${c}"`).join(', ')} FROM "${t.name}") x ORDER BY j`,
      );
      out[t.name] = rows.map((r) => r.j);
    }
    return out;
  });
}

const SQL = {
  names: `SELECT count(DISTINCT trigger_customer_name) AS n FROM runs`,
  people: `SELECT count(DISTINCT user_name) AS n FROM run_messages`,
  // A customer's own messages, found by their name.
  theirMessages: `SELECT count(*) AS n FROM runs r JOIN run_messages m ON m.run_id = r.id AND m.user_name = r.trigger_customer_name`,
  // Lookups of a customer whose answer names them, across runs.
  lookups: `SELECT count(*) AS n FROM run_steps s JOIN runs r
              ON s.tool_output->>'$.customer.name' = r.trigger_customer_name`,
  emails: `SELECT count(DISTINCT tool_input->>'$.email') AS n FROM run_steps`,
};

describe('personal data in the tables', () => {
  const each = perTest();

  it('hashed columns join and count distinct as before, and a rebuild gives the same tables', async () => {
    const sim = await each.sim({ seed: 61, size: 250, days: 4 });
    const plain = each.dir();
    const kept = each.dir();
    await sync(sim, plain, {});
    await sync(sim, kept, ENV);
    const before = sim.clock.now() - SETTLE;
    expect(await diffWithTruth(sim, kept, before)).toEqual([]);

    const counts = async (dir: string) =>
      read(dir, async (wh) => {
        const out: Record<string, number> = {};
        for (const [k, sql] of Object.entries(SQL)) out[k] = Number((await wh.all<{ n: bigint }>(sql))[0]?.n);
        return out;
      });
    const want = await counts(plain);
    for (const [k, n] of Object.entries(want)) expect(n, k).toBeGreaterThan(5);
    expect(await counts(kept)).toEqual(want);

    // The names and emails are gone, hashed where they stood.
    const needles = needlesOf(sim, before);
    expect(found((await everythingUnder(plain)).warehouse, needles).length).toBe(4);
    const there = await everythingUnder(kept);
    expect(found(there.warehouse, needles)).toEqual([]);
    const [name] = await read(kept, (wh) =>
      wh.all<{ n: string }>(`SELECT trigger_customer_name AS n FROM runs WHERE trigger_customer_name <> '' LIMIT 1`),
    );
    expect(isHashed(name?.n as string)).toBe(true);
    expect(there.warehouse).toMatch(/\[email\]/);
    expect(there.warehouse).toMatch(/\[phone\]/);

    // The check finds what the policy would have removed, in the warehouse synced without it.
    const bare = await read(plain, (wh) => checkWarehouse(wh, wh.resources, null, 500));
    expect(bare.findings.map((f) => `${f.table}.${f.column}`)).toEqual(
      expect.arrayContaining([
        'runs.ticket_title',
        'runs.trigger_message_text',
        'run_messages.message',
        'run_steps.tool_input',
        'run_steps.tool_output',
      ]),
    );
    expect(bare.namedLike).toEqual(['runs.trigger_customer_name', 'run_messages.user_name']);
    const clean = await read(kept, (wh) => checkWarehouse(wh, wh.resources, defaultPolicy(), 500));
    expect(clean.findings).toEqual([]);
    expect(clean.namedLike).toEqual([]);

    // The raw archive holds the policy's payloads: a rebuild derives the same tables from them.
    const tables = await dump(kept);
    const r = await rebuildInPlace(kept, { pii: defaultPolicy() });
    expect(r.policyFiles).toBe(0);
    expect(await dump(kept)).toEqual(tables);
  });

  it('a policy chosen later, with a rebuild, reaches the archive, the tables and the Parquet tree', async () => {
    const sim = await each.sim({ seed: 62, size: 200, days: 3 });
    const later = each.dir();
    const fresh = each.dir();
    const narrow = [
      'tables:',
      '  runs:',
      '    trigger_customer_name: hash',
      '  run_messages:',
      '    user_name: hash',
    ].join('\n');
    const narrowFile = join(each.dir(), 'narrow.yaml');
    writeFileSync(narrowFile, narrow);
    await sync(sim, later, { RUNSYNC_PII_POLICY: narrowFile, RUNSYNC_PII_KEY: KEY });
    await sync(sim, fresh, ENV);
    const before = sim.clock.now() - SETTLE;
    const needles = needlesOf(sim, before);
    const under = await everythingUnder(later);
    // Names still stand in the tool outputs that the narrow policy keeps, and every email and phone.
    expect(found(under.raw, needles).map((l) => /^\d+ (\w+),/.exec(l)?.[1])).toEqual([
      'names',
      'emails',
      'phones',
      'others',
    ]);

    const r = await rebuildInPlace(later, { pii: defaultPolicy() });
    expect(r.policyFiles).toBeGreaterThan(0);
    const wh = await openWarehouse(later);
    try {
      await exportParquet(wh, { full: true });
    } finally {
      await wh.close();
    }
    const after = await everythingUnder(later);
    for (const [where, text] of Object.entries(after)) expect(found(text, needles), where).toEqual([]);
    // The same tables as a warehouse that had the policy from the start.
    expect(await dump(later)).toEqual(await dump(fresh));
    expect(await diffWithTruth(sim, later, before)).toEqual([]);
    // Applied once: a rebuild after it writes no archive file again.
    expect((await rebuildInPlace(later, { pii: defaultPolicy() })).policyFiles).toBe(0);
    // A policy that keeps more cannot bring back what an earlier one hashed.
    await rebuildInPlace(later, { pii: null });
    const [name] = await read(later, (w) =>
      w.all<{ n: string }>(`SELECT trigger_customer_name AS n FROM runs LIMIT 1`),
    );
    expect(isHashed(name?.n as string)).toBe(true);
  });
});
