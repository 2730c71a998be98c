import {
  type DuckDBConnection,
  DuckDBTimestampTZValue,
  type DuckDBType,
  DuckDBTypeId,
  type DuckDBValue,
  type Json,
  JsonDuckDBValueConverter,
} from '@duckdb/node-api';
import { truncateToWidth } from '../util/display-width.ts';

// Runs a person's SQL and hands the result over chunk by chunk, with each column's kind, so a
// large result is printed as it arrives instead of held whole. Cells are read as DuckDB renders
// them (timestamps keep their microseconds, BIGINT stays exact), never through a JavaScript Date.
// For scripts (CSV, JSON) a timestamp is ISO 8601 in UTC, as the API and `status --json` write it.

export type ColumnKind = 'int' | 'float' | 'decimal' | 'bool' | 'json' | 'nested' | 'timestamp' | 'text';

export interface QueryChunk {
  readonly rows: DuckDBValue[][];
  /** The same rows as JSON-friendly values (nested types as arrays and objects). */
  json(): Json[][];
}

export interface QueryStream {
  /** Column names, made unique (a repeated name gets a suffix) so rows can be objects. */
  readonly columns: string[];
  readonly kinds: ColumnKind[];
  readonly chunks: AsyncIterable<QueryChunk>;
}

/** The SQL failed: DuckDB's message, as DuckDB wrote it. */
export class QueryError extends Error {
  override readonly name = 'QueryError';
}

const INTS = new Set([
  DuckDBTypeId.TINYINT,
  DuckDBTypeId.SMALLINT,
  DuckDBTypeId.INTEGER,
  DuckDBTypeId.BIGINT,
  DuckDBTypeId.HUGEINT,
  DuckDBTypeId.UTINYINT,
  DuckDBTypeId.USMALLINT,
  DuckDBTypeId.UINTEGER,
  DuckDBTypeId.UBIGINT,
  DuckDBTypeId.UHUGEINT,
]);
const NESTED = new Set([
  DuckDBTypeId.LIST,
  DuckDBTypeId.ARRAY,
  DuckDBTypeId.STRUCT,
  DuckDBTypeId.MAP,
  DuckDBTypeId.UNION,
]);

export function columnKind(type: DuckDBType): ColumnKind {
  if (type.alias?.toUpperCase() === 'JSON') return 'json';
  if (INTS.has(type.typeId)) return 'int';
  if (type.typeId === DuckDBTypeId.FLOAT || type.typeId === DuckDBTypeId.DOUBLE) return 'float';
  if (type.typeId === DuckDBTypeId.DECIMAL) return 'decimal';
  if (type.typeId === DuckDBTypeId.BOOLEAN) return 'bool';
  if (NESTED.has(type.typeId)) return 'nested';
  if (TIMESTAMPS.has(type.typeId)) return 'timestamp';
  return 'text';
}

const TIMESTAMPS = new Set([
  DuckDBTypeId.TIMESTAMP_TZ,
  DuckDBTypeId.TIMESTAMP,
  DuckDBTypeId.TIMESTAMP_S,
  DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP_NS,
]);

/**
 * A timestamp as ISO 8601, its fraction kept: `2026-11-01T22:48:27.870867Z` for a TIMESTAMPTZ (in
 * UTC, whatever this machine's zone), without the zone for a timestamp that has none; infinity
 * and dates beyond JavaScript's as DuckDB writes them.
 */
export function isoTimestamp(v: DuckDBValue): string {
  const t = v as { micros?: bigint; millis?: bigint; seconds?: bigint; nanos?: bigint; isFinite?: boolean };
  if (t.isFinite === false) return String(v);
  const [units, perSecond, digits] =
    typeof t.nanos === 'bigint'
      ? [t.nanos, 1_000_000_000n, 9]
      : typeof t.micros === 'bigint'
        ? [t.micros, 1_000_000n, 6]
        : typeof t.millis === 'bigint'
          ? [t.millis, 1000n, 3]
          : typeof t.seconds === 'bigint'
            ? [t.seconds, 1n, 0]
            : [null, 1n, 0];
  if (units === null) return String(v);
  let seconds = units / perSecond;
  let frac = units % perSecond;
  if (frac < 0n) {
    frac += perSecond;
    seconds -= 1n;
  }
  const at = new Date(Number(seconds) * 1000);
  if (Number.isNaN(at.getTime())) return String(v);
  const base = at.toISOString().slice(0, 19);
  const text = frac === 0n ? base : `${base}.${String(frac).padStart(digits, '0')}`;
  return v instanceof DuckDBTimestampTZValue ? `${text}Z` : text;
}

/** Runs every statement of `sql`; the last one's result is streamed. */
export async function streamQuery(connection: DuckDBConnection, sql: string): Promise<QueryStream> {
  const result = await failing(async () => {
    const statements = await connection.extractStatements(sql);
    if (statements.count === 0) throw new QueryError('there is no SQL statement to run');
    for (let i = 0; i < statements.count - 1; i++) await (await statements.prepare(i)).run();
    return (await statements.prepare(statements.count - 1)).stream();
  });
  const kinds = result.columnTypes().map(columnKind);
  async function* chunks(): AsyncGenerator<QueryChunk> {
    for (;;) {
      const chunk = await failing(() => result.fetchChunk());
      if (!chunk || chunk.rowCount === 0) return;
      yield { rows: chunk.getRows(), json: () => chunk.convertRows(JsonDuckDBValueConverter) as Json[][] };
    }
  }
  return { columns: result.deduplicatedColumnNames(), kinds, chunks: chunks() };
}

async function failing<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof QueryError) throw e;
    // The Node binding's own framing adds nothing to DuckDB's message.
    throw new QueryError((e as Error).message.replace(/^Failed to (extract statements|prepare statement): /, ''));
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** A cell as text: DuckDB's rendering, timestamps in ISO 8601; null as ''. */
export function cellText(v: DuckDBValue, kind: ColumnKind = 'text'): string {
  if (v === null) return '';
  return kind === 'timestamp' ? isoTimestamp(v) : String(v);
}

/** A cell for the aligned table: numbers stay numbers (right-aligned), text is kept on one line. */
export function cellForTable(v: DuckDBValue, kind: ColumnKind, maxWidth: number): unknown {
  if (v === null) return null;
  if (kind === 'int') return typeof v === 'bigint' ? v : BigInt(String(v));
  if (kind === 'float' && typeof v === 'number') return v;
  if (kind === 'decimal') return Number(String(v));
  const text = String(v).replace(CONTROL, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : c === '\r' ? '\\r' : ' '));
  return truncateToWidth(text, maxWidth);
}

/** A cell for JSON output: numbers as numbers where exact, JSON columns parsed, nested values as JSON. */
export function cellForJson(v: DuckDBValue, kind: ColumnKind, json: Json): Json {
  if (v === null) return null;
  switch (kind) {
    case 'int': {
      const n = Number(String(v));
      return Number.isSafeInteger(n) ? n : String(v);
    }
    case 'float':
      return typeof v === 'number' && Number.isFinite(v) ? v : String(v);
    case 'decimal':
      return Number(String(v));
    case 'bool':
      return v === true;
    case 'json':
      try {
        return JSON.parse(String(v)) as Json;
      } catch {
        return String(v);
      }
    case 'nested':
      return json;
    case 'timestamp':
      return isoTimestamp(v);
    default:
      return String(v);
  }
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
