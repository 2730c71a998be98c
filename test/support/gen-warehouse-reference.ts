// Writes docs/warehouse.md: the warehouse reference rendered from the registry, views.sql and a
// warehouse freshly migrated in a temporary folder (through the warehouse's own open and migrate),
// so the page shows the types DuckDB holds. `npm run docs:warehouse` rewrites the page; a test
// fails when it is out of date.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type DescribedObject, renderWarehouseReference } from '../../src/resources/reference.ts';
import { RESOURCES } from '../../src/resources/registry.ts';
import { defaultMigrationsDir, openWarehouse, VIEWS_FILE } from '../../src/warehouse/index.ts';
import type { SqlRunner } from '../../src/warehouse/types.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
export const REFERENCE_FILE = join(ROOT, 'docs/warehouse.md');

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  kind: 'table' | 'view';
}

/** Every table and view of schema main, with its columns in order and its primary key. */
export async function describeWarehouse(db: SqlRunner): Promise<DescribedObject[]> {
  const columns = await db.all<ColumnRow>(
    `SELECT c.table_name, c.column_name, c.data_type,
            CASE WHEN v.view_name IS NULL THEN 'table' ELSE 'view' END AS kind
     FROM duckdb_columns() c
     LEFT JOIN duckdb_views() v ON v.view_name = c.table_name AND v.schema_name = c.schema_name
     WHERE c.schema_name = 'main' AND c.database_name = current_database() AND NOT c.internal
     ORDER BY c.table_name, c.column_index`,
  );
  const keys = await db.all<{ table_name: string; names: string[] }>(
    `SELECT table_name, constraint_column_names AS names FROM duckdb_constraints()
     WHERE schema_name = 'main' AND database_name = current_database() AND constraint_type = 'PRIMARY KEY'`,
  );
  const out = new Map<string, DescribedObject & { columns: { name: string; type: string }[] }>();
  for (const c of columns) {
    const o = out.get(c.table_name) ?? {
      name: c.table_name,
      kind: c.kind,
      columns: [],
      primaryKey: keys.find((k) => k.table_name === c.table_name)?.names ?? [],
    };
    o.columns.push({ name: c.column_name, type: c.data_type });
    out.set(c.table_name, o);
  }
  return [...out.values()];
}

/** The objects of a warehouse migrated from nothing, in a temporary folder removed after. */
export async function freshWarehouseSchema(): Promise<DescribedObject[]> {
  const dir = await mkdtemp(join(tmpdir(), 'runsync-reference-'));
  try {
    const wh = await openWarehouse(dir);
    try {
      return await describeWarehouse(wh);
    } finally {
      await wh.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The page as the declarations and the migrated warehouse give it. */
export async function generateWarehouseReference(database?: readonly DescribedObject[]): Promise<string> {
  const viewsSql = await readFile(join(defaultMigrationsDir(), VIEWS_FILE), 'utf8');
  return renderWarehouseReference({
    resources: RESOURCES,
    database: database ?? (await freshWarehouseSchema()),
    viewsSql,
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await writeFile(REFERENCE_FILE, await generateWarehouseReference());
  console.log(`wrote ${REFERENCE_FILE}`);
}
