// Rows as an aligned text table, the way a person reads query results in a terminal.

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
  const width = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => [...(row[i] ?? '')].length)));
  const numeric = cols.map(
    (_, i) =>
      rows.length > 0 &&
      rows.every((r) => ['number', 'bigint'].includes(typeof r[cols[i] as string]) || r[cols[i] as string] === null),
  );
  const pad = (s: string, i: number) => {
    const fill = ' '.repeat(Math.max(0, (width[i] ?? 0) - [...s].length));
    return numeric[i] ? fill + s : s + fill;
  };
  const out = [cols.map((c, i) => pad(c, i)).join('  '), cols.map((_, i) => '-'.repeat(width[i] ?? 0)).join('  ')];
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
