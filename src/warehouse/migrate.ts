import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../util/logger.ts';
import { WarehouseSchemaError } from './errors.ts';
import { addDeclaredColumns, createResourceTables, declaredFingerprint, dropRetiredKeys } from './schema.ts';
import { US_TO_TSTZ } from './sql.ts';
import { getState, setState } from './sync-state.ts';
import type { SqlRunner } from './types.ts';

// The schema: the resource tables, created from their declarations (src/resources), the numbered
// DDL files of schemas/duckdb (bookkeeping), applied in order, each in its own transaction
// together with its row in _sync_migrations, and the ready-made views (views.sql), which hold no
// data and are replaced whole whenever their file changes. Opening an older warehouse applies what
// it lacks, and adds the columns declared since it was made. A warehouse that knows a migration
// this version does not is refused.

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const FILE = /^(\d{4})_[\w-]+\.sql$/;

/** The ready-made views, beside the numbered files. */
export const VIEWS_FILE = 'views.sql';

export function defaultMigrationsDir(): string {
  // From src/warehouse/ in the sources, or dist/src/warehouse/ once built.
  for (const up of ['../../schemas/duckdb/', '../../../schemas/duckdb/']) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(dir, '0004_sync_bookkeeping.sql'))) return dir;
  }
  throw new WarehouseSchemaError('cannot find the schema files (schemas/duckdb) beside the runsync package');
}

export interface SchemaFiles {
  migrations: Migration[];
  /** views.sql, where the folder has one. */
  views: { sql: string; checksum: string } | null;
}

const checksumOf = (sql: string) => createHash('sha256').update(sql).digest('hex').slice(0, 16);

export async function readSchemaFiles(dir: string): Promise<SchemaFiles> {
  const names = await readdir(dir);
  const migrations: Migration[] = [];
  for (const f of names.filter((n) => FILE.test(n)).sort()) {
    const sql = await readFile(join(dir, f), 'utf8');
    const version = Number((FILE.exec(f) as RegExpExecArray)[1]);
    if (migrations.some((m) => m.version === version))
      throw new WarehouseSchemaError(`two schema files are numbered ${version} in ${dir}`);
    migrations.push({ version, name: f, sql, checksum: checksumOf(sql) });
  }
  const views = names.includes(VIEWS_FILE) ? await readFile(join(dir, VIEWS_FILE), 'utf8') : null;
  return { migrations, views: views === null ? null : { sql: views, checksum: checksumOf(views) } };
}

const LEDGER = `CREATE TABLE IF NOT EXISTS _sync_migrations (
  version INTEGER PRIMARY KEY,
  name VARCHAR NOT NULL,
  checksum VARCHAR NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL
)`;

// The resource tables' DDL, and then the views, once lived in these files; warehouses made then
// list them as applied.
const RETIRED: ReadonlyMap<number, string> = new Map([
  [1, '0001_runs.sql'],
  [2, '0002_catalog.sql'],
  [3, '0003_catalog_history.sql'],
  [7, '0007_views.sql'],
  [8, '0008_views_by_id.sql'],
]);
const RETIRED_TABLES = new Set([1, 2, 3]);

interface Applied {
  version: number;
  name: string;
  checksum: string;
}

async function applied(db: SqlRunner): Promise<Applied[] | null> {
  const exists = await db.all(
    `SELECT 1 FROM duckdb_tables() WHERE table_name = '_sync_migrations' AND schema_name = 'main'`,
  );
  if (exists.length === 0) return null;
  return db.all<Applied>(`SELECT version, name, checksum FROM _sync_migrations ORDER BY version`);
}

/** Migrations not yet applied; throws when the warehouse is newer than these files. */
export async function pendingMigrations(
  db: SqlRunner,
  migrations: readonly Migration[],
  logger?: Logger,
): Promise<Migration[]> {
  const done = (await applied(db)) ?? [];
  const known = new Map(migrations.map((m) => [m.version, m]));
  for (const a of done) {
    if (RETIRED.get(a.version) === a.name) continue;
    const m = known.get(a.version);
    // Same number, other name: a different migration (e.g. from another branch), not this one.
    if (!m || m.name !== a.name)
      throw new WarehouseSchemaError(
        `the warehouse has schema migration ${a.name}, which this runsync does not know; use a newer runsync`,
      );
    if (m.checksum !== a.checksum)
      logger?.warn({ migration: a.name }, 'a schema file changed after it was applied; it is not applied again');
  }
  const doneSet = new Set(done.map((a) => a.version));
  return migrations.filter((m) => !doneSet.has(m.version));
}

