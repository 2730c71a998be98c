import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CATALOG_COLUMNS, TOOL_OPTION_COLUMNS, TOOL_PARAMETER_COLUMNS } from '../../src/warehouse/spec-catalog.ts';
import { RUN_CHILDREN, RUN_COLUMNS } from '../../src/warehouse/spec-runs.ts';
import { WarehouseSchemaError } from '../../src/warehouse/warehouse-errors.ts';
import { defaultMigrationsDir, readMigrations } from '../../src/warehouse/warehouse-migrate.ts';
import { openWarehouse } from '../../src/warehouse/warehouse-open.ts';
import { tableColumns } from '../../src/warehouse/warehouse-sql.ts';
import type { Warehouse } from '../../src/warehouse/warehouse-types.ts';
import { tempDir } from './wh-kit.ts';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const DUCK: Record<string, string> = {
  text: 'VARCHAR', boolean: 'BOOLEAN', double: 'DOUBLE', bigint: 'BIGINT', timestamptz: 'TIMESTAMP WITH TIME ZONE', json: 'JSON', text_list: 'VARCHAR[]',
};

async function columns(wh: Warehouse, table: string): Promise<string[]> {
  return (await tableColumns(wh, table)).map((c) => `${c.name} ${c.type}`);
}

describe('schema', () => {
  it('applies every numbered file once, in order, and records it', async () => {
    const files = readdirSync(defaultMigrationsDir()).filter((f) => /^\d{4}_.*\.sql$/.test(f)).sort();
    expect(files.slice(0, 4)).toEqual(['0001_runs.sql', '0002_catalog.sql', '0003_catalog_history.sql', '0004_sync_bookkeeping.sql']);
    const wh = await openWarehouse(join(tmp.dir, 'w'));
    const rows = await wh.all<{ version: number; name: string; checksum: string; t: bigint }>(
      `SELECT version, name, checksum, epoch_us(applied_at) AS t FROM _sync_migrations ORDER BY version`,
    );
    expect(rows.map((r) => r.name)).toEqual(files);
    expect(rows.map((r) => r.version)).toEqual(files.map((f) => Number(f.slice(0, 4))));
    expect(rows.every((r) => /^[0-9a-f]{16}$/.test(r.checksum) && r.t > 0n)).toBe(true);
    await wh.close();
    const again = await openWarehouse(join(tmp.dir, 'w'));
    expect(await again.all(`SELECT count(*) AS n FROM _sync_migrations`)).toEqual([{ n: BigInt(files.length) }]);
    await again.close();
  });

  it('migrates an older warehouse on open and keeps its data', async () => {
    const old = join(tmp.dir, 'old-schema');
    mkdirSync(old);
    copyFileSync(join(defaultMigrationsDir(), '0001_runs.sql'), join(old, '0001_runs.sql'));
    const dir = join(tmp.dir, 'w');
    const first = await openWarehouse(dir, { migrationsDir: old });
    await first.run(`INSERT INTO run_tool_options VALUES ('x', 'X', 3, now())`);
    expect((await first.all(`SELECT table_name FROM duckdb_tables() WHERE table_name = 'tools'`)).length).toBe(0);
    await first.close();

    const wh = await openWarehouse(dir);
    const all = (await readMigrations(defaultMigrationsDir())).map((m) => m.version);
    expect(all.slice(0, 4)).toEqual([1, 2, 3, 4]);
    expect((await wh.all<{ version: number }>(`SELECT version FROM _sync_migrations ORDER BY version`)).map((r) => r.version)).toEqual(all);
    expect(await wh.all(`SELECT tool_name, run_count FROM run_tool_options`)).toEqual([{ tool_name: 'x', run_count: 3n }]);
    expect(await columns(wh, 'tools_history')).toContain('valid_to TIMESTAMP WITH TIME ZONE');
    await wh.close();
  });

  it('refuses a warehouse made by a newer version, and a read-only open that would need migrating', async () => {
    const dir = join(tmp.dir, 'w');
    const newer = join(tmp.dir, 'newer');
    mkdirSync(newer);
    for (const f of ['0001_runs.sql', '0002_catalog.sql', '0003_catalog_history.sql', '0004_sync_bookkeeping.sql']) copyFileSync(join(defaultMigrationsDir(), f), join(newer, f));
    writeFileSync(join(newer, '9999_future.sql'), 'CREATE TABLE future_thing (x INTEGER);');
    await (await openWarehouse(dir, { migrationsDir: newer })).close();
    await expect(openWarehouse(dir)).rejects.toThrow(/schema migration 9999_future\.sql, which this runsync does not know/);

    const olderDir = join(tmp.dir, 'w2');
    const only1 = join(tmp.dir, 'only1');
    mkdirSync(only1);
    copyFileSync(join(defaultMigrationsDir(), '0001_runs.sql'), join(only1, '0001_runs.sql'));
    await (await openWarehouse(olderDir, { migrationsDir: only1 })).close();
    await expect(openWarehouse(olderDir, { readOnly: true })).rejects.toThrow(WarehouseSchemaError);
    await expect(openWarehouse(olderDir, { readOnly: true })).rejects.toThrow(/needs schema migrations \(0002_catalog\.sql/);
  });

  it('has exactly the columns the flattening specs describe, with their types', async () => {
    const wh = await openWarehouse(join(tmp.dir, 'w'));
    const expectCols = async (table: string, specCols: { name: string; kind: string }[], before: string[] = [], after: string[] = []) => {
      const got = await columns(wh, table);
      expect(got, table).toEqual([...before, ...specCols.map((c) => `${c.name} ${DUCK[c.kind]}`), ...after]);
    };
    await expectCols('runs', [...RUN_COLUMNS], [], ['created_date DATE', 'fetched_at TIMESTAMP WITH TIME ZONE', 'payload_hash VARCHAR']);
    for (const c of RUN_CHILDREN) await expectCols(c.table, [...c.columns], ['run_id VARCHAR'], ['created_date DATE']);
    expect(await columns(wh, 'run_tool_calls')).toEqual(await columns(wh, 'run_steps'));
    await expectCols('run_tool_options', [...TOOL_OPTION_COLUMNS], [], ['fetched_at TIMESTAMP WITH TIME ZONE']);
    for (const [table, cols] of Object.entries(CATALOG_COLUMNS)) {
      await expectCols(table, [...cols]);
      await expectCols(`${table}_history`, [...cols], [], ['content_hash VARCHAR', 'valid_from TIMESTAMP WITH TIME ZONE', 'valid_to TIMESTAMP WITH TIME ZONE', 'is_deleted BOOLEAN']);
    }
    const params = TOOL_PARAMETER_COLUMNS.filter((c) => c.name !== 'name');
    await expectCols('tool_parameters', [...params], ['tool_id VARCHAR', 'name VARCHAR', 'ordinal BIGINT']);
    await expectCols('tool_parameters_history', [...params], ['tool_id VARCHAR', 'name VARCHAR', 'ordinal BIGINT'], ['valid_from TIMESTAMP WITH TIME ZONE', 'valid_to TIMESTAMP WITH TIME ZONE', 'is_deleted BOOLEAN']);
    await wh.close();
  });

  it('uses no reserved word as a column name and no ENUM type anywhere', async () => {
    const wh = await openWarehouse(join(tmp.dir, 'w'));
    const reserved = await wh.all(`SELECT table_name, column_name FROM information_schema.columns c
      JOIN duckdb_keywords() k ON lower(c.column_name) = k.keyword_name AND k.keyword_category = 'reserved' WHERE table_schema = 'main'`);
    expect(reserved).toEqual([]);
    expect(await wh.all(`SELECT table_name, column_name FROM information_schema.columns WHERE data_type LIKE 'ENUM%'`)).toEqual([]);
    expect((await columns(wh, 'run_steps')).some((c) => c.startsWith('ordinal '))).toBe(true);
    await wh.close();
  });
});
