import { createHash } from 'node:crypto';
import { listValue } from '@duckdb/node-api';
import { changedTable } from '../resources/contract.ts';
import { RESOURCES } from '../resources/registry.ts';
import { applyChanges, planChanges, type SchemaChange } from '../resources/schema-evolve.ts';
import type { Observed } from '../resources/schema-observe.ts';
import { createTableSql, SQL_TYPE, tablesOf } from '../resources/tables.ts';
import type { ColumnKind, ResourceSpec } from '../resources/types.ts';
import type { Logger } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import { quoteIdent, tableColumns, US_TO_TSTZ } from './sql.ts';
import type { SqlRunner, Warehouse } from './types.ts';

// The resource tables in DuckDB: created from the declarations, grown by schema evolution. The
// ledger _sync_schema_changes is the record of what evolution did, and the schema in force is
// read back from it when the warehouse is opened.

const KIND_OF_TYPE = new Map(Object.entries(SQL_TYPE).map(([k, t]) => [t, k as ColumnKind]));

/** A digest of the declared tables: when it changes, the warehouse is brought in line. */
export function declaredFingerprint(): string {
  const ddl = RESOURCES.flatMap((r) => tablesOf(r).map(createTableSql)).join(';\n');
  return createHash('sha256').update(ddl).digest('hex').slice(0, 16);
}

/** Creates every declared table that does not exist yet (a new warehouse). */
export async function createResourceTables(db: SqlRunner): Promise<void> {
  for (const r of RESOURCES) for (const t of tablesOf(r)) await db.run(createTableSql(t));
}

/** Adds declared columns an older warehouse lacks (a member declared since it was made). */
export async function addDeclaredColumns(db: SqlRunner, logger: Logger): Promise<void> {
  for (const r of RESOURCES) {
    for (const t of tablesOf(r)) {
      if (t.derivedFrom) continue;
      const have = new Set((await tableColumns(db, t.name)).map((c) => c.name));
      for (const c of t.columns) {
        if (have.has(c.name)) continue;
        // A default fills the rows made before (is_deleted false); DuckDB adds no NOT NULL here.
        const byDefault = c.default === undefined ? '' : ` DEFAULT ${c.default}`;
        await db.run(`ALTER TABLE ${quoteIdent(t.name)} ADD COLUMN ${quoteIdent(c.name)} ${c.type}${byDefault}`);
        logger.info({ table: t.name, column: c.name, type: c.type }, 'added a declared column');
      }
    }
  }
}

/**
 * Rebuilds, without its index, a table whose declaration no longer has a primary key (runs once
 * had one): DuckDB cannot drop a key constraint, so the rows move to a table of the same columns.
 */
export async function dropRetiredKeys(db: SqlRunner, logger: Logger): Promise<void> {
  for (const r of RESOURCES) {
    for (const t of tablesOf(r)) {
      if (t.derivedFrom || t.primaryKey.length > 0) continue;
      const keyed = await db.all(
        `SELECT 1 FROM duckdb_constraints() WHERE schema_name = 'main' AND table_name = $1
           AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')`,
        [t.name],
      );
      if (keyed.length === 0) continue;
      const cols = await tableColumns(db, t.name);
      const table = quoteIdent(t.name);
      const next = quoteIdent(`${t.name}__unkeyed`);
      const ddl = cols.map((c) => `${quoteIdent(c.name)} ${c.type}${c.nullable === 'NO' ? ' NOT NULL' : ''}`);
      await db.run(`CREATE TABLE ${next} (${ddl.join(', ')})`);
      await db.run(`INSERT INTO ${next} SELECT * FROM ${table}`);
      await db.run(`DROP TABLE ${table}`);
      await db.run(`ALTER TABLE ${next} RENAME TO ${table}`);
      logger.info({ table: t.name }, 'dropped the unique index of a table its merge keeps unique');
    }
  }
}

interface LedgerRow {
  resource: string;
  table_name: string;
  change: SchemaChange['change'];
  column_name: string | null;
  path: string[];
  column_type: string | null;
  previous_type: string | null;
}

export async function readSchemaChanges(db: SqlRunner): Promise<SchemaChange[]> {
  // A warehouse made with other schema files (tests build older ones) may have no ledger.
  const ledger = await db.all(`SELECT 1 FROM duckdb_tables() WHERE table_name = '_sync_schema_changes'`);
  if (ledger.length === 0) return [];
  const rows = await db.all<LedgerRow>(
    `SELECT resource, table_name, change, column_name, path, column_type, previous_type
     FROM _sync_schema_changes ORDER BY seq`,
  );
  return rows.map((r) => ({
    resource: r.resource,
    table: r.table_name,
    change: r.change,
    column: r.column_name,
    path: r.path,
    kind: r.column_type === null ? null : (KIND_OF_TYPE.get(r.column_type) ?? 'json'),
    previousKind: r.previous_type === null ? null : (KIND_OF_TYPE.get(r.previous_type) ?? 'json'),
  }));
}

/** The resources as this warehouse holds them: the declarations with its schema changes. */
export async function readResources(db: SqlRunner): Promise<ResourceSpec[]> {
  return applyChanges(RESOURCES, await readSchemaChanges(db));
}

/**
 * Makes a resource hold what was observed of a batch, inside the caller's transaction: new columns
 * (in the history table too), wider types, new child tables, each recorded in the ledger, and the
 * warehouse handle told of the schema in force (forgotten again if the transaction rolls back).
 * Where the schema contract discards them (or schema evolution is off), new members are only
 * recorded as held: they stay in the raw archive, from which `runsync rebuild` fills them once the
 * contract lets them evolve.
 */
