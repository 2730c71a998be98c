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

/** A table's columns in order: name, type, and whether they take NULL. */
export async function tableColumns(
  db: SqlRunner,
  table: string,
): Promise<{ name: string; type: string; nullable: 'YES' | 'NO' }[]> {
  return db.all<{ name: string; type: string; nullable: 'YES' | 'NO' }>(
    `SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM information_schema.columns
     WHERE table_schema = 'main' AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
}
