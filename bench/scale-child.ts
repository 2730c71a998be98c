import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import { loadConfig } from '../src/config/index.ts';
import { runBackfill } from '../src/sync/backfill.ts';
import { createEngine, runPass } from '../src/sync/index.ts';
import { limitHeapGrowth } from '../src/util/heap-growth.ts';
import { createLogger } from '../src/util/logger.ts';
import { MICROS_PER_HOUR, type Micros } from '../src/util/timestamp.ts';

// One command of the scale bench in a fresh process, as `runsync sync` or `runsync backfill` runs
// it (compiled, V8's heap capped and its growth limited as the CLI does), but on the simulator's
// clock rather than the machine's: the worlds are dated, and a pass judges the open-run horizon and
// its window by its own clock. Prints one JSON line: what it did, its wall time and its peak RSS.
//
//   node dist/bench/scale-child.js sync <warehouse> <sim url> <key> <now µs> <start date>
//   node dist/bench/scale-child.js backfill <warehouse> <sim url> <key> <now µs> <start date> <from µs> <to µs>
//   node dist/bench/scale-child.js worker <warehouse> <sim url> <key> <now µs> <start date>
//
// `worker` starts the BullMQ worker (REDIS_URL, queues under a prefix of its own) with its pass at
// start, waits for that pass to be done, and stops the worker. Only `worker` loads the worker's
// modules (BullMQ, the jobs), as only `runsync worker` does: loaded by every command, they added
// to the RSS of those that never use them.

limitHeapGrowth();
const [command, dir, url, key, nowArg, startDate, fromArg, toArg] = process.argv.slice(2) as string[];
const anchor = Number(nowArg);
const wallAnchor = performance.now();
const now = (): Micros => anchor + Math.floor((performance.now() - wallAnchor) * 1000);

const config = loadConfig({
  ...process.env,
  RUNSYNC_API_URL: url,
  RUNSYNC_API_KEY: key,
  RUNSYNC_WAREHOUSE_DIR: dir,
  RUNSYNC_START_DATE: startDate,
  RUNSYNC_RECONCILE_EVERY: process.env.RUNSYNC_RECONCILE_EVERY ?? 'off',
});
// The time spent in the warehouse's units (open, work, close), summed from the gate's debug lines:
// what the command's loads and look-ups cost, apart from the API's pace. BENCH_CHILD_LOG=debug
// shows where a pass spends its time (on stderr).
let warehouseMs = 0;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
const shown = process.env.BENCH_CHILD_LOG ?? 'silent';
const logger = createLogger({
  level: 'debug',
  destination: {
    write(line: string) {
      if (line.includes('"warehouse unit"')) {
        const u = JSON.parse(line) as { openMs: number; workMs: number; closeMs: number };
        warehouseMs += u.openMs + u.workMs + u.closeMs;
      }
      const level = /"level":"(\w+)"/.exec(line)?.[1] ?? 'info';
      if (LEVELS.indexOf(level) >= LEVELS.indexOf(shown)) process.stderr.write(line);
    },
  },
});
const engine = createEngine(config, { logger, signal: new AbortController().signal, now });
// BENCH_CHILD_MEMORY=<ms> logs the process's memory by part every so often (on stderr): V8's heap
// against what lies outside it, mostly DuckDB's.
let snapped = false;
const memoryEvery = Number(process.env.BENCH_CHILD_MEMORY ?? 0);
const memoryLog =
  memoryEvery > 0
    ? setInterval(() => {
        const m = process.memoryUsage();
        if (
          process.env.BENCH_CHILD_SNAPSHOT &&
          m.heapUsed > Number(process.env.BENCH_CHILD_SNAPSHOT_AT ?? 1e8) &&
          !snapped
        ) {
          snapped = true;
          writeHeapSnapshot(process.env.BENCH_CHILD_SNAPSHOT);
        }
        const mb = (n: number) => Math.round(n / 1e6);
        logger.info(
          { rss: mb(m.rss), heapUsed: mb(m.heapUsed), heapTotal: mb(m.heapTotal), external: mb(m.external) },
          'memory',
        );
      }, memoryEvery)
    : null;
const t0 = performance.now();
let out: Record<string, number>;
try {
  if (command === 'sync') {
    const r = await runPass(engine.deps);
    out = { listed: r.runs.listed, fetched: r.runs.fetched };
  } else if (command === 'backfill') {
    const r = await runBackfill(engine.deps, {
      from: Number(fromArg),
      to: Number(toArg),
      filter: {},
      force: true,
      sliceMicros: MICROS_PER_HOUR * 24,
    });
    out = { listed: r.runs.listed, fetched: r.runs.fetched };
  } else if (command === 'worker') {
    out = await workerPass();
  } else {
    throw new Error(`unknown command ${command}`);
  }
} finally {
  await engine.close();
  if (memoryLog) clearInterval(memoryLog);
}
const wallMs = performance.now() - t0;

/** The worker's pass at start, run as `runsync worker` runs it; the runs it listed and fetched. */
async function workerPass(): Promise<Record<string, number>> {
  const [{ Queue }, { JOBS }, { workerSettings }, { FETCH_QUEUE, WRITE_QUEUE }, { startWorker }] = await Promise.all([
    import('bullmq'),
    import('../jobs/index.ts'),
    import('../src/worker/config.ts'),
    import('../src/worker/job-context.ts'),
    import('../src/worker/main.ts'),
  ]);
  const env = { ...process.env, RUNSYNC_QUEUE_PREFIX: `bench-scale-${process.pid}`, RUNSYNC_PASS_AT_START: 'on' };
  const settings = workerSettings(env, dir as string);
  const worker = await startWorker({ config, jobs: JOBS, settings, logger, engine: { now } });
  try {
    for (;;) {
      const done = await worker.queues.write.getJobs(['completed', 'failed']);
      const pass = done.find((j) => j.name === 'runs-pass');
      if (pass?.failedReason) throw new Error(`the worker's pass failed: ${pass.failedReason}`);
      const runs = (pass?.returnvalue as { runs?: { listed: number; fetched: number } } | undefined)?.runs;
      if (pass) return { listed: runs?.listed ?? 0, fetched: runs?.fetched ?? 0 };
      await sleep(250);
    }
  } finally {
    await worker.close();
    for (const name of [WRITE_QUEUE, FETCH_QUEUE]) {
      const q = new Queue(name, { connection: { url: config.redisUrl as string }, prefix: settings.prefix });
      await q.obliterate({ force: true }).catch(() => undefined);
      await q.close();
    }
  }
}
process.stdout.write(
  `${JSON.stringify({ ...out, wallMs, warehouseMs, peakRssMb: process.resourceUsage().maxRSS / 1024 })}\n`,
);
