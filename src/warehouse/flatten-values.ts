import { parseTimestamp, type Micros } from '../util/timestamp.ts';
import { toJsonText } from './json-text.ts';

// One column of a flattened table: which member of the API object feeds it and what it holds.
// Both the TypeScript flatteners and the SQL that stages run details from the raw archive are
// derived from these specs, so the two cannot disagree on where a value comes from.

export type ColumnKind = 'text' | 'boolean' | 'double' | 'bigint' | 'timestamptz' | 'json' | 'text_list';

export interface ColumnSpec {
  readonly name: string;
  readonly kind: ColumnKind;
  /** Member path inside the object; empty parents (null or absent) give a null cell. */
  readonly path: readonly string[];
  /** The payload is refused when this member is absent or null. */
  readonly required?: boolean;
}

/** Timestamps are integer microseconds since the epoch; JSON columns are JSON text. */
export type Cell = string | number | bigint | boolean | null | readonly (string | null)[];
export type Row = Record<string, Cell>;

/** A payload the flattening refuses, naming the member at fault. */
export class PayloadError extends Error {
  override readonly name = 'PayloadError';
  constructor(
    readonly member: string,
    problem: string,
  ) {
    super(`${member}: ${problem}`);
  }
}

// RFC 3339 as DuckDB also reads it: upper-case T (or a space), seconds up to 59, a zone. Anything
// DuckDB would refuse is refused here first, with the member named, instead of failing a batch.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:([0-5]\d)(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

export function parseStrictTimestamp(text: string): Micros | null {
  return TIMESTAMP.test(text) ? parseTimestamp(text) : null;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

/**
 * The cell of one column, or a PayloadError. `jsonText` false skips writing JSON text (a check
 * that the payload would flatten, without paying for the text).
 */
export function readCell(value: unknown, spec: ColumnSpec, member: string, jsonText = true): Cell {
  if (value === undefined || value === null) {
    if (spec.required) throw new PayloadError(member, 'required, but absent or null');
    return null;
  }
  switch (spec.kind) {
    case 'text':
      if (typeof value !== 'string') throw new PayloadError(member, `expected a string, got ${describe(value)}`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw new PayloadError(member, `expected a boolean, got ${describe(value)}`);
      return value;
    case 'double':
      if (typeof value === 'bigint') return Number(value);
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new PayloadError(member, `expected a number, got ${describe(value)}`);
      return value;
    case 'bigint':
      return readInteger(value, member);
    case 'timestamptz': {
      const us = typeof value === 'string' ? parseStrictTimestamp(value) : null;
      if (us === null) throw new PayloadError(member, `expected an RFC 3339 date-time, got ${describe(value)}`);
      return us;
    }
    case 'json':
      return jsonText ? toJsonText(value) : '';
    case 'text_list': {
      if (!Array.isArray(value)) throw new PayloadError(member, `expected an array of strings, got ${describe(value)}`);
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item !== null && typeof item !== 'string') throw new PayloadError(`${member}[${i}]`, `expected a string, got ${describe(item)}`);
      }
      return value as (string | null)[];
    }
  }
}

function readInteger(value: unknown, member: string): number | bigint {
  if (typeof value === 'bigint') {
    if (value > INT64_MAX || value < INT64_MIN) throw new PayloadError(member, `integer out of the 64-bit range: ${value}`);
    return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  }
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new PayloadError(member, `expected an integer, got ${describe(value)}`);
  if (Number.isSafeInteger(value)) return value;
  const big = BigInt(value);
  if (big > INT64_MAX || big < INT64_MIN) throw new PayloadError(member, `integer out of the 64-bit range: ${value}`);
  return big;
}

/** The member at `path` below `obj`; a parent that is absent or null gives undefined. */
export function memberAt(obj: Record<string, unknown>, path: readonly string[], where: string): unknown {
  let cur: unknown = obj;
  for (let i = 0; i < path.length; i++) {
    if (cur === undefined || cur === null) return undefined;
    if (typeof cur !== 'object' || Array.isArray(cur)) {
      throw new PayloadError(`${where}${path.slice(0, i).join('.')}`, `expected an object, got ${describe(cur)}`);
    }
    cur = (cur as Record<string, unknown>)[path[i] as string];
  }
  return cur;
}

export function flattenColumns(obj: Record<string, unknown>, columns: readonly ColumnSpec[], where: string, into: Row = {}, jsonText = true): Row {
  for (const spec of columns) {
    const member = `${where}${spec.path.join('.')}`;
    into[spec.name] = readCell(memberAt(obj, spec.path, where), spec, member, jsonText);
  }
  return into;
}

export function asObject(value: unknown, member: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new PayloadError(member || '(payload)', `expected an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function asArray(value: unknown, member: string): unknown[] {
  if (!Array.isArray(value)) throw new PayloadError(member, `expected an array, got ${describe(value)}`);
  return value;
}

/** UTC calendar day of a timestamp, as DuckDB writes a DATE: YYYY-MM-DD. */
export function utcDate(us: Micros): string {
  return new Date(Math.floor(us / 1000)).toISOString().slice(0, 10);
}
