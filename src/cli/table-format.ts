import { displayWidth, padToWidth } from '../util/display-width.ts';

// Rows as an aligned text table, the way a person reads query results in a terminal. Columns are
// measured in terminal columns, so names in Chinese or Japanese, or with an emoji, stay aligned.

export function formatTable(rows: readonly Record<string, unknown>[], columns?: readonly string[]): string[] {
  const cols = columns ?? (rows[0] ? Object.keys(rows[0]) : []);
  if (cols.length === 0) return ['(no rows)'];
  const text = (v: unknown): string => {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number')
      return Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/0+$/, '').replace(/\.$/, '');
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  };
  const cells = rows.map((r) => cols.map((c) => text(r[c])));
  const width = cols.map((c, i) => Math.max(displayWidth(c), ...cells.map((row) => displayWidth(row[i] ?? ''))));
  const numeric = cols.map(
    (_, i) =>
      rows.length > 0 &&
      rows.every((r) => ['number', 'bigint'].includes(typeof r[cols[i] as string]) || r[cols[i] as string] === null),
  );
  const pad = (s: string, i: number) => padToWidth(s, width[i] ?? 0, numeric[i]);
  const out = [
    cols
      .map((c, i) => pad(c, i))
      .join('  ')
      .trimEnd(),
    cols.map((_, i) => '-'.repeat(width[i] ?? 0)).join('  '),
  ];
  for (const row of cells)
    out.push(
      row
        .map((c, i) => pad(c, i))
        .join('  ')
        .trimEnd(),
    );
  if (rows.length === 0) out.push('(no rows)');
  return out;
}
