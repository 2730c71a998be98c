import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../src/config/index.ts';
import { type Simulator, type SimulatorOptions, startSimulator } from '../src/simulator/index.ts';
import { createEngine, type Engine, runPass } from '../src/sync/index.ts';
import { silentLogger } from '../src/util/logger.ts';
import {
  formatTimestamp,
  MICROS_PER_DAY,
  MICROS_PER_SECOND,
  type Micros,
  parseTimestamp,
} from '../src/util/timestamp.ts';
import { openWarehouse } from '../src/warehouse/index.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The sync engine's cost against the simulator. Steady state: after a first pass the clock moves on
(5 minutes, then an hour) and one pass runs; its requests are compared with the least the API
allows for what changed (list pages for the window's runs and the open runs, one detail per new or
changed run, the catalog pages and the tool options); every change in this data happens to a run
still open, so the plain pass must catch all of it, and the bench checks it did. First full sync:
2,000 runs (\`BENCH_SCALE\` scales it) under a per-key limit of R = 50 requests/s
(\`BENCH_RATE_LIMIT\`), wall time over requests ÷ R; the budget leaves 5% of the key to its other
users, so about 1.05 is the floor.`;

const NOW = '2026-03-01T00:00:00Z';
const SETTLE = 5 * MICROS_PER_SECOND;
const R = Number(process.env.BENCH_RATE_LIMIT ?? '50');

function engine(sim: Simulator, dir: string): Engine {
  const config = loadConfig({
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    RUNSYNC_START_DATE: formatTimestamp((parseTimestamp(NOW) as Micros) - sim.world.options.days * MICROS_PER_DAY),
  });
  return createEngine(config, {
    logger: silentLogger(),
    signal: new AbortController().signal,
    now: () => sim.clock.now(),
  });
}

async function storedRuns(dir: string): Promise<Map<string, Micros>> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    const rows = await wh.all<{ id: string; u: bigint }>(`SELECT id, epoch_us(updated_at) AS u FROM runs`);
    return new Map(rows.map((r) => [r.id, Number(r.u)]));
  } finally {
    await wh.close();
  }
}

