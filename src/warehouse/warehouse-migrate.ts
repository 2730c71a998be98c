import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../util/logger.ts';
import { WarehouseSchemaError } from './warehouse-errors.ts';
import { US_TO_TSTZ } from './warehouse-sql.ts';
import type { SqlRunner } from './warehouse-types.ts';

// The schema is the numbered DDL files of schemas/duckdb, applied in order, each in its own
// transaction together with its row in _sync_migrations; opening an older warehouse applies what
// it lacks. A warehouse that knows a migration this version does not is refused.

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const FILE = /^(\d{4})_[\w-]+\.sql$/;

export function defaultMigrationsDir(): string {
  // From src/warehouse/ in the sources, or dist/src/warehouse/ once built.
  for (const up of ['../../schemas/duckdb/', '../../../schemas/duckdb/']) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(dir, '0001_runs.sql'))) return dir;
  }
  throw new WarehouseSchemaError('cannot find the schema files (schemas/duckdb) beside the runsync package');
}

export async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => FILE.test(f)).sort();
  const out: Migration[] = [];
  for (const f of files) {
    const sql = await readFile(join(dir, f), 'utf8');
    const version = Number((FILE.exec(f) as RegExpExecArray)[1]);
    if (out.some((m) => m.version === version)) throw new WarehouseSchemaError(`two schema files are numbered ${version} in ${dir}`);
    out.push({ version, name: f, sql, checksum: createHash('sha256').update(sql).digest('hex').slice(0, 16) });
  }
  return out;
}

const LEDGER = `CREATE TABLE IF NOT EXISTS _sync_migrations (
  version INTEGER PRIMARY KEY,
  name VARCHAR NOT NULL,
  checksum VARCHAR NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL
)`;

interface Applied {
  version: number;
  name: string;
  checksum: string;
}

async function applied(db: SqlRunner): Promise<Applied[] | null> {
  const exists = await db.all(`SELECT 1 FROM duckdb_tables() WHERE table_name = '_sync_migrations' AND schema_name = 'main'`);
  if (exists.length === 0) return null;
  return db.all<Applied>(`SELECT version, name, checksum FROM _sync_migrations ORDER BY version`);
}

/** Migrations not yet applied; throws when the warehouse is newer than these files. */
export async function pendingMigrations(db: SqlRunner, migrations: readonly Migration[], logger?: Logger): Promise<Migration[]> {
  const done = (await applied(db)) ?? [];
  const known = new Map(migrations.map((m) => [m.version, m]));
  for (const a of done) {
    const m = known.get(a.version);
    // Same number, other name: a different migration (e.g. from another branch), not this one.
    if (!m || m.name !== a.name) throw new WarehouseSchemaError(`the warehouse has schema migration ${a.name}, which this runsync does not know; use a newer runsync`);
    if (m.checksum !== a.checksum) logger?.warn({ migration: a.name }, 'a schema file changed after it was applied; it is not applied again');
  }
  const doneSet = new Set(done.map((a) => a.version));
  return migrations.filter((m) => !doneSet.has(m.version));
}

/** Applies what is pending, in order; returns the versions applied. */
export async function migrate(db: SqlRunner, migrations: readonly Migration[], logger: Logger, now: () => number): Promise<number[]> {
  await db.run(LEDGER);
  const todo = await pendingMigrations(db, migrations, logger);
  for (const m of todo) {
    await db.run('BEGIN TRANSACTION');
    try {
      const statements = await db.connection.extractStatements(m.sql);
      for (let i = 0; i < statements.count; i++) await (await statements.prepare(i)).run();
      await db.run(`INSERT INTO _sync_migrations VALUES ($1, $2, $3, ${US_TO_TSTZ('$4')})`, [m.version, m.name, m.checksum, BigInt(now())]);
      await db.run('COMMIT');
    } catch (e) {
      await db.run('ROLLBACK');
      throw new WarehouseSchemaError(`schema migration ${m.name} failed: ${(e as Error).message}`);
    }
    logger.info({ migration: m.name }, 'applied schema migration');
  }
  return todo.map((m) => m.version);
}
