import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allocatorEnv, defaultMemoryBudget, heapFlags } from '../src/util/memory-budget.ts';
import { MICROS_PER_HOUR, MICROS_PER_MINUTE } from '../src/util/timestamp.ts';
import type { Bench, BenchRow } from './bench-types.ts';
import {
  bytesUnder,
  NOW,
  rawArchive,
  scaleWorld,
  type Timed,
  timed,
  warmToolOptions,
  worldSimulator,
} from './scale-world.ts';
import { startDateOf, type WorldSpec, worldWarehouse } from './world-warehouse.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `Every command at 10,000, 100,000 and 1,000,000 runs stored (\`BENCH_SCALE_SIZES\`, default
10000,100000), each in a fresh process as a user runs it (compiled, with the CLI's heap settings),
timed, its peak RSS read by GNU time. The world's warehouse and raw archive come straight from the
simulator's generator (cached under \`BENCH_WORLDS_DIR\`), 33,333 runs created a day. Steady passes
run 5 minutes of the world's time after the last, so each size has the same changes to fetch, with
rolling reconciliation off (it re-checks a share of the whole horizon by design); a third pass with
the open-run horizon at 8 hours shows what the stored rows add to the same work. A pass's time in
the warehouse is the sum of its units of work in the file (each opens, works and closes it), read
from the engine's debug lines: its loads and look-ups, apart from the key's pace of 50 requests a
second. Bytes per run are
the files' sizes over the runs stored. The first full sync through the API, unthrottled, runs up to
\`BENCH_SCALE_FIRST_SYNC\` runs (default 100,000); \`BENCH_SCALE_SKIP=rebuild,first\` leaves out the
rebuild and the first sync.`;

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin', 'runsync.js');
const CHILD = join(ROOT, 'dist', 'bench', 'scale-child.js');
const GOAL_MB = 400;
/** An open-run horizon holding the whole of the smallest world (7.2 hours of runs). */
const SAME_OPEN_HORIZON = '8h';

/** The passes' time in the warehouse: their loads and look-ups, apart from the API's pace. */
const WAREHOUSE_NOTE = 'its units of work in runsync.duckdb (open, work, close), summed';

const sizes = (process.env.BENCH_SCALE_SIZES ?? '10000,100000').split(',').map(Number);
const firstSyncMax = Number(process.env.BENCH_SCALE_FIRST_SYNC ?? '100000');

function cli(args: string[], dir: string): Promise<Timed> {
  return timed([process.execPath, BIN, ...args], { RUNSYNC_WAREHOUSE_DIR: dir, LOG_LEVEL: 'warn' });
}

function child(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Timed> {
  return timed([process.execPath, ...heapFlags(defaultMemoryBudget(), []), CHILD, ...args], {
    ...allocatorEnv(process.env),
    LOG_LEVEL: 'warn',
    ...env,
  });
}

async function measure(size: number, log: (l: string) => void): Promise<BenchRow[]> {
  const w: WorldSpec = scaleWorld(size);
  const rows: BenchRow[] = [];
  const label = `${size.toLocaleString('en-US')} runs`;
  // Each row is logged as it is measured too: the largest sizes take long, and a cut run keeps them.
  const add = (metric: string, value: number, unit: string, goal = '', note = '') => {
    rows.push({ bench: 'scale', metric: `${metric}, ${label}`, value, unit, goal, note });
    log(`${metric}, ${label}: ${Number.isInteger(value) ? value : value.toFixed(2)} ${unit} ${note}`);
  };
  const rss = (what: string, t: Timed, note = '') =>
    add(
      `peak RSS ${what}`,
      Math.round(t.peakMb),
      'MB',
      `< ${GOAL_MB}`,
      `${(t.wallMs / 1000).toFixed(1)} s${note}${t.failure ? `; FAILED: ${t.failure}` : ''}`,
    );
  const skip = (process.env.BENCH_SCALE_SKIP ?? '').split(',');
  const lastJson = <T>(t: Timed): T => JSON.parse(t.stdout.trim().split('\n').at(-1) || '{}') as T;
  const root = mkdtempSync(join(tmpdir(), 'runsync-bench-scale-'));
  const dir = join(root, 'w');
  try {
    await worldWarehouse(w, dir, log);
    const sim = await worldSimulator(w);
    try {
      const pass = (env: NodeJS.ProcessEnv = {}) => {
        sim.clock.advance(5 * MICROS_PER_MINUTE);
        return child(['sync', dir, sim.url, sim.key, String(sim.clock.now()), startDateOf(w)], env);
      };
      await warmToolOptions(sim);
      await pass();
      const steady = await pass();
      const s = lastJson<{ listed: number; fetched: number; warehouseMs: number }>(steady);
      rss('sync (steady pass)', steady, `; ${s.listed} listed, ${s.fetched} fetched`);
      add(
        'steady pass wall, 5 min of changes',
        Math.round(steady.wallMs),
        'ms',
        '',
        `${s.listed} listed, ${s.fetched} fetched`,
      );
      add('steady pass in the warehouse, 5 min of changes', Math.round(s.warehouseMs), 'ms', '', WAREHOUSE_NOTE);
      // Every open run of the horizon is looked at each pass, and a world of 30 days holds some
      // 45,000 against the few hundred of the 10,000-run world's 7 hours. With the horizon at
      // SAME_OPEN_HORIZON both look at the same open runs, and the pass's cost shows what the rows
      // stored add to the same work.
      const same = await pass({ RUNSYNC_OPEN_RUN_HORIZON: SAME_OPEN_HORIZON });
      const o = lastJson<{ listed: number; fetched: number; warehouseMs: number }>(same);
      add(
        `steady pass wall, 5 min of changes, open runs of the last ${SAME_OPEN_HORIZON}`,
        Math.round(same.wallMs),
        'ms',
        '1M <= 1.2x 10k',
        `${o.listed} listed, ${o.fetched} fetched`,
      );
      add(
        `steady pass in the warehouse, 5 min of changes, open runs of the last ${SAME_OPEN_HORIZON}`,
        Math.round(o.warehouseMs),
        'ms',
        '',
        WAREHOUSE_NOTE,
      );
      const back = await child([
        'backfill',
        dir,
        sim.url,
        sim.key,
        String(sim.clock.now()),
        startDateOf(w),
        String(NOW - MICROS_PER_HOUR),
        String(NOW),
      ]);
      const b = lastJson<{ fetched: number }>(back);
      rss('backfill --force (last hour)', back, `; ${b.fetched} fetched`);
      // The worker's pass at start, 5 minutes of the world's changes on.
      sim.clock.advance(5 * MICROS_PER_MINUTE);
      const worker = await child(['worker', dir, sim.url, sim.key, String(sim.clock.now()), startDateOf(w)], {
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      });
      const k = lastJson<{ listed: number; fetched: number }>(worker);
      rss('worker (its pass at start)', worker, `; ${k.listed} listed, ${k.fetched} fetched`);
    } finally {
      await sim.close();
    }
    const status = await cli(['status'], dir);
    rss('status', status);
    add('status wall', Math.round(status.wallMs), 'ms', '<= 2000');
    const query = await cli(['query', 'SELECT status, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1'], dir);
    rss('query', query);
    const report = await cli(['report', '--out', join(root, 'report.html')], dir);
    rss('report', report);
    add('report wall', Math.round(report.wallMs), 'ms', '<= 2000');
    const exported = await cli(['export', '--full'], dir);
    rss('export --full', exported);
    add('duckdb bytes per run', Math.round(bytesUnder(join(dir, 'runsync.duckdb')) / size), 'B');
    // runsync.duckdb after the passes against the one in `other`.
    const fileRatio = (metric: string, other: string, goal: string, note: string) => {
      const live = bytesUnder(join(dir, 'runsync.duckdb'));
      const that = bytesUnder(join(other, 'runsync.duckdb'));
      add(metric, live / that, '', goal, `${(live / 1e6).toFixed(0)} MB against ${(that / 1e6).toFixed(0)} MB${note}`);
    };
    // The same rows loaded afresh: the file copied into a new one (what `runsync compact` does).
    const copy = join(root, 'c');
    mkdirSync(copy);
    cpSync(join(dir, 'runsync.duckdb'), join(copy, 'runsync.duckdb'));
    const compacted = await cli(['compact'], copy);
    fileRatio(
      'duckdb after passes / a fresh copy of its rows',
      copy,
      '<= 1.2',
      `, copied in ${(compacted.wallMs / 1000).toFixed(0)} s${compacted.failure ? `; FAILED: ${compacted.failure}` : ''}`,
    );
    rmSync(copy, { recursive: true, force: true });
    add('Parquet bytes per run', Math.round(bytesUnder(join(dir, 'parquet')) / size), 'B');

    if (!skip.includes('rebuild')) {
      const raw = await rawArchive(w, log);
      add('raw archive bytes per run', Math.round(bytesUnder(join(raw, 'raw')) / size), 'B');
      const rebuilt = join(root, 'r');
      cpSync(raw, rebuilt, { recursive: true, filter: (src) => !src.endsWith('.complete') });
      // The tables alone first (what `rebuild` re-derives), then the whole command, which rewrites
      // the Parquet tree from them too.
      const tablesOnly = await cli(['rebuild', '--no-export'], rebuilt);
      rss('rebuild --no-export', tablesOnly);
      add('rebuild --no-export runs/s', Math.round(size / (tablesOnly.wallMs / 1000)), 'runs/s', '>= 1700', 'tables');
      rmSync(join(rebuilt, 'runsync.duckdb'), { force: true });
      const rebuild = await cli(['rebuild'], rebuilt);
      rss('rebuild', rebuild);
      add('rebuild runs/s', Math.round(size / (rebuild.wallMs / 1000)), 'runs/s', '>= 1700', 'tables and Parquet');
      fileRatio("duckdb after passes / rebuild's file", rebuilt, '', ' (the rebuild has no catalog, audit or sums)');
      rmSync(rebuilt, { recursive: true, force: true });
    }

    if (size <= firstSyncMax && !skip.includes('first')) {
      const first = join(root, 'f');
      // Unthrottled: at a real key's rate the first sync measures the rate, not what runsync does
      // with the runs as the warehouse grows.
      const sim2 = await worldSimulator(w, { rateLimit: { perKey: null } });
      try {
        const t = await child(['sync', first, sim2.url, sim2.key, String(NOW), startDateOf(w)]);
        rss('sync (first, full)', t);
        add('first sync runs/s', Math.round(size / (t.wallMs / 1000)), 'runs/s', 'flat');
      } finally {
        await sim2.close();
      }
    }
  } finally {
    // BENCH_SCALE_KEEP=1 leaves the warehouse after the passes, to look into a figure.
    if (process.env.BENCH_SCALE_KEEP === '1') log(`kept ${dir}`);
    else rmSync(root, { recursive: true, force: true });
  }
  return rows;
}

const bench: Bench = async ({ log }) => {
  const rows: BenchRow[] = [];
  for (const size of sizes) {
    log(`scale: ${size} runs`);
    rows.push(...(await measure(size, log)));
  }
  return rows;
};

export default bench;
