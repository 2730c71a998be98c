import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release, totalmem, type } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchModule, BenchRow } from './bench-types.ts';
import { type BenchInfo, type Machine, renderPerformancePage, renderRun } from './perf-page.ts';
import { formatTable } from './table.ts';

// Runs the benchmarks named on the command line (all by default) one after another, in this
// process, prints their rows as one table, and writes each one's section of docs/performance.md
// as soon as it ends (a long run cut short keeps the benches it finished).

const dir = new URL('./', import.meta.url);
const PAGE = fileURLToPath(new URL('../docs/performance.md', import.meta.url));
const wanted = process.argv.slice(2);
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts')).sort();
const chosen = wanted.length ? files.filter((f) => wanted.some((w) => f.startsWith(w))) : files;
if (chosen.length === 0) {
  console.error(
    `no benchmark matches ${wanted.join(' ')}; have: ${files.map((f) => f.replace('.bench.ts', '')).join(', ')}`,
  );
  process.exit(2);
}

const load = async (f: string) => (await import(pathToFileURL(new URL(f, dir).pathname).href)) as BenchModule;
const nameOf = (f: string) => f.replace('.bench.ts', '');
const benches: BenchInfo[] = [];
for (const f of files) benches.push({ name: nameOf(f), method: (await load(f)).method });

function git(...args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: fileURLToPath(dir), encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
// The page itself changes as the benches write it.
const dirty = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs/performance.md') !== '';

function machine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown CPU',
    cores: availableParallelism(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    os: `${type()} ${release()}`,
    load: loadavg()[0] ?? 0,
  };
}

/** The command that runs one bench alone with the knobs set now. */
function command(name: string): string {
  const knobs = Object.keys(process.env)
    .filter((k) => k.startsWith('BENCH_'))
    .sort()
    .map((k) => `${k}=${process.env[k]}`);
  return [...knobs, 'npx tsx bench/run.ts', name].join(' ');
}

const scale = Number(process.env.BENCH_SCALE ?? '1');
const rows: BenchRow[] = [];
const fresh = new Map<string, string>();
for (const f of chosen) {
  const mod = await load(f);
  console.error(`-- ${f}`);
  const started = machine();
  const t0 = Date.now();
  const own = await mod.default({ scale, log: (l) => console.error(`   ${l}`) });
  const seconds = (Date.now() - t0) / 1000;
  console.error(`   (${seconds.toFixed(1)} s)`);
  rows.push(...own);
  const run = {
    finishedAt: new Date().toISOString(),
    seconds,
    commit,
    dirty,
    machine: started,
    command: command(nameOf(f)),
    table: formatTable(own),
  };
  fresh.set(nameOf(f), renderRun(nameOf(f), run));
  const existing = existsSync(PAGE) ? readFileSync(PAGE, 'utf8') : null;
  writeFileSync(PAGE, renderPerformancePage({ benches, existing, fresh, commit }));
}
console.error(`wrote ${PAGE}`);
console.log(formatTable(rows));
