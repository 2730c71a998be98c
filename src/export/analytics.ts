import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { shareFile } from '../util/file-share.ts';
import { defaultMigrationsDir, VIEWS_FILE } from '../warehouse/migrate.ts';
import { quoteIdent, quoteLiteral, sqlRunner, tableColumns } from '../warehouse/sql.ts';
import { ANALYTICS_FILE, type SqlRunner, type Warehouse } from '../warehouse/types.ts';
import { DATA_FILE, type ExportTable } from './tables.ts';
import type { ParquetTree } from './tree.ts';

// warehouse/analytics.duckdb: only views over the Parquet tree, under the warehouse's table names
// and with its column order, for anyone who wants to query while a sync runs. The writer never
// opens it: each export builds a new one beside it and renames it into place, so a reader holding
// the old one is not disturbed and the next opener gets the new views. A folder's paths are
// absolute. An object store's views read runsync_parquet_root() (a macro holding s3://…) and need
// httpfs where they are opened; as DuckDB binds a view when it is made, they are made over an
// empty local copy of the tree's shape, and the macro is then pointed at the store.

const ROOT_MACRO = 'runsync_parquet_root';

export async function writeAnalyticsViews(
  wh: Warehouse,
  tree: ParquetTree,
  tables: readonly ExportTable[],
): Promise<string> {
  const target = join(wh.dir, ANALYTICS_FILE);
  const tmp = join(wh.dir, `.${ANALYTICS_FILE}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  const scaffold = tree.kind === 'store' ? `${tmp}.shape` : null;
  const views: string[] = [];
  for (const t of tables) {
    const files = await tree.hasFiles(t.name);
    if (files && scaffold) await writeShape(wh, t, scaffold);
    views.push(await viewSql(wh, t, files ? tree.url : null, scaffold !== null));
  }
  const instance = await DuckDBInstance.create(tmp);
  try {
    const conn = await instance.connect();
    const db = sqlRunner(conn);
    try {
      if (scaffold) await db.run(`CREATE MACRO ${ROOT_MACRO}() AS ${quoteLiteral(scaffold)}`);
      for (const v of views) await db.run(v);
      await addReadyMadeViews(wh, conn);
      if (scaffold) await db.run(`CREATE OR REPLACE MACRO ${ROOT_MACRO}() AS ${quoteLiteral(tree.url)}`);
      await db.run('CHECKPOINT');
    } finally {
      conn.closeSync();
    }
  } catch (e) {
    instance.closeSync();
    await rm(tmp, { force: true });
    await rm(`${tmp}.wal`, { force: true });
    if (scaffold) await rm(scaffold, { recursive: true, force: true });
    throw e;
  }
  instance.closeSync();
  await rm(`${tmp}.wal`, { force: true });
  if (scaffold) await rm(scaffold, { recursive: true, force: true });
  await shareFile(tmp, wh.share);
  await rename(tmp, target);
  return target;
}

/** The view of a table over the tree at `root` (null: no files yet), named by path or by the macro. */
async function viewSql(db: SqlRunner, t: ExportTable, root: string | null, byMacro: boolean): Promise<string> {
  const cols = await tableColumns(db, t.name);
  const list = cols.map((c) => quoteIdent(c.name)).join(', ');
  if (root !== null) {
    const tail = t.partitioned ? `/${t.name}/*/*.parquet` : `/${t.name}/${DATA_FILE}`;
    const files = byMacro ? `${ROOT_MACRO}() || ${quoteLiteral(tail)}` : quoteLiteral(`${root}${tail}`);
    const source = t.partitioned
      ? `read_parquet(${files}, hive_partitioning = true, hive_types = {'created_date': DATE}, union_by_name = true)`
      : `read_parquet(${files})`;
    return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT ${list} FROM ${source}`;
  }
  // Nothing exported yet: an empty view of the right shape, so queries still bind.
  const typed = cols.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(', ');
  return `CREATE OR REPLACE VIEW ${quoteIdent(t.name)} AS SELECT ${typed} WHERE false`;
}

/** An empty file of the table's shape where the view expects its files, for the view to bind to. */
async function writeShape(db: SqlRunner, t: ExportTable, scaffold: string): Promise<void> {
  const dir = t.partitioned ? join(scaffold, t.name, 'created_date=1970-01-01') : join(scaffold, t.name);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const select = t.partitioned ? `SELECT * EXCLUDE (created_date)` : 'SELECT *';
  await db.run(
    `COPY (${select} FROM ${quoteIdent(t.name)} LIMIT 0) TO ${quoteLiteral(join(dir, DATA_FILE))} (FORMAT parquet)`,
  );
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
