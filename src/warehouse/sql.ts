import type { DuckDBConnection } from '@duckdb/node-api';
import type { Bookkeeping, SqlParams, SqlRunner } from './types.ts';

// Small SQL helpers shared by the loaders, the export and rebuild.

/** SQL for the TIMESTAMPTZ of integer epoch microseconds (never through a JavaScript Date). */
export const US_TO_TSTZ = (expr: string): string => `(make_timestamp(${expr}::BIGINT) AT TIME ZONE 'UTC')`;

export { quoteIdent, quoteLiteral } from '../util/sql-text.ts';

export function sqlRunner(connection: DuckDBConnection): SqlRunner {
  return {
    connection,
    async run(sql: string, params?: SqlParams) {
      await connection.run(sql, params ? [...params] : undefined);
    },
    async all<T>(sql: string, params?: SqlParams): Promise<T[]> {
      const reader = await connection.runAndReadAll(sql, params ? [...params] : undefined);
      return reader.getRowObjectsJS() as T[];
    },
  };
}

export async function runBookkeeping(tx: SqlRunner, bookkeeping: Bookkeeping | undefined): Promise<void> {
  if (!bookkeeping) return;
  if (typeof bookkeeping === 'function') {
    await bookkeeping(tx);
    return;
  }
  for (const [sql, params] of bookkeeping) await tx.run(sql, params);
}

/** A column of a table: name, type, and whether it takes NULL. */
export interface TableColumn {
  name: string;
  type: string;
  nullable: 'YES' | 'NO';
}

// duckdb_columns() rather than information_schema.columns: the latter is a view joining every
// catalog entry, several times slower to read.
const COLUMNS_SQL = `SELECT table_name AS "table", column_name AS name, data_type AS type,
  CASE WHEN is_nullable THEN 'YES' ELSE 'NO' END AS nullable
FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'`;

/** A table's columns in order. */
export async function tableColumns(db: SqlRunner, table: string): Promise<TableColumn[]> {
  return db.all<TableColumn>(`${COLUMNS_SQL} AND table_name = $1 ORDER BY column_index`, [table]);
}

/** The columns of every table and view of the main schema, in order, by table: one read. */
export async function columnsByTable(db: SqlRunner): Promise<Map<string, TableColumn[]>> {
  const rows = await db.all<TableColumn & { table: string }>(`${COLUMNS_SQL} ORDER BY table_name, column_index`);
  const out = new Map<string, TableColumn[]>();
  for (const { table, ...c } of rows) {
    const list = out.get(table) ?? [];
    list.push(c);
    out.set(table, list);
  }
  return out;
}