export async function evolveSchema(
  tx: SqlRunner,
  wh: Warehouse,
  table: string,
  observed: Observed | null,
  at: Micros,
): Promise<SchemaChange[]> {
  if (observed === null) return [];
  const resource = wh.resource(table);
  const all = planChanges(resource, observed);
  if (all.length === 0) return [];
  // A frozen table's records that need a change were quarantined before they came here: what
  // reaches it was accepted (a rebuild re-making the columns its loads made), and evolves.
  const held = all.filter((c) => {
    const mode = wh.contract.modeOf(table, changedTable(resource, c));
    return mode === 'discard' || (mode === 'evolve' && !wh.schemaEvolution);
  });
  const planned = all.filter((c) => !held.includes(c));
  const kept = held.length ? await holdChanges(tx, wh, held, at) : [];
  if (planned.length === 0) return kept;
  const next = applyChanges(wh.resources, planned);
  const evolved = next.find((r) => r.table === table) as ResourceSpec;
  const history = evolved.merge === 'history';
  for (const c of planned) {
    const targets = [c.table, ...(history ? [`${c.table}_history`] : [])];
    if (c.change === 'child-table') {
      for (const t of tablesOf(evolved)) if (targets.includes(t.name)) await tx.run(createTableSql(t));
    } else {
      const type = SQL_TYPE[c.kind as ColumnKind];
      const col = quoteIdent(c.column as string);
      for (const t of targets) {
        if (c.change === 'widen' && type === 'JSON') await retypeToJson(tx, t, c.column as string);
        else
          await tx.run(
            c.change === 'column'
              ? `ALTER TABLE ${quoteIdent(t)} ADD COLUMN IF NOT EXISTS ${col} ${type}`
              : `ALTER TABLE ${quoteIdent(t)} ALTER ${col} TYPE ${type}`,
          );
      }
    }
    await record(tx, c, c.change, at);
    wh.logger.info(describe(c), MESSAGES[c.change]);
  }
  wh.adoptResources(next);
  return [...kept, ...planned];
}

/**
 * A column made JSON, its values as JSON of what they were. DuckDB cannot replay `ALTER … TYPE
 * JSON` from its write-ahead log (opening the file fails until the log is removed), and a load
 * leaves its log to the next opener: so the table is made again, in the same transaction, with
 * its columns in their order and its key, and the rows copied over.
 */
async function retypeToJson(tx: SqlRunner, table: string, column: string): Promise<void> {
  const cols = await tableColumns(tx, table);
  const keys = await tx.all<{ k: string[] }>(
    `SELECT constraint_column_names AS k FROM duckdb_constraints()
     WHERE schema_name = 'main' AND table_name = $1 AND constraint_type = 'PRIMARY KEY'`,
    [table],
  );
  const key = keys[0]?.k ?? [];
  const next = quoteIdent(`${table}__retyped`);
  const ddl = cols.map(
    (c) => `${quoteIdent(c.name)} ${c.name === column ? 'JSON' : c.type}${c.nullable === 'NO' ? ' NOT NULL' : ''}`,
  );
  if (key.length) ddl.push(`PRIMARY KEY (${key.map(quoteIdent).join(', ')})`);
  await tx.run(`CREATE TABLE ${next} (${ddl.join(', ')})`);
  const values = cols.map((c) => (c.name === column ? `to_json(${quoteIdent(c.name)})` : quoteIdent(c.name)));
  await tx.run(`INSERT INTO ${next} SELECT ${values.join(', ')} FROM ${quoteIdent(table)}`);
  await tx.run(`DROP TABLE ${quoteIdent(table)}`);
  await tx.run(`ALTER TABLE ${next} RENAME TO ${quoteIdent(table)}`);
}

const MESSAGES: Record<SchemaChange['change'], string> = {
  column: 'the API sent a new member; it is now a column',
  widen: 'a column added for a new member was widened to fit a later value',
  'child-table': 'the API sent a new array of objects; it is now a table',
  held: 'the API sent a new member; the schema contract discards it (or evolution is off): raw archive only',
};

function describe(c: SchemaChange): Record<string, unknown> {
  return { resource: c.resource, table: c.table, column: c.column, path: c.path.join('.'), type: c.kind };
}

async function holdChanges(tx: SqlRunner, wh: Warehouse, planned: SchemaChange[], at: Micros): Promise<SchemaChange[]> {
  const held = await tx.all<{ t: string; p: string }>(
    `SELECT table_name AS t, array_to_string(path, '.') AS p FROM _sync_schema_changes WHERE change = 'held'`,
  );
  const known = new Set(held.map((h) => `${h.t}\u0000${h.p}`));
  const out: SchemaChange[] = [];
  for (const c of planned) {
    if (c.change === 'widen' || known.has(`${c.table}\u0000${c.path.join('.')}`)) continue;
    await record(tx, c, 'held', at);
    wh.logger.warn(describe(c), MESSAGES.held);
    out.push({ ...c, change: 'held' });
  }
  return out;
}

async function record(tx: SqlRunner, c: SchemaChange, change: SchemaChange['change'], at: Micros): Promise<void> {
  await tx.run(
    `INSERT INTO _sync_schema_changes
     SELECT coalesce(max(seq), 0) + 1, ${US_TO_TSTZ('$1')}, $2, $3, $4, $5, $6, $7, $8 FROM _sync_schema_changes`,
    [
      BigInt(at),
      c.resource,
      c.table,
      change,
      c.column,
      listValue([...c.path]),
      c.kind && SQL_TYPE[c.kind],
      c.previousKind && SQL_TYPE[c.previousKind],
    ],
  );
}
