import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RESOURCES } from '../../src/resources/registry.ts';
import { tablesOf } from '../../src/resources/tables.ts';
import { WarehouseSchemaError } from '../../src/warehouse/errors.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { defaultMigrationsDir } from '../../src/warehouse/migrate.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { SqlRunner, Warehouse } from '../../src/warehouse/types.ts';
import { simDetails, tempDir } from './wh-kit.ts';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

// The resource tables' DDL as it was written by hand before the tables were derived from the
// resource declarations: warehouses made then have exactly these tables.
const LEGACY = join(import.meta.dirname, 'legacy-schema');
const LEGACY_FILES = ['0001_runs.sql', '0002_catalog.sql', '0003_catalog_history.sql'];
// The views once were numbered files too.
const LEGACY_VIEWS = ['0007_views.sql', '0008_views_by_id.sql'];

async function shape(db: SqlRunner, table: string): Promise<string[]> {
  const cols = await db.all<{ name: string; type: string; nullable: string }>(
    `SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM information_schema.columns
     WHERE table_schema = 'main' AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  const keys = await db.all<{ k: string }>(
    `SELECT array_to_string(constraint_column_names, ',') AS k FROM duckdb_constraints()
     WHERE table_name = $1 AND constraint_type = 'PRIMARY KEY'`,
    [table],
  );
  return [
    ...cols.map((c) => `${c.name} ${c.type}${c.nullable === 'NO' ? ' NOT NULL' : ''}`),
    ...keys.map((k) => `PK ${k.k}`),
  ];
}

let fresh: Warehouse | null = null;
/** A warehouse made by this version, for the shapes of its tables. */
async function freshShapes(): Promise<Warehouse> {
  fresh ??= await openWarehouse(join(tmp.dir, 'fresh-shapes'));
  return fresh;
}
afterEach(async () => {
  await fresh?.close();
  fresh = null;
});

const RESOURCE_TABLES = RESOURCES.flatMap((r) => tablesOf(r).map((t) => t.name));

/** A warehouse as an older runsync made it: the hand-written DDL, then the bookkeeping files of its day. */
function legacyMigrations(upTo: string): string {
  const dir = join(tmp.dir, 'legacy-migrations');
  mkdirSync(dir, { recursive: true });
  for (const f of LEGACY_FILES) copyFileSync(join(LEGACY, f), join(dir, f));
  for (const f of LEGACY_VIEWS.filter((f) => f.slice(0, 4) <= upTo)) copyFileSync(join(LEGACY, f), join(dir, f));
  const numbered = readdirSync(defaultMigrationsDir()).filter((f) => /^\d{4}_.*\.sql$/.test(f));
  for (const f of numbered.filter((f) => f.slice(0, 4) <= upTo))
    copyFileSync(join(defaultMigrationsDir(), f), join(dir, f));
  return dir;
}

describe('schema', () => {
  it('creates the resource tables from their declarations and applies every numbered file once, in order', async () => {
    const files = readdirSync(defaultMigrationsDir())
      .filter((f) => /^\d{4}_.*\.sql$/.test(f))
      .sort();
    expect(files[0]).toBe('0004_sync_bookkeeping.sql');
    const wh = await openWarehouse(join(tmp.dir, 'w'));
    const rows = await wh.all<{ version: number; name: string; checksum: string; t: bigint }>(
      `SELECT version, name, checksum, epoch_us(applied_at) AS t FROM _sync_migrations ORDER BY version`,
    );
    expect(rows.map((r) => r.name)).toEqual(files);
    expect(rows.every((r) => /^[0-9a-f]{16}$/.test(r.checksum) && r.t > 0n)).toBe(true);
    const tables = (await wh.all<{ t: string }>(`SELECT table_name AS t FROM duckdb_tables()`)).map((r) => r.t);
    for (const t of RESOURCE_TABLES.filter((t) => t !== 'run_tool_calls')) expect(tables, t).toContain(t);
    await wh.close();
    const again = await openWarehouse(join(tmp.dir, 'w'));
    expect(await again.all(`SELECT count(*) AS n FROM _sync_migrations`)).toEqual([{ n: BigInt(files.length) }]);
    await again.close();
  });

  it('derives the same tables, columns, types and keys as the hand-written DDL they replace', async () => {
    const legacy = await openWarehouse(join(tmp.dir, 'legacy'), { migrationsDir: legacyMigrations('0007') });
    const fresh = await openWarehouse(join(tmp.dir, 'fresh'));
    for (const t of RESOURCE_TABLES) expect(await shape(fresh, t), t).toEqual(await shape(legacy, t));
    await legacy.close();
    await fresh.close();
  });

  it('opens a warehouse made by an older runsync, keeps its data and adds what it lacks', async () => {
    const dir = join(tmp.dir, 'w');
    const first = await openWarehouse(dir, { migrationsDir: legacyMigrations('0008') });
    await first.run(`INSERT INTO run_tool_options VALUES ('x', 'X', 3, now())`);
    await first.close();

    const wh = await openWarehouse(dir);
    const names = (await wh.all<{ name: string }>(`SELECT name FROM _sync_migrations ORDER BY version`)).map(
      (r) => r.name,
    );
    expect(names.slice(0, 3)).toEqual(LEGACY_FILES);
    expect(names).toEqual(expect.arrayContaining([...LEGACY_VIEWS, '0009_schema_changes.sql']));
    // The views of today replace those the numbered files made.
    const cols = await wh.all<{ c: string }>(
      `SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'v_tool_stats'`,
    );
    expect(cols.map((c) => c.c)).toContain('recorded_tool_names');
    expect(await wh.all(`SELECT tool_name, run_count FROM run_tool_options`)).toEqual([
      { tool_name: 'x', run_count: 3n },
    ]);
    expect(await wh.all(`SELECT count(*) AS n FROM _sync_schema_changes`)).toEqual([{ n: 0n }]);
    await wh.close();
  });

  it('drops the unique index an older warehouse kept on runs, keeps its rows, and loads on without doubles', async () => {
    const dir = join(tmp.dir, 'keyed');
    const first = await openWarehouse(dir, { migrationsDir: legacyMigrations('0008') });
    await first.run(
      `INSERT INTO runs (id, created_at, updated_at, created_date, fetched_at, payload_hash)
       SELECT 'r' || i, TIMESTAMPTZ '2026-03-01 00:00:00+00', TIMESTAMPTZ '2026-03-01 00:00:00+00',
              DATE '2026-03-01', now(), 'h' FROM range(3) t(i)`,
    );
    await first.close();

    const wh = await openWarehouse(dir);
    const keys = await wh.all(
      `SELECT constraint_type AS t FROM duckdb_constraints() WHERE table_name = 'runs' AND constraint_type <> 'NOT NULL'`,
    );
    expect(keys).toEqual([]);
    expect(await shape(wh, 'runs')).toEqual(await shape(await freshShapes(), 'runs'));
    expect(await wh.all(`SELECT id FROM runs ORDER BY id`)).toEqual([{ id: 'r0' }, { id: 'r1' }, { id: 'r2' }]);
    const [run] = simDetails(41, 1) as { id: string; updated_at: string }[];
    await loadRunDetails(wh, [run as never]);
    await loadRunDetails(wh, [{ ...run, updated_at: '2027-01-01T00:00:00Z' } as never]);
    expect(await wh.all(`SELECT count(*) AS n FROM runs WHERE id = $1`, [run?.id as string])).toEqual([{ n: 1n }]);
    await wh.close();
  });

  it('adds a column declared since a warehouse was made, on its next open', async () => {
    const dir = join(tmp.dir, 'w');
    const first = await openWarehouse(dir);
    await first.run(`ALTER TABLE runs DROP COLUMN trigger_latest_comment`);
    await first.run(`DELETE FROM _sync_state WHERE key = 'schema.declared'`);
    await first.close();
    const wh = await openWarehouse(dir);
    expect((await shape(wh, 'runs')).some((c) => c.startsWith('trigger_latest_comment '))).toBe(true);
    await wh.close();
  });

  it('replaces the ready-made views when a newer runsync changes them, and only then', async () => {
    const schemaDir = join(tmp.dir, 'schema');
    mkdirSync(schemaDir);
    for (const f of readdirSync(defaultMigrationsDir()))
      copyFileSync(join(defaultMigrationsDir(), f), join(schemaDir, f));
    const dir = join(tmp.dir, 'w');
    const viewNames = async (wh: Warehouse) =>
      (await wh.all<{ v: string }>(`SELECT view_name AS v FROM duckdb_views() WHERE NOT internal ORDER BY 1`)).map(
        (r) => r.v,
      );
    const first = await openWarehouse(dir, { migrationsDir: schemaDir });
    expect(await viewNames(first)).toContain('v_runs_daily');
    await first.run(`DROP VIEW v_runs_daily`);
    await first.close();
    // The same file: not applied again (the view dropped by hand stays dropped).
    const same = await openWarehouse(dir, { migrationsDir: schemaDir });
    expect(await viewNames(same)).not.toContain('v_runs_daily');
    await same.close();
    const views = join(schemaDir, 'views.sql');
    writeFileSync(
      views,
      `${readFileSync(views, 'utf8')}\nCREATE OR REPLACE VIEW v_probe AS SELECT count(*) AS n FROM runs;\n`,
    );
    const changed = await openWarehouse(dir, { migrationsDir: schemaDir });
    expect(await viewNames(changed)).toEqual(expect.arrayContaining(['v_probe', 'v_runs_daily']));
    await changed.close();
  });

  it('refuses a warehouse made by a newer version, and a read-only open that would need migrating', async () => {
    const dir = join(tmp.dir, 'w');
    const newer = join(tmp.dir, 'newer');
    mkdirSync(newer);
    copyFileSync(join(defaultMigrationsDir(), '0004_sync_bookkeeping.sql'), join(newer, '0004_sync_bookkeeping.sql'));
    writeFileSync(join(newer, '9999_future.sql'), 'CREATE TABLE future_thing (x INTEGER);');
    await (await openWarehouse(dir, { migrationsDir: newer })).close();
    await expect(openWarehouse(dir)).rejects.toThrow(
      /schema migration 9999_future\.sql, which this runsync does not know/,
    );

    const olderDir = join(tmp.dir, 'w2');
    await (await openWarehouse(olderDir, { migrationsDir: legacyMigrations('0004') })).close();
    await expect(openWarehouse(olderDir, { readOnly: true })).rejects.toThrow(WarehouseSchemaError);
    await expect(openWarehouse(olderDir, { readOnly: true })).rejects.toThrow(
      /needs schema migrations \(0005_sync_engine\.sql/,
    );
    expect(readFileSync(join(LEGACY, '0001_runs.sql'), 'utf8')).toContain('CREATE TABLE runs');
  });

  it('uses no reserved word as a column name and no ENUM type anywhere', async () => {
    const wh: Warehouse = await openWarehouse(join(tmp.dir, 'w'));
    const reserved = await wh.all(`SELECT table_name, column_name FROM information_schema.columns c
      JOIN duckdb_keywords() k ON lower(c.column_name) = k.keyword_name AND k.keyword_category = 'reserved'
      WHERE table_schema = 'main'`);
    expect(reserved).toEqual([]);
    expect(
      await wh.all(`SELECT table_name, column_name FROM information_schema.columns WHERE data_type LIKE 'ENUM%'`),
    ).toEqual([]);
    expect((await shape(wh, 'run_steps')).some((c) => c.startsWith('ordinal '))).toBe(true);
    await wh.close();
  });
});
