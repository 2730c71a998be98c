import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { SimClock } from '../../src/simulator/clock.ts';
import type { Simulator, SimulatorOptions } from '../../src/simulator/index.ts';
import { DEFAULT_RUN_OPTIONS } from '../../src/simulator/runs.ts';
import { SimWorld } from '../../src/simulator/world.ts';
import { formatTimestamp, type Micros, parseDuration } from '../../src/util/timestamp.ts';
import { collect, spawnCli, waitForLine } from '../support/cli.ts';
import { diffCatalog, diffFacts, startSim, tempDir, truth } from '../sync/kit.ts';

// Worker processes as an operator runs them (`runsync worker`), each test on its own queue prefix
// in Redis, removed afterwards.

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export function uniquePrefix(): string {
  return `rstest-${randomBytes(5).toString('hex')}`;
}

export interface WorkerTest {
  /** The test's workers: stopped first. */
  workers: RunningWorker[];
  /** A simulator in this process (startSim), closed after the test. */
  sim(options?: SimulatorOptions): Promise<Simulator>;
  /** A simulator process (startSimProcess), closed after the test. */
  simProcess(o: SimProcessOptions): Promise<SimProcess>;
  /** A warehouse directory, removed after the test. */
  dir(): string;
  /** A queue prefix of its own, its keys deleted from the Redis at `url` after the test. */
  prefix(url?: string): string;
  /** Anything else to undo after the test; the latest first, as all of the above but the workers. */
  defer(undo: () => unknown): void;
}

/** For a describe block whose tests run workers: what a test started is stopped after it, passed or not. */
export function perWorkerTest(): WorkerTest {
  const workers: RunningWorker[] = [];
  const undo: (() => unknown)[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => stopWorker(w)));
    for (const u of undo.splice(0).reverse()) await u();
  });
  const closed = <T extends { close(): Promise<void> }>(x: T): T => {
    undo.push(() => x.close());
    return x;
  };
  return {
    workers,
    sim: async (options) => closed(await startSim(options)),
    simProcess: async (o) => closed(await startSimProcess(o)),
    dir() {
      const t = tempDir();
      undo.push(t.cleanup);
      return t.dir;
    },
    prefix(url = REDIS_URL) {
      const prefix = uniquePrefix();
      undo.push(() => cleanRedis(prefix, url));
      return prefix;
    },
    defer: (u) => void undo.push(u),
  };
}

export function workerEnv(
  sim: Pick<Simulator, 'url' | 'key'>,
  dir: string,
  prefix: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    REDIS_URL,
    RUNSYNC_QUEUE_PREFIX: prefix,
    RUNSYNC_SCHEDULE_RUNS: '*/3 * * * * *',
    RUNSYNC_SCHEDULE_CATALOG: '*/7 * * * * *',
    RUNSYNC_SCHEDULE_RECONCILE: 'off',
    RUNSYNC_SHUTDOWN_GRACE: '10s',
    // A killed worker's pass is taken up within seconds, not the minute a fleet would use.
    RUNSYNC_TAKEOVER_AFTER: '9s',
    // The simulator's clock runs behind the real one, and tests move it: the lookback covers it.
    RUNSYNC_LOOKBACK: '3h',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

export interface RunningWorker {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnWorker(env: Record<string, string>): RunningWorker {
  const child = spawnCli(['worker'], env);
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = collect(child, 30 * 60_000).then((r) => ({ code: r.code, signal: r.signal }));
  return { child, output: () => out, exited };
}

export async function stopWorker(w: RunningWorker): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
  return w.exited;
}

/** Removes every key of the prefix (queues, budget, markers). */
export async function cleanRedis(prefix: string, url = REDIS_URL): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    for (const name of ['write', 'fetch']) {
      const q = new Queue(name, { connection: redis, prefix });
      await q.obliterate({ force: true }).catch(() => undefined);
      await q.close();
    }
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Polls `check` until it returns true, or fails after `timeoutMs` with what `describe` says. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs: number,
  describe: () => Promise<string> | string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${await describe()}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * A simulator in a process of its own (`runsync simulate`), for tests that count requests per
 * second: in the test's own process, the test's work would delay the simulator and crowd its
 * seconds. Its ground truth comes from a replica world in this process: the same seed, size, days
 * and start give the same data, and the replica's clock moves with the simulator's.
 */
export interface SimProcess {
  url: string;
  key: string;
  world: SimWorld;
  clock: { now(): Micros };
  advance(by: string): Promise<void>;
  counters(): Promise<{ total: number; byStatus: Record<string, number>; busiestSecond: number }>;
  close(): Promise<void>;
}

export interface SimProcessOptions {
  seed: number;
  size: number;
  days: number;
  now: Micros;
  limit: number;
  postSettle: number;
}

export async function startSimProcess(o: SimProcessOptions): Promise<SimProcess> {
  const key = `svc_live_${randomBytes(12).toString('hex')}`;
  const child = spawnCli([
    'simulate',
    '--port',
    '0',
    '--seed',
    String(o.seed),
    '--size',
    String(o.size),
    '--days',
    String(o.days),
    '--now',
    formatTimestamp(o.now),
    '--clock',
    'manual',
    '--key',
    key,
    '--rate-limit',
    String(o.limit),
    '--post-settle',
    String(o.postSettle),
  ]);
  const line = await waitForLine(child, /^simulator listening on http:\/\/\S+/, 60_000);
  const url = (/listening on (http:\/\/\S+)/.exec(line) as RegExpExecArray)[1] as string;
  const clock = new SimClock(o.now);
  const world = new SimWorld(
    {
      seed: o.seed,
      size: o.size,
      days: o.days,
      initialNow: o.now,
      runs: { ...DEFAULT_RUN_OPTIONS, postSettleFraction: o.postSettle },
    },
    clock,
  );
  const admin = (path: string, init?: RequestInit) =>
    fetch(`${url}${path}`, init).then((r) => r.json() as Promise<unknown>);
  return {
    url,
    key,
    world,
    clock,
    async advance(by) {
      await admin('/_sim/clock', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ advance: by }),
      });
      clock.advance(parseDuration(by) as Micros);
    },
    counters: () =>
      admin('/_sim/counters') as Promise<{ total: number; byStatus: Record<string, number>; busiestSecond: number }>,
    close: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    },
  };
}

