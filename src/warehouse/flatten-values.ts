import type { ColumnKind, ColumnSpec } from '../resources/types.ts';
import { type Micros, parseStrictTimestamp } from '../util/timestamp.ts';
import { toJsonText } from './json-text.ts';

// The cells of one object by the resource's column specs (src/resources). Both the TypeScript
// flatteners and the SQL that stages run details from the raw archive are derived from the same
// specs, so the two cannot disagree on where a value comes from.

export type { ColumnKind, ColumnSpec };

/** Timestamps are integer microseconds since the epoch; JSON columns are JSON text. */
export type Cell = string | number | bigint | boolean | null | readonly (string | number | boolean | null)[];
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

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

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
      if (typeof value !== 'string')
        throw new PayloadError(name(where, spec), `expected a string, got ${describe(value)}`);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean')
        throw new PayloadError(name(where, spec), `expected a boolean, got ${describe(value)}`);
      return value;
    case 'double':
      if (typeof value === 'bigint') return Number(value);
      if (typeof value !== 'number' || !Number.isFinite(value))
        throw new PayloadError(name(where, spec), `expected a number, got ${describe(value)}`);
      return value;
    case 'bigint':
      return readInteger(value, where, spec);
    case 'timestamptz': {
      const us = typeof value === 'string' ? parseStrictTimestamp(value) : null;
      if (us === null)
        throw new PayloadError(name(where, spec), `expected an RFC 3339 date-time, got ${describe(value)}`);
      return us;
    }
    case 'json':
      return jsonText ? toJsonText(value) : '';
    default:
      return readList(value, spec, where);
  }
}

const ITEM_KIND: Partial<Record<ColumnKind, ColumnKind>> = {
  text_list: 'text',
  bigint_list: 'bigint',
  double_list: 'double',
  boolean_list: 'boolean',
};
const ITEM_NAME: Partial<Record<ColumnKind, string>> = { text: 'string', bigint: 'integer', double: 'number' };

function readList(value: unknown, spec: ColumnSpec, where: string): (string | number | boolean | null)[] {
  const item = ITEM_KIND[spec.kind] as ColumnKind;
  const noun = ITEM_NAME[item] ?? item;
  if (!Array.isArray(value))
    throw new PayloadError(name(where, spec), `expected an array of ${noun}s, got ${describe(value)}`);
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    if (v !== null && !fits(v, item))
      throw new PayloadError(`${name(where, spec)}[${i}]`, `expected a ${noun}, got ${describe(v)}`);
  }
  return value as (string | number | boolean | null)[];
}

/**
 * A cell of a column added by schema evolution, as DuckDB's json_transform reads it: the column's
 * type was widened to fit every value before the load, so only shapes it cannot hold become null.
 */
export function readEvolvedCell(value: unknown, kind: ColumnKind): Cell {
  if (value === undefined || value === null) return null;
  if (kind === 'json') return toJsonText(value);
  if (kind === 'text') return typeof value === 'string' ? value : toJsonText(value);
  const item = ITEM_KIND[kind];
  if (item !== undefined) {
    if (!Array.isArray(value)) return null;
    return value.map((v) => readEvolvedCell(v, item) as string | number | boolean | null);
  }
  if (!fits(value, kind)) return null;
  return kind === 'timestamptz' ? parseStrictTimestamp(value as string) : (value as number | boolean);
}

/** The member's name, built only for an error: readCell runs for every cell of every payload. */
function name(where: string, spec: ColumnSpec): string {
  return `${where}${spec.path.join('.')}`;
}

function readInteger(value: unknown, where: string, spec: ColumnSpec): number | bigint {
  if (typeof value === 'bigint') {
    if (value > INT64_MAX || value < INT64_MIN)
      throw new PayloadError(name(where, spec), `integer out of the 64-bit range: ${value}`);
    return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  }
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new PayloadError(name(where, spec), `expected an integer, got ${describe(value)}`);
  if (Number.isSafeInteger(value)) return value;
  const big = BigInt(value);
  if (big > INT64_MAX || big < INT64_MIN)
    throw new PayloadError(name(where, spec), `integer out of the 64-bit range: ${value}`);
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
export function checkColumns(
  obj: Record<string, unknown>,
  columns: readonly ColumnSpec[],
  where: () => string,
): string {
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
    if (value === null || value === undefined ? spec.required === true : !fits(value, spec.kind))
      readCell(value, spec, where(), false);
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
    default: {
      const item = ITEM_KIND[kind] as ColumnKind;
      if (!Array.isArray(value)) return false;
      for (const v of value) if (v !== null && !fits(v, item)) return false;
      return true;
    }
  }
}

export function flattenColumns(
  obj: Record<string, unknown>,
  columns: readonly ColumnSpec[],
  where: string,
  into: Row = {},
  jsonText = true,
): Row {
  for (const spec of columns) {
    into[spec.name] = spec.evolved
      ? readEvolvedCell(evolvedMember(obj, spec.path), spec.kind)
      : readCell(memberAt(obj, spec.path, where), spec, where, jsonText);
  }
  return into;
}

/** An evolved column's member; a parent that is not an object gives nothing, as in DuckDB. */
function evolvedMember(obj: Record<string, unknown>, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const member of path) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[member];
  }
  return cur;
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
