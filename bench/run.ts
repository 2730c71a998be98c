import { readdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { Bench, BenchRow } from './bench-types.ts';

// Runs the benchmarks named on the command line (all by default) one after another, in this
// process, and prints their rows as one table.

const dir = new URL('./', import.meta.url);
const wanted = process.argv.slice(2);
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts')).sort();
const chosen = wanted.length ? files.filter((f) => wanted.some((w) => f.startsWith(w))) : files;
if (chosen.length === 0) {
  console.error(
    `no benchmark matches ${wanted.join(' ')}; have: ${files.map((f) => f.replace('.bench.ts', '')).join(', ')}`,
  );
  process.exit(2);
}
const scale = Number(process.env.BENCH_SCALE ?? '1');
const rows: BenchRow[] = [];
for (const f of chosen) {
  const mod = (await import(pathToFileURL(new URL(f, dir).pathname).href)) as { default: Bench };
  console.error(`-- ${f}`);
  const t0 = Date.now();
  rows.push(...(await mod.default({ scale, log: (l) => console.error(`   ${l}`) })));
  console.error(`   (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

const fmt = (v: number | string) =>
  typeof v === 'number'
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)
    : v;
const table = rows.map((r) => [r.bench, r.metric, fmt(r.value), r.unit ?? '', r.goal ?? '', r.note ?? '']);
const head = ['bench', 'metric', 'value', 'unit', 'goal', 'note'];
const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => String(row[i]).length)));
const line = (cells: string[]) =>
  `| ${cells.map((c, i) => (i === 2 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
console.log(line(head));
console.log(`|${widths.map((w, i) => (i === 2 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`);
for (const row of table) console.log(line(row));
