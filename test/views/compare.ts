import { expect } from 'vitest';
import type { SqlRunner } from '../../src/warehouse/index.ts';

// Comparing a view's rows with what the truth computed: numbers within rounding, lists and
// objects by value.

export const close = (a: unknown, b: unknown) =>
  typeof a === 'number' && typeof b === 'number'
    ? Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))
    : a === b || (typeof a === 'object' && a !== null && JSON.stringify(a) === JSON.stringify(b));

/** Rows as objects with numbers for BIGINT, so they compare with what the truth computed. */
export async function rows(db: SqlRunner, sql: string): Promise<Record<string, unknown>[]> {
  return (await db.all<Record<string, unknown>>(sql)).map((r) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])),
  );
}

export function expectSame(
  have: Map<string, Record<string, unknown>>,
  want: Map<string, Record<string, unknown>>,
  what: string,
): void {
  expect([...have.keys()].sort(), what).toEqual([...want.keys()].sort());
  const diffs: string[] = [];
  for (const [k, w] of want) {
    const h = have.get(k) as Record<string, unknown>;
    for (const [col, v] of Object.entries(w))
      if (!close(h[col], v)) diffs.push(`${what} ${k} ${col}: have ${String(h[col])}, want ${String(v)}`);
  }
  expect(diffs).toEqual([]);
}
