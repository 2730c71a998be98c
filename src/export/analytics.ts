import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { shareFile } from '../util/file-share.ts';
import { defaultMigrationsDir, VIEWS_FILE } from '../warehouse/migrate.ts';
import { quoteIdent, quoteLiteral, sqlRunner, tableColumns } from '../warehouse/sql.ts';
import { ANALYTICS_FILE, type SqlRunner, type Warehouse } from '../warehouse/types.ts';
import { DATA_FILE, type ExportTable } from './tables.ts';

// warehouse/analytics.duckdb: only views over the Parquet tree, under the warehouse's table names
// and with its column order, for anyone who wants to query while a sync runs. The writer never
// opens it: each export builds a new one beside it and renames it into place, so a reader holding
// the old one is not disturbed and the next opener gets the new views. Paths are absolute.

export async function writeAnalyticsViews(
  wh: Warehouse,
  parquetRoot: string,
  tables: readonly ExportTable[],
): Promise<string> {
  const target = join(wh.dir, ANALYTICS_FILE);
  const tmp = join(wh.dir, `.${ANALYTICS_FILE}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  const views: string[] = [];
  for (const t of tables) views.push(await viewSql(wh, t, parquetRoot));
  const instance = await DuckDBInstance.create(tmp);
  try {
    const conn = await instance.connect();
    const db = sqlRunner(conn);
    try {
      for (const v of views) await db.run(v);
      await addReadyMadeViews(wh, conn);
      await db.run('CHECKPOINT');
    } finally {
      conn.closeSync();
    }
  } catch (e) {
    instance.closeSync();
    await rm(tmp, { force: true });
    await rm(`${tmp}.wal`, { force: true });
    throw e;
  }
  instance.closeSync();
  await rm(`${tmp}.wal`, { force: true });
  await shareFile(tmp, wh.share);
  await rename(tmp, target);
  return target;
}

async function viewSql(db: SqlRunner, t: ExportTable, root: string): Promise<string> {
  const cols = await tableColumns(db, t.name);
  const list = cols.map((c) => quoteIdent(c.name)).join(', ');
  const dir = join(root, t.name);
  if (await hasFiles(dir, t.partitioned)) {
    const source = t.partitioned
      ? `read_parquet(${quoteLiteral(join(dir, '*', '*.parquet'))}, hive_partitioning = true,
           hive_types = {'created_date': DATE}, union_by_name = true)`
      : `read_parquet(${quoteLiteral(join(dir, DATA_FILE))})`;
    return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT ${list} FROM ${source}`;
  }
  // Nothing exported yet: an empty view of the right shape, so queries still bind.
  const typed = cols.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(', ');
  return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT ${typed} WHERE false`;
}

async function hasFiles(dir: string, partitioned: boolean): Promise<boolean> {
  if (!existsSync(dir)) return false;
  if (!partitioned) return existsSync(join(dir, DATA_FILE));
  for (const part of await readdir(dir)) {
    const files = await readdir(join(dir, part)).catch(() => []);
    if (files.some((f) => f.endsWith('.parquet'))) return true;
  }
  return false;
}

// The ready-made views (schemas/duckdb/views.sql) name only exported tables, which have the same
// names here, so their SQL is replayed as it is. One that cannot be created here is left out with a
// warning rather than failing an export whose Parquet is already in place.
async function addReadyMadeViews(wh: Warehouse, conn: DuckDBConnection): Promise<void> {
  const statements = await conn.extractStatements(await readFile(join(defaultMigrationsDir(), VIEWS_FILE), 'utf8'));
  for (let i = 0; i < statements.count; i++) {
    try {
      await (await statements.prepare(i)).run();
    } catch (e) {
      wh.logger.warn(
        { file: VIEWS_FILE, statement: i + 1, err: (e as Error).message },
        'a ready-made view could not be created in analytics.duckdb',
      );
    }
  }
}
