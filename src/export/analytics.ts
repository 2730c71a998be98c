import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { shareFile } from '../util/file-share.ts';
import { defaultMigrationsDir, VIEWS_FILE } from '../warehouse/migrate.ts';
import { columnsByTable, quoteIdent, quoteLiteral, sqlRunner, type TableColumn } from '../warehouse/sql.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import { ANALYTICS_FILE, type SqlRunner, type Warehouse } from '../warehouse/types.ts';
import { DATA_FILE, type ExportTable } from './tables.ts';
import type { ParquetTree } from './tree.ts';

// warehouse/analytics.duckdb: only views over the Parquet tree, under the warehouse's table names
// and with its column order, for anyone who wants to query while a sync runs. The writer never
// opens it: each export builds a new one beside it and renames it into place, so a reader holding
// the old one is not disturbed and the next opener gets the new views. The views read
// runsync_parquet_root() (a macro holding the folder's absolute path, or s3://…, which needs httpfs
// where they are opened); as DuckDB binds a view when it is made, they are made over an empty
// local copy of the tree's shape, and the macro is then pointed at the tree.

const ROOT_MACRO = 'runsync_parquet_root';
/** _sync_state key: what the views in analytics.duckdb say, as a hash. */
const ANALYTICS_STATE = 'export.analytics_views';

export async function writeAnalyticsViews(
  wh: Warehouse,
  tree: ParquetTree,
  tables: readonly ExportTable[],
): Promise<string> {
  const target = join(wh.dir, ANALYTICS_FILE);
  const withFiles: ExportTable[] = [];
  const views: string[] = [];
  const columns = await columnsByTable(wh);
  for (const t of tables) {
    const files = await tree.hasFiles(t.name);
    if (files) withFiles.push(t);
    views.push(viewSql(t, columns.get(t.name) ?? [], files));
  }
  // The views read the tree's files by pattern when queried, so new files need no new views. Made
  // again only when what they say changes (a column, a table's first file, the tree's place, the
  // ready-made views): making them binds every file of the tree, which grows with the days stored.
  const readyMade = await readFile(join(defaultMigrationsDir(), VIEWS_FILE), 'utf8');
  const signature = createHash('sha256')
    .update(JSON.stringify([tree.url, views, readyMade]))
    .digest('hex');
  if (existsSync(target) && (await getState(wh, ANALYTICS_STATE)) === signature) return target;
  const tmp = join(wh.dir, `.${ANALYTICS_FILE}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  // Made over the tree itself, the views would have DuckDB read every file's schema.
  const scaffold = `${tmp}.shape`;
  for (const t of withFiles) await writeShape(wh, t, scaffold);
  // Within the warehouse's own memory and threads, rather than DuckDB's defaults (most of the RAM).
  const instance = await DuckDBInstance.create(tmp, { memory_limit: wh.memoryLimit, threads: '1' });
  try {
    try {
      const conn = await instance.connect();
      const db = sqlRunner(conn);
      try {
        await db.run(`CREATE MACRO ${ROOT_MACRO}() AS ${quoteLiteral(scaffold)}`);
        for (const v of views) await db.run(v);
        await addReadyMadeViews(wh, conn, readyMade);
        await db.run(`CREATE OR REPLACE MACRO ${ROOT_MACRO}() AS ${quoteLiteral(tree.url)}`);
        await db.run('CHECKPOINT');
      } finally {
        conn.closeSync();
      }
    } finally {
      instance.closeSync();
      await rm(`${tmp}.wal`, { force: true });
      await rm(scaffold, { recursive: true, force: true });
    }
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await shareFile(tmp, wh.share);
  await rename(tmp, target);
  await setState(wh, ANALYTICS_STATE, signature, wh.now());
  return target;
}

/** The view of a table over the tree the macro names (`files`: false while it has none yet). */
function viewSql(t: ExportTable, cols: readonly TableColumn[], files: boolean): string {
  const list = cols.map((c) => quoteIdent(c.name)).join(', ');
  if (files) {
    const tail = t.partitioned ? `/${t.name}/*/*.parquet` : `/${t.name}/${DATA_FILE}`;
    const paths = `${ROOT_MACRO}() || ${quoteLiteral(tail)}`;
    const source = t.partitioned
      ? `read_parquet(${paths}, hive_partitioning = true, hive_types = {'created_date': DATE}, union_by_name = true)`
      : `read_parquet(${paths})`;
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
async function addReadyMadeViews(wh: Warehouse, conn: DuckDBConnection, sql: string): Promise<void> {
  const statements = await conn.extractStatements(sql);
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
