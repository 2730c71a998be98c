import type { BenchRow } from './bench-types.ts';

// Rows as the Markdown table the benches print, on the terminal and in docs/performance.md.

const fmt = (v: number | string) =>
  typeof v === 'number'
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)
    : v;

export function formatTable(rows: readonly BenchRow[]): string {
  const escapePipes = (c: string) => c.replaceAll('|', '\\|');
  const table = rows.map((r) =>
    [r.bench, r.metric, fmt(r.value), r.unit ?? '', r.goal ?? '', r.note ?? ''].map(escapePipes),
  );
  const head = ['bench', 'metric', 'value', 'unit', 'goal', 'note'];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => String(row[i]).length)));
  const cell = (c: string, i: number) => (i === 2 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number));
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i === 2 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(head), rule, ...table.map(line)].join('\n');
}
