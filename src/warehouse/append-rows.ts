import {
  DuckDBDataChunk,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValue,
  dateValue,
  listValue,
  timestampTZValue,
} from '@duckdb/node-api';
import type { Row } from './flatten-values.ts';
import { quoteIdent } from './sql.ts';
import type { SqlRunner } from './types.ts';

// Bulk-appends flattened rows into an existing table (a staging copy of a warehouse table) with
// DuckDB's Appender, converting each cell to the column's type: timestamps from integer
// microseconds (never a Date), dates from YYYY-MM-DD, lists from arrays, JSON as its text.

const CHUNK_ROWS = 2048;

export async function appendRows(
  db: SqlRunner,
  table: string,
  rows: readonly Row[],
  defaults: Row = {},
): Promise<void> {
  if (rows.length === 0) return;
  const names = (
    await db.all<{ name: string }>(
      `SELECT column_name AS name FROM duckdb_columns() WHERE table_name = $1 ORDER BY column_index`,
      [table],
    )
  ).map((r) => r.name);
  const appender = await db.connection.createAppender(table);
  try {
    const types: DuckDBType[] = names.map((_, i) => appender.columnType(i));
    for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
      const slice = rows.slice(start, start + CHUNK_ROWS);
      const columns = names.map((name, i) =>
        slice.map((row) =>
          toDuck(name in row ? row[name] : defaults[name], types[i] as DuckDBType, `${table}.${name}`),
        ),
      );
      const chunk = DuckDBDataChunk.create(types, slice.length);
      chunk.setColumns(columns);
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

function toDuck(value: Row[string] | undefined, type: DuckDBType, where: string): DuckDBValue {
  if (value === undefined || value === null) return null;
  switch (type.typeId) {
    case DuckDBTypeId.TIMESTAMP_TZ:
      return timestampTZValue(BigInt(value as number | bigint));
    case DuckDBTypeId.BIGINT:
      return BigInt(value as number | bigint);
    case DuckDBTypeId.DATE: {
      const [y, m, d] = String(value).split('-').map(Number);
      return dateValue(Date.UTC(y as number, (m as number) - 1, d as number) / 86_400_000);
    }
    case DuckDBTypeId.LIST:
      return listValue(value as (string | null)[]);
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.BOOLEAN:
    case DuckDBTypeId.DOUBLE:
      return value as DuckDBValue;
    default:
      throw new Error(`${where}: no conversion to ${type.toString()}`);
  }
}

/** A temp table shaped like `table`, empty. */
export async function createStageLike(db: SqlRunner, stage: string, table: string): Promise<void> {
  await db.run(`CREATE OR REPLACE TEMP TABLE ${quoteIdent(stage)} AS SELECT * FROM ${quoteIdent(table)} LIMIT 0`);
}