const DECLARED_KEY = 'schema.declared';
const VIEWS_KEY = 'schema.views';

/**
 * Creates declared tables and columns the warehouse lacks, and drops keys no longer declared, once
 * per change of the declarations.
 */
async function reconcileDeclared(db: SqlRunner, logger: Logger, now: () => number): Promise<void> {
  const fingerprint = declaredFingerprint();
  if ((await getState<string>(db, DECLARED_KEY)) === fingerprint) return;
  await db.run('BEGIN TRANSACTION');
  try {
    await createResourceTables(db);
    await addDeclaredColumns(db, logger);
    await dropRetiredKeys(db, logger);
    await setState(db, DECLARED_KEY, fingerprint, now());
    await db.run('COMMIT');
  } catch (e) {
    await db.run('ROLLBACK');
    throw new WarehouseSchemaError(
      `could not bring the tables in line with their declarations: ${(e as Error).message}`,
    );
  }
}

/** Runs every statement of a SQL file's text. */
export async function runScript(db: SqlRunner, sql: string): Promise<void> {
  const statements = await db.connection.extractStatements(sql);
  for (let i = 0; i < statements.count; i++) await (await statements.prepare(i)).run();
}

/** Replaces the ready-made views when their file is not the one last applied; whether it did. */
async function replaceViews(db: SqlRunner, views: SchemaFiles['views'], now: () => number): Promise<boolean> {
  if (views === null || (await getState<string>(db, VIEWS_KEY)) === views.checksum) return false;
  await db.run('BEGIN TRANSACTION');
  try {
    await runScript(db, views.sql);
    await setState(db, VIEWS_KEY, views.checksum, now());
    await db.run('COMMIT');
  } catch (e) {
    await db.run('ROLLBACK');
    throw new WarehouseSchemaError(`the ready-made views (${VIEWS_FILE}) failed: ${(e as Error).message}`);
  }
  return true;
}

/** Applies what is pending, in order, then the views; returns the versions applied. */
export async function migrate(
  db: SqlRunner,
  schema: SchemaFiles,
  logger: Logger,
  now: () => number,
): Promise<number[]> {
  const { migrations } = schema;
  await db.run(LEDGER);
  const todo = await pendingMigrations(db, migrations, logger);
  // The views of the numbered files read the resource tables: those come first (unless the files
  // are the old ones that made the tables themselves).
  if (todo.length && !todo.some((m) => RETIRED_TABLES.has(m.version) && RETIRED.get(m.version) === m.name))
    await createResourceTables(db);
  for (const m of todo) {
    await db.run('BEGIN TRANSACTION');
    try {
      await runScript(db, m.sql);
      await db.run(`INSERT INTO _sync_migrations VALUES ($1, $2, $3, ${US_TO_TSTZ('$4')})`, [
        m.version,
        m.name,
        m.checksum,
        BigInt(now()),
      ]);
      await db.run('COMMIT');
    } catch (e) {
      await db.run('ROLLBACK');
      throw new WarehouseSchemaError(`schema migration ${m.name} failed: ${(e as Error).message}`);
    }
    logger.debug({ migration: m.name }, 'applied schema migration');
  }
  await reconcileDeclared(db, logger, now);
  const views = await replaceViews(db, schema.views, now);
  // A new warehouse applies every migration: one line for all of them, not one each.
  if (todo.length) {
    const what = `${todo.length} schema migration${todo.length === 1 ? '' : 's'}${views ? ' and the ready-made views' : ''}`;
    logger.info({ migrations: todo.map((m) => m.name) }, `applied ${what}`);
  } else if (views) logger.info({ views: VIEWS_FILE }, 'replaced the ready-made views');
  return todo.map((m) => m.version);
}
