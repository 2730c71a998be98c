import type { Micros } from '../util/timestamp.ts';
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
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):([0-5]\d)(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** Microseconds since the epoch (fractions beyond them dropped, as DuckDB does), or null. */
export function parseStrictTimestamp(text: string): Micros | null {
  const m = TIMESTAMP.exec(text);
  if (!m) return null;
  const year = +(m[1] as string);
  const month = +(m[2] as string);
  const day = +(m[3] as string);
  const hour = +(m[4] as string);
  const minute = +(m[5] as string);
  const leap = month === 2 && (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0));
  if (month < 1 || month > 12 || day < 1 || day > (MONTH_DAYS[month - 1] as number) + (leap ? 1 : 0) || hour > 23 || minute > 59) return null;
  let offset = 0;
  if (m[8] === undefined) {
    const oh = +(m[10] as string);
    const om = +(m[11] as string);
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const frac = m[7] === undefined ? 0 : +`${m[7]}00000`.slice(0, 6);
  // Date.UTC reads years 0-99 as 1900-1999: shift by a 400-year Gregorian cycle and back.
  const shift = year < 100 ? 400 : 0;
  const ms = Date.UTC(year + shift, month - 1, day, hour, minute, +(m[6] as string)) - (shift ? 146_097 * 86_400_000 : 0);
  return (ms - offset * 60_000) * 1000 + frac;
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
export function readCell(value: unknown, spec: ColumnSpec, where: string, jsonText = true): Cell {
  if (value === undefined || value === null) {
    if (spec.required) throw new PayloadError(name(where, spec), 'required, but absent or null');
    return null;
  }
  switch (spec.kind) {
    case 'text':
      if (typeof value !== 'string') throw new PayloadError(name(where, spec), `expected a string, got ${describe(value)}`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw new PayloadError(name(where, spec), `expected a boolean, got ${describe(value)}`);
      return value;
    case 'double':
      if (typeof value === 'bigint') return Number(value);
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new PayloadError(name(where, spec), `expected a number, got ${describe(value)}`);
      return value;
    case 'bigint':
      return readInteger(value, where, spec);
    case 'timestamptz': {
      const us = typeof value === 'string' ? parseStrictTimestamp(value) : null;
      if (us === null) throw new PayloadError(name(where, spec), `expected an RFC 3339 date-time, got ${describe(value)}`);
      return us;
    }
    case 'json':
      return jsonText ? toJsonText(value) : '';
    case 'text_list': {
      if (!Array.isArray(value)) throw new PayloadError(name(where, spec), `expected an array of strings, got ${describe(value)}`);
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (item !== null && typeof item !== 'string') throw new PayloadError(`${name(where, spec)}[${i}]`, `expected a string, got ${describe(item)}`);
      }
      return value as (string | null)[];
    }
  }
}

/** The member's name, built only for an error: readCell runs for every cell of every payload. */
function name(where: string, spec: ColumnSpec): string {
  return `${where}${spec.path.join('.')}`;
}

function readInteger(value: unknown, where: string, spec: ColumnSpec): number | bigint {
  if (typeof value === 'bigint') {
    if (value > INT64_MAX || value < INT64_MIN) throw new PayloadError(name(where, spec), `integer out of the 64-bit range: ${value}`);
    return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  }
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new PayloadError(name(where, spec), `expected an integer, got ${describe(value)}`);
  if (Number.isSafeInteger(value)) return value;
  const big = BigInt(value);
  if (big > INT64_MAX || big < INT64_MIN) throw new PayloadError(name(where, spec), `integer out of the 64-bit range: ${value}`);
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

/**
 * Checks the cells of one object as flattenColumns would read them, keeping none, and returns
 * the `id` cell. `where` is asked for only when a cell is refused.
 */
export function checkColumns(obj: Record<string, unknown>, columns: readonly ColumnSpec[], where: () => string): string {
  let id = '';
  for (const spec of columns) {
    const path = spec.path;
    let value: unknown = obj;
    for (let i = 0; i < path.length; i++) {
      if (value === undefined || value === null) break;
      // A parent that is not an object: memberAt says so, naming it.
      if (typeof value !== 'object' || Array.isArray(value)) memberAt(obj, path, where());
      value = (value as Record<string, unknown>)[path[i] as string];
    }
    if (value === null || value === undefined ? spec.required === true : !fits(value, spec.kind)) readCell(value, spec, where(), false);
    if (spec.name === 'id') id = value as string;
  }
  return id;
}

/** Whether a present value is certainly accepted by readCell for a column of this kind. */
function fits(value: unknown, kind: ColumnKind): boolean {
  switch (kind) {
    case 'text':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'double':
      return typeof value === 'number' && Number.isFinite(value);
    case 'bigint':
      return typeof value === 'number' && Number.isSafeInteger(value);
    case 'json':
      return true;
    case 'timestamptz':
      return typeof value === 'string' && parseStrictTimestamp(value) !== null;
    case 'text_list':
      if (!Array.isArray(value)) return false;
      for (const item of value) if (item !== null && typeof item !== 'string') return false;
      return true;
  }
}

export function flattenColumns(obj: Record<string, unknown>, columns: readonly ColumnSpec[], where: string, into: Row = {}, jsonText = true): Row {
  for (const spec of columns) into[spec.name] = readCell(memberAt(obj, spec.path, where), spec, where, jsonText);
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
