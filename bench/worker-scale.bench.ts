import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type Simulator, type SimulatorOptions, startSimulator } from '../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR } from '../src/util/timestamp.ts';
import { systemMicros } from '../src/warehouse/index.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The worker fleet under one key: the detail throughput of 1, 2 and 4 \`runsync worker\` processes
sharing a budget of R = 50 requests/s (\`BENCH_RATE_LIMIT\`), which must stay at the budget rather
than multiply with the workers, and Redis memory while a 200,000-run backfill is enqueued and being
worked through, which stays flat since work is enqueued slice by slice and page by page. Each case
has its own Redis (a redis-server on a free port) and its own simulator.`;

const R = Number(process.env.BENCH_RATE_LIMIT ?? '50');
const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function startRedis(): Promise<{ url: string; stop(): void; redis: Redis }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'runsync-bench-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  for (let i = 0; i < 100 && (await redis.ping().catch(() => '')) !== 'PONG'; i++)
    await new Promise((r) => setTimeout(r, 100));
  return {
    url: `redis://127.0.0.1:${port}`,
    redis,
    stop() {
      redis.disconnect();
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function cli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: 'ignore',
  });
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

function stop(children: ChildProcess[]): Promise<void> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
          setTimeout(() => c.kill('SIGKILL'), 20_000).unref();
        }),
    ),
  ).then(() => undefined);
}

interface FleetCase {
  sim: Simulator;
  redis: Redis;
  /** What a `runsync` process of this case needs in its environment. */
  env: Record<string, string>;
  /** The processes `run` starts, stopped when it ends. */
  children: ChildProcess[];
}

/** A Redis, a simulator and a warehouse directory of their own for `run`; runs passes on `scheduleRuns`. */
async function fleetCase<T>(
  options: SimulatorOptions,
  scheduleRuns: string,
  run: (c: FleetCase) => Promise<T>,
): Promise<T> {
  const redis = await startRedis();
  const sim = await startSimulator({ port: 0, ...options });
  const dir = mkdtempSync(join(tmpdir(), 'runsync-bench-wh-'));
  const env = {
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    REDIS_URL: redis.url,
    RUNSYNC_SCHEDULE_RUNS: scheduleRuns,
    RUNSYNC_SCHEDULE_CATALOG: 'off',
    RUNSYNC_SCHEDULE_RECONCILE: 'off',
  };
  const children: ChildProcess[] = [];
  try {
    return await run({ sim, redis: redis.redis, env, children });
  } finally {
    await stop(children);
    await sim.close();
    redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function throughput(workers: number, details: number, log: (l: string) => void): Promise<BenchRow[]> {
  const options = {
    seed: 81,
    size: details + 500,
    days: 10,
    now: systemMicros() - MICROS_PER_HOUR,
    rateLimit: { perKey: { limit: R, windowSeconds: 1 } },
  };
  return fleetCase(options, '*/2 * * * * *', async ({ sim, env, children }) => {
    for (let i = 0; i < workers; i++) children.push(cli(['worker'], env));
    await until(() => sim.counters.count('runs.get') > 0, 120_000);
    const t0 = Date.now();
    const c0 = sim.counters.count('runs.get');
    const done = await until(() => sim.counters.count('runs.get') - c0 >= details, 600_000);
    const seconds = (Date.now() - t0) / 1000;
    const fetched = sim.counters.count('runs.get') - c0;
    const total = sim.counters.count();
    const limited = sim.counters.count(undefined, 429);
    const busiest = sim.counters.maxInAlignedWindow(1000);
    const timedOut = done ? '' : ' (timed out)';
    log(
      `${workers} worker(s): ${fetched} details in ${seconds.toFixed(1)} s; busiest second ${busiest}; ` +
        `${limited} × 429 of ${total}${timedOut}`,
    );
    return [
      {
        bench: 'worker scaling',
        metric: `${workers} worker(s): detail rate / R`,
        value: fetched / seconds / R,
        goal: '~0.95, flat',
        note: `${fetched} details in ${seconds.toFixed(1)} s, R=${R}/s, busiest second ${busiest}`,
      },
      {
        bench: 'worker scaling',
        metric: `${workers} worker(s): 429 share`,
        value: `${((100 * limited) / total).toFixed(2)}%`,
        goal: '<= 1%',
      },
    ];
  });
}

async function backfillMemory(size: number, watchSeconds: number, log: (l: string) => void): Promise<BenchRow[]> {
  const now = systemMicros() - MICROS_PER_HOUR;
  const options = { seed: 82, size, days: 30, now, rateLimit: { perKey: null } };
  return fleetCase(options, 'off', async ({ sim, redis, env, children }) => {
    const memory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);
    const base = await memory();
    const enqueue = cli(
      ['backfill', '--from', formatTimestamp(now - 30 * MICROS_PER_DAY), '--to', formatTimestamp(now), '--enqueue'],
      env,
    );
    await new Promise((r) => enqueue.once('exit', r));
    const afterEnqueue = await memory();
    children.push(cli(['worker'], env), cli(['worker'], env));
    let peak = afterEnqueue;
    const samples: number[] = [];
    const end = Date.now() + watchSeconds * 1000;
    while (Date.now() < end) {
      const m = await memory();
      peak = Math.max(peak, m);
      samples.push(m);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const fetched = sim.counters.count('runs.get');
    const megabytes = (b: number) => b / 1e6;
    const mb = (b: number) => megabytes(b).toFixed(2);
    const half = samples.slice(0, Math.ceil(samples.length / 2));
    const late = samples.slice(Math.ceil(samples.length / 2));
    const sizes = `${mb(base)} MB empty, ${mb(afterEnqueue)} MB enqueued, peak ${mb(peak)} MB`;
    log(`backfill of ${size} runs: Redis ${sizes} over ${watchSeconds} s while ${fetched} details were fetched`);
    return [
      {
        bench: 'worker backfill',
        metric: `Redis memory, ${size} runs enqueued`,
        value: megabytes(afterEnqueue - base),
        unit: 'MB',
        note: 'above an empty Redis; 30 slice jobs',
      },
      {
        bench: 'worker backfill',
        metric: 'Redis memory, peak while working',
        value: megabytes(peak - base),
        unit: 'MB',
        goal: 'bounded',
        note:
          `${fetched} details fetched in ${watchSeconds} s; first half max ${mb(Math.max(...half) - base)} MB, ` +
          `second half max ${mb(Math.max(...late) - base)} MB`,
      },
    ];
  });
}

const bench: Bench = async ({ scale, log }) => {
  const rows: BenchRow[] = [];
  const details = Math.round(1500 * scale);
  for (const n of [1, 2, 4]) rows.push(...(await throughput(n, details, log)));
  rows.push(...(await backfillMemory(Math.round(200_000 * scale), Math.max(20, Math.round(90 * scale)), log)));
  return rows;
};

export default bench;