/** A TCP port free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * A redis-server of the test's own on `port`, its append-only file in `dir`, so that it can be
 * killed and started again with its data; resolves once it answers PING.
 */
export async function startRedisServer(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--dir', dir],
    { stdio: 'ignore' },
  );
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  await eventually(
    async () => {
      await probe.connect().catch(() => undefined);
      return (await probe.ping().catch(() => '')) === 'PONG';
    },
    20_000,
    () => `redis-server on ${port} did not answer`,
  );
  probe.disconnect();
  return child;
}

export interface Fleet {
  workers: RunningWorker[];
  sim: SimProcess | null;
  prefix: string;
  /** More to close after the test, in order (servers, temp folders). */
  also: (() => Promise<unknown> | unknown)[];
}

/** A test's fleet, torn down after each test: its workers, its simulator, its Redis keys and `also`. */
export function useFleet(): Fleet {
  const fleet: Fleet = { workers: [], sim: null, prefix: '', also: [] };
  afterEach(async () => {
    await Promise.all(fleet.workers.splice(0).map((w) => stopWorker(w)));
    await fleet.sim?.close();
    for (const f of fleet.also.splice(0)) await f();
    if (fleet.prefix) await cleanRedis(fleet.prefix);
    fleet.sim = null;
  });
  return fleet;
}

/** Kills the first worker with SIGKILL and starts another in its place; returns the one killed. */
export async function killAndReplace(workers: RunningWorker[], env: Record<string, string>): Promise<RunningWorker> {
  const victim = workers.shift() as RunningWorker;
  victim.child.kill('SIGKILL');
  const { signal } = await victim.exited;
  if (signal !== 'SIGKILL') throw new Error(`the worker ended by ${signal ?? 'itself'}, not by SIGKILL`);
  workers.push(spawnWorker(env));
  return victim;
}

/** Waits until the warehouse in `dir` holds the simulator's runs as of now and its catalog. */
export async function untilExact(s: SimProcess, dir: string, workers: readonly RunningWorker[], timeoutMs: number) {
  const want = truth(s, s.clock.now());
  await eventually(
    async () => (await diffFacts(want, dir)).length === 0 && (await diffCatalog(s, dir)).length === 0,
    timeoutMs,
    async () =>
      `${(await diffFacts(want, dir)).length} runs differ; ` +
      workers.map((w) => w.output().slice(-2000)).join('\n---\n'),
  );
  return want;
}
