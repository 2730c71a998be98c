import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Latest, TableManifest } from '../../src/export/manifest.ts';
import { exportTables } from '../../src/export/tables.ts';
import { CATALOG_TABLES, RESOURCES } from '../../src/resources/registry.ts';
import type { SimWorld } from '../../src/simulator/world.ts';
import type { ObjectStore } from '../../src/storage/types.ts';
import { loadCatalogListing } from '../../src/warehouse/load-catalog.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { loadToolOptions } from '../../src/warehouse/load-tool-options.ts';
import type { SqlRunner, Warehouse } from '../../src/warehouse/types.ts';
import { count } from '../warehouse/wh-kit.ts';

// Reading an exported tree back from the bucket as its two kinds of reader do: through
// _latest.json and the manifests (a snapshot), or by listing the tables' own folders.

export const TABLES = exportTables(RESOURCES);

const KIND = { tools: 'tool', agents: 'agent', guidelines: 'guideline', guardrails: 'guardrail', runbooks: 'runbook' };

export async function loadWorld(wh: Warehouse, world: SimWorld): Promise<void> {
  for (const t of CATALOG_TABLES)
    await loadCatalogListing(wh, t, world.catalogObjects(KIND[t as keyof typeof KIND] as never), { complete: true });
  await loadToolOptions(wh, world.toolOptions());
  await loadRunDetails(wh, [...world.truthRunDetails()]);
}

async function json<T>(store: ObjectStore, key: string): Promise<T> {
  const bytes = await store.get(key);
  if (bytes === null) throw new Error(`${key} is missing`);
  return JSON.parse(bytes.toString('utf8')) as T;
}

export async function readObject(store: ObjectStore, key: string, file: string): Promise<void> {
  const bytes = await store.get(key);
  if (bytes === null) throw new Error(`${key} is missing`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
}

/** The published generation, downloaded through the pointer into `dest` in the tables' layout. */
export async function readPublished(store: ObjectStore, dest: string): Promise<Latest> {
  const latest = await json<Latest>(store, '_latest.json');
  for (const [table, t] of Object.entries(latest.tables)) {
    const m = await json<TableManifest>(store, t.manifest);
    for (const f of m.files) await readObject(store, f.key, join(dest, table, f.path));
  }
  return latest;
}

/** Every file of the tables' own folders, as a reader listing them finds them. */
export async function readListing(store: ObjectStore, dest: string): Promise<string[]> {
  const keys = (await store.list('')).map((o) => o.key).filter((k) => !k.startsWith('_'));
  for (const k of keys) await readObject(store, k, join(dest, k));
  return keys;
}

/** Rows of the tables missing from the tree at `root`, and rows of the tree missing from the tables. */
export async function differences(db: SqlRunner, root: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) {
    const cols = (
      await db.all<{ name: string }>(
        `SELECT column_name AS name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
        [t.name],
      )
    )
      .map((c) => `"${c.name}"`)
      .join(', ');
    const source = t.partitioned
      ? `read_parquet('${join(root, t.name, '*', '*.parquet')}', hive_partitioning = true, union_by_name = true)`
      : `read_parquet('${join(root, t.name, 'data.parquet')}')`;
    const files = `SELECT ${cols} FROM ${source}`;
    const live = `SELECT ${cols} FROM ${t.name}`;
    const n = await count(
      db,
      `SELECT (SELECT count(*) FROM (${live} EXCEPT ALL ${files}))
            + (SELECT count(*) FROM (${files} EXCEPT ALL ${live}))`,
    );
    if (n > 0) out[t.name] = n;
  }
  return out;
}
