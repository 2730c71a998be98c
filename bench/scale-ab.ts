import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { allocatorEnv, defaultMemoryBudget, heapFlags } from '../src/util/memory-budget.ts';
import type { BenchRow } from './bench-types.ts';
import { scaleWorld, warmToolOptions, worldSimulator } from './scale-world.ts';
import { formatTable } from './table.ts';

// Steady passes of two checkouts of runsync against the same world, taken in turn (A B, B A, …) so
// a noisy machine weighs on both alike: what a change costs a pass at a given size. Each checkout
// builds its own world (bench/world-warehouse.ts, cached under BENCH_WORLDS_DIR) and runs its own
// compiled scale child (`npm run build` first; one from before the child reported warehouseMs
// needs this tree's bench/scale-child.ts copied in). Not a bench of `npm run bench`: it compares
// trees, and a world of a million runs takes two copies of 14 GB.
//
//   npx tsx bench/scale-ab.ts <checkout A> <checkout B>
//
// BENCH_AB_SIZE (runs, default 1000000), BENCH_AB_ROUNDS (default 6), BENCH_AB_HORIZON (the
// open-run horizon, default 8h; `default` for the setting's own) and BENCH_AB_UNLIMITED=1 (no rate
// limit, so both list at the same pace whatever their budgets).

interface Side {
  root: string;
  dir: string;
  start: string;
  sim: { url: string; key: string; clock: { now(): number; advance(us: number): void }; close(): Promise<void> };
  warehouseMs: number[];
  wallMs: number[];
}

const [rootA, rootB] = process.argv.slice(2).map((r) => resolve(r));
if (!rootA || !rootB) {
  console.error('usage: npx tsx bench/scale-ab.ts <checkout A> <checkout B>');
  process.exit(2);
}
const size = Number(process.env.BENCH_AB_SIZE ?? 1_000_000);
const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 6);
const horizon = process.env.BENCH_AB_HORIZON ?? '8h';
const horizonEnv = horizon === 'default' ? {} : { RUNSYNC_OPEN_RUN_HORIZON: horizon };
const log = (l: string) => console.error(`${new Date().toISOString()} ${l}`);
const from = (root: string, file: string) => import(pathToFileURL(join(root, file)).href);

function pass(s: Side): Promise<{ warehouseMs: number; wallMs: number }> {
  s.sim.clock.advance(5 * 60 * 1_000_000);
  const child = join(s.root, 'dist', 'bench', 'scale-child.js');
  const args = [...heapFlags(defaultMemoryBudget(), []), child, 'sync', s.dir, s.sim.url, s.sim.key];
  args.push(String(s.sim.clock.now()), s.start);
  return new Promise((done, fail) => {
    const t0 = performance.now();
    const c = spawn(process.execPath, args, {
      env: { ...process.env, ...allocatorEnv(process.env), LOG_LEVEL: 'warn', ...horizonEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('error', fail);
    c.on('close', () => {
      const j = JSON.parse(out.trim().split('\n').at(-1) || '{}') as { warehouseMs?: number };
      if (typeof j.warehouseMs !== 'number') fail(new Error(`${child} reported no warehouseMs`));
      else done({ warehouseMs: j.warehouseMs, wallMs: performance.now() - t0 });
    });
  });
}

const work = mkdtempSync(join(tmpdir(), 'runsync-scale-ab-'));
const sides: Side[] = [];
try {
  for (const [i, root] of [rootA, rootB].entries()) {
    const { worldWarehouse, startDateOf } = await from(root, 'bench/world-warehouse.ts');
    const { startSimulator } = await from(root, 'src/simulator/index.ts');
    const w = scaleWorld(size);
    const dir = join(work, String(i));
    await worldWarehouse(w, dir, log);
    const limits = process.env.BENCH_AB_UNLIMITED === '1' ? { rateLimit: { perKey: null } } : {};
    const sim = await worldSimulator(w, limits, startSimulator);
    await warmToolOptions(sim);
    sides.push({ root, dir, start: startDateOf(w), sim, warehouseMs: [], wallMs: [] });
  }
  for (const s of sides) await pass(s);
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const p = await pass(s);
      s.warehouseMs.push(p.warehouseMs);
      s.wallMs.push(p.wallMs);
      log(`round ${r}, ${s.root}: warehouse ${Math.round(p.warehouseMs)} ms, wall ${Math.round(p.wallMs)} ms`);
    }
  }
} finally {
  for (const s of sides) await s.sim.close();
  rmSync(work, { recursive: true, force: true });
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const [a, b] = sides as [Side, Side];
const what = `${size.toLocaleString('en-US')} runs, open runs of the last ${horizon}, ${rounds} rounds`;
const rows: BenchRow[] = [
  ['pass in the warehouse', a.warehouseMs, b.warehouseMs] as const,
  ['pass wall', a.wallMs, b.wallMs] as const,
].flatMap(([metric, x, y]) => [
  { bench: 'scale-ab', metric: `${metric}, A, ${what}`, value: Math.round(mean(x)), unit: 'ms', note: rootA },
  { bench: 'scale-ab', metric: `${metric}, B, ${what}`, value: Math.round(mean(y)), unit: 'ms', note: rootB },
  { bench: 'scale-ab', metric: `${metric}, B / A`, value: mean(y) / mean(x), note: 'means of the rounds' },
]);
console.log(formatTable(rows));
process.exit(0);