/** A simulator of 30 days to NOW, a warehouse directory and an engine between them, for `run`. */
async function syncCase<T>(
  options: SimulatorOptions,
  run: (sim: Simulator, e: Engine, dir: string) => Promise<T>,
): Promise<T> {
  const sim = await startSimulator({ port: 0, days: 30, now: NOW, ...options });
  const dir = mkdtempSync(join(tmpdir(), 'runsync-bench-sync-'));
  const e = engine(sim, dir);
  try {
    return await run(sim, e, dir);
  } finally {
    await e.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pages = (n: number, per: number) => Math.max(1, Math.ceil(n / per));
const secondsOf = (ms: number, digits = 1) => (ms / 1000).toFixed(digits);

async function steadyState(size: number, log: (l: string) => void): Promise<BenchRow[]> {
  const options = { seed: 61, size, rateLimit: { perKey: null }, runs: { postSettleFraction: 0 } };
  return syncCase(options, async (sim, e, dir) => {
    const rows: BenchRow[] = [];
    const first = await runPass(e.deps);
    log(
      `first pass: ${first.runs.fetched} runs, ${first.requests.requests} requests in ${secondsOf(first.durationMs)} s`,
    );
    for (const step of ['5m', '1h']) {
      const before = await storedRuns(dir);
      sim.advance(step);
      const to = sim.clock.now() - SETTLE;
      let k = 0;
      let c = 0;
      let inWindow = 0;
      const truth = new Map<string, { created: Micros; updated: Micros }>();
      for (const d of sim.world.truthRunDetails()) {
        const created = parseTimestamp(d.created_at as string) as Micros;
        if (created < to)
          truth.set(d.id as string, { created, updated: parseTimestamp(d.updated_at as string) as Micros });
      }
      for (const [id, t] of truth) {
        const stored = before.get(id);
        if (stored === undefined) k++;
        else if (t.updated > stored) c++;
      }
      sim.counters.reset();
      const r = await runPass(e.deps);
      const window = r.window as { from: Micros; to: Micros };
      for (const t of truth.values()) if (t.created >= window.from && t.created < window.to) inWindow++;
      const catalog = Object.entries(r.catalog?.tables ?? {}).reduce(
        (a, [t, x]) => a + (t === 'run_tool_options' ? 1 : pages(x.received, 200)),
        0,
      );
      const made = sim.counters.count();
      const list = sim.counters.count('runs.list');
      // The minimum for what changed: the list pages the pass read, one detail per new or changed
      // run, the catalog's pages. Anything above is a detail fetched for nothing, or a retry.
      const minimum = list + k + c + catalog;
      const windowPages = pages(inWindow, 100);
      const openFloor = r.openRunsChecked ? pages(r.openRunsChecked, 100) : 0;
      const after = await storedRuns(dir);
      let missed = 0;
      for (const [id, t] of truth) if (after.get(id) !== t.updated) missed++;
      const seen = `k=${k} new, c=${c} changed, ${inWindow} in the window, ${r.openRunsChecked} open re-checked`;
      const detail = sim.counters.count('runs.get');
      log(
        `after ${step}: ${seen}; ${made} requests (${list} list, ${detail} detail) vs minimum ${minimum}; ` +
          `${missed} runs not exact`,
      );
      const exact = missed === 0 ? 'exact' : `${missed} NOT exact`;
      rows.push({
        bench: 'sync steady state',
        metric: `requests / minimum, after ${step}`,
        value: made / minimum,
        goal: '1.00',
        note: `${made} vs ${list} list + k=${k} + c=${c} + ${catalog} catalog; ${exact}`,
      });
      rows.push({
        bench: 'sync steady state',
        metric: `list pages / floor, after ${step}`,
        value: list / (windowPages + openFloor),
        note:
          `${list} list pages; floor ${windowPages} for the window + ${openFloor} for ${r.openRunsChecked} open runs ` +
          "were the runs list filterable by run id (by ticket, 200 a request, the tickets' other runs come too)",
      });
    }
    return rows;
  });
}

async function firstSync(size: number, log: (l: string) => void): Promise<BenchRow[]> {
  const options = { seed: 62, size, rateLimit: { perKey: { limit: R, windowSeconds: 1 } } };
  return syncCase(options, async (sim, e) => {
    await new Promise((r) => setTimeout(r, 1100));
    sim.counters.reset();
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const t0 = performance.now();
    const r = await runPass(e.deps, { export: false });
    lag.disable();
    if (process.env.SYNC_BENCH_TRACE) {
      const ms = (ns: number) => (ns / 1e6).toFixed(0);
      log(
        `event loop delay: p50 ${ms(lag.percentile(50))} ms, p99 ${ms(lag.percentile(99))} ms, max ${ms(lag.max)} ms`,
      );
    }
    const seconds = (performance.now() - t0) / 1000;
    const requests = sim.counters.count();
    const limited = sim.counters.count(undefined, 429);
    if (process.env.SYNC_BENCH_TRACE) {
      const t = sim.counters.log();
      const start = t[0]?.t ?? 0;
      const perSecond: number[] = [];
      for (const x of t) {
        const second = Math.floor((x.t - start) / 1000);
        perSecond[second] = (perSecond[second] ?? 0) + 1;
      }
      const counts = [...perSecond].map((v) => v ?? 0).join(' ');
      const firstAfter = secondsOf(start - t0 - performance.timeOrigin, 2);
      log(`requests per second: ${counts}; first request ${firstAfter} s after start`);
    }
    const took = `${requests} requests (${limited} × 429) in ${seconds.toFixed(1)} s`;
    log(`first sync of ${r.runs.fetched} runs: ${took} at R=${R}/s`);
    return [
      {
        bench: 'sync first full',
        metric: 'wall time / (requests / R)',
        value: seconds / (requests / R),
        goal: '<= 1.10',
        note: `${requests} requests in ${seconds.toFixed(1)} s, R=${R}/s, ${r.runs.fetched} runs`,
      },
      {
        bench: 'sync first full',
        metric: '429 share',
        value: `${((100 * limited) / requests).toFixed(2)}%`,
        goal: '<= 1%',
      },
    ];
  });
}

// SYNC_BENCH=steady or SYNC_BENCH=first runs one half.
const only = process.env.SYNC_BENCH ?? '';
const bench: Bench = async ({ scale, log }) => [
  ...(only === 'first' ? [] : await steadyState(Math.round(20_000 * scale), log)),
  ...(only === 'steady' ? [] : await firstSync(Math.round(2_000 * scale), log)),
];

export default bench;
