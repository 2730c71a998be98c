import { hostname } from 'node:os';
import { FlowProducer, type Job, Queue, QueueEvents, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { RedisBudgetStore } from '../budget/redis-store.ts';
import type { RunsyncConfig } from '../config/env.ts';
import { ConfigError } from '../config/error.ts';
import { openStore } from '../storage/open.ts';
import { DetailFetcher } from '../sync/detail-fetcher.ts';
import { logProgress, ProgressTracker } from '../sync/progress.ts';
import { createEngine, type Engine, type EngineOptions } from '../sync/setup.ts';
import type { Logger } from '../util/logger.ts';
import type { WarehouseLockedError } from '../warehouse/errors.ts';
import { takeSharedPassLock } from '../warehouse/pass-lock.ts';
import { CONTINUOUS, CONTINUOUS_EVERY_MS, type WorkerSettings } from './config.ts';
import { startDashboard } from './dashboard.ts';
import {
  FETCH_QUEUE,
  type JobContext,
  type JobRegistry,
  PayloadCheckError,
  type WorkerQueues,
  WRITE_QUEUE,
} from './job-context.ts';
import { createMetrics } from './metrics.ts';
import { redisConnection, untilReady, watchRedis } from './redis-connection.ts';
import { RemoteDetails } from './remote-details.ts';
import { StagingStore } from './staging-store.ts';

// `runsync worker`: the BullMQ workers of one process (the writer, one job at a time across the
// fleet, and the detail fetchers), the shared rate budget in Redis, and the job schedulers,
// registered at every start (upsert: several workers starting together make one schedule) and
// again whenever Redis comes back, in case it came back empty.

export interface WorkerOptions {
  config: RunsyncConfig;
  /** The job processors by name (jobs/index.ts). */
  jobs: JobRegistry;
  settings: WorkerSettings;
  logger: Logger;
  /** Tests pass a clock and short retry delays. */
  engine?: Partial<EngineOptions>;
  /** Serve Bull Board and /metrics here. */
  dashboard?: { port: number; host: string };
  /** Aborted while starting (Redis unreachable, say): the start gives up and closes what it opened. */
  signal?: AbortSignal;
}

/** The worker was stopped before it had started. */
export class WorkerStartAbortedError extends Error {
  override readonly name = 'WorkerStartAbortedError';
}

export interface WorkerHandle {
  queues: WorkerQueues;
  /** The dashboard's address, when one was asked for. */
  dashboardUrl: string | null;
  /** Stops taking jobs, lets work in flight finish or hands it back, and closes everything. */
  close(): Promise<void>;
}

export const BLOCKED_KEY = 'warehouse-blocked';
export const SCHEDULES = ['runs-pass', 'catalog-snapshot', 'reconcile'] as const;

export { redisConnection } from './redis-connection.ts';

export async function registerSchedules(queue: Queue, settings: WorkerSettings): Promise<void> {
  const jobOpts = {
    attempts: 5,
    backoff: { type: 'exponential', delay: 5_000 },
    removeOnComplete: { count: 200 },
    removeOnFail: { count: 200 },
  };
  const wanted = {
    'runs-pass': settings.schedules.runs && { pattern: settings.schedules.runs, name: 'runs-pass', data: {} },
    'catalog-snapshot': settings.schedules.catalog && {
      pattern: settings.schedules.catalog,
      name: 'catalog-snapshot',
      data: {},
    },
    reconcile: settings.schedules.reconcile && {
      pattern: settings.schedules.reconcile,
      name: 'runs-pass',
      data: { reconcile: true },
    },
  };
  for (const id of SCHEDULES) {
    const w = wanted[id];
    if (w)
      await queue.upsertJobScheduler(
        id,
        // Continuous: one pass queued every few seconds, and the write queue's concurrency of one
        // runs them back to back whenever a pass takes longer.
        w.pattern === CONTINUOUS ? { every: CONTINUOUS_EVERY_MS } : { pattern: w.pattern, tz: 'UTC' },
        { name: w.name, data: w.data, opts: jobOpts },
      );
    else await queue.removeJobScheduler(id);
  }
}

export async function startWorker(o: WorkerOptions): Promise<WorkerHandle> {
  const { config, settings, logger } = o;
  if (config.redisUrl === null)
    throw new ConfigError('REDIS_URL', 'is not set; the worker keeps its queues and shared rate budget in Redis');
  const prefix = settings.prefix;
  const connection = redisConnection(config.redisUrl);
  const budgetRedis = redisConnection(config.redisUrl);
  const eventsRedis = redisConnection(config.redisUrl);
  const connections = [connection, budgetRedis, eventsRedis];
  const redisError = watchRedis(connections, logger);
  const shutdown = new AbortController();
  const staging = new StagingStore(openStore(settings.staging, config.storage.s3, { logger }));
  const queues = openQueues(connection, eventsRedis, prefix, redisError);
  const engine = createEngine(config, {
    logger,
    signal: shutdown.signal,
    store: new RedisBudgetStore({ redis: budgetRedis, key: `${prefix}:budget` }),
    onLocked: blockedNoter(connection, prefix),
    ...o.engine,
  });
  const parts: WorkerParts = { o, connection, connections, queues, staging, engine, shutdown };
  wireEngine(parts);

  try {
    // BullMQ's commands wait through a reconnect and cannot be called off: the start waits for
    // Redis itself, in a way a stop can end.
    await untilReady(connection, o.signal);
    await queues.write.setGlobalConcurrency(1);
    await registerSchedules(queues.write, settings);
    if (settings.passAtStart) await queueFirstPasses(queues.write, settings, logger);
  } catch (e) {
    if (!o.signal?.aborted) throw e;
    for (const c of connections) c.disconnect();
    await engine.close();
    await staging.store.close();
    throw new WorkerStartAbortedError('the worker was stopped before it had started');
  }
  registerAgainWhenRedisIsBack(connection, queues.write, settings, logger);

  const workers = startJobWorkers(parts, redisError);
  const metrics = createMetrics({ queues, redis: connection, prefix, api: engine.deps.api });
  workers.writer.on('completed', (job, result) => metrics.recordJob(job.name, result));
  const dashboard = o.dashboard ? await startDashboard({ ...o.dashboard, queues, metrics, logger }) : null;
  logger.info({ prefix, schedules: settings.schedules, fetchConcurrency: settings.fetchConcurrency }, 'worker started');

  let closing: Promise<void> | null = null;
  return {
    queues,
    dashboardUrl: dashboard?.url ?? null,
    close() {
      closing ??= stopWorker(parts, workers, dashboard);
      return closing;
    },
  };
}

/** What a worker process holds while it runs: its jobs draw on it, and its stop closes it. */
interface WorkerParts {
  readonly o: WorkerOptions;
  /** The connection of the queues and the jobs. */
  readonly connection: Redis;
  /** Every connection to Redis, that one included. */
  readonly connections: readonly Redis[];
  readonly queues: WorkerQueues;
  readonly staging: StagingStore;
  readonly engine: Engine;
  /** Aborted when the worker stops. */
  readonly shutdown: AbortController;
}

function openQueues(
  connection: Redis,
  eventsRedis: Redis,
  prefix: string,
  redisError: (e: Error) => void,
): WorkerQueues {
  const queues: WorkerQueues = {
    write: new Queue(WRITE_QUEUE, { connection, prefix }),
    fetch: new Queue(FETCH_QUEUE, { connection, prefix }),
    fetchEvents: new QueueEvents(FETCH_QUEUE, { connection: eventsRedis, prefix }),
    flows: new FlowProducer({ connection, prefix }),
  };
  // BullMQ's objects repeat their connections' errors (and print them when nobody listens).
  for (const emitter of [queues.write, queues.fetch, queues.fetchEvents, queues.flows])
    (emitter as unknown as { on(e: 'error', f: (err: Error) => void): void }).on('error', redisError);
  // The writer waits on many fetch jobs at once, each wait a listener on these.
  for (const emitter of [queues.fetch, queues.fetchEvents]) emitter.setMaxListeners(1000);
  return queues;
}

/** Tells `runsync status` (through Redis) that this worker waits for a warehouse another process holds. */
function blockedNoter(connection: Redis, prefix: string): (e: WarehouseLockedError) => void {
  // The wait began at the first refusal; a refusal more than a retry apart from the last one is
  // a new wait.
  let blockedSince = 0;
  let blockedLast = 0;
  return (e) => {
    const now = Date.now();
    if (now - blockedLast > 5_000) blockedSince = now;
    blockedLast = now;
    const info = JSON.stringify({
      holderPid: e.holderPid,
      holder: e.holder,
      waiting: `${hostname()}:${process.pid}`,
      since: blockedSince,
    });
    connection.set(`${prefix}:${BLOCKED_KEY}`, info, 'PX', 30_000).catch(() => undefined);
  };
}

/** The engine's pass lock shared with the worker's other jobs, and its details fetched by the fleet. */
function wireEngine({ o, queues, staging, engine, shutdown }: WorkerParts): void {
  const { config, settings, logger } = o;
  // A runsync command holding the warehouse (a sync by hand, a rebuild) is waited for.
  engine.deps.passLock = () =>
    takeSharedPassLock(config.warehouseDir, shutdown.signal, (e) =>
      logger.info({ holder: e.holder }, 'a runsync command holds the warehouse; the pass waits for it'),
    );
  engine.deps.details = (signal) =>
    new RemoteDetails({
      queue: queues.fetch,
      events: queues.fetchEvents,
      staging,
      signal,
      chunk: settings.fetchChunk,
      local: (s) => new DetailFetcher(engine.deps.api, engine.deps.settings.detailConcurrency, s),
      onTakeBack: ({ jobId, runs, stalledMs }) =>
        logger.warn(
          { jobId, runs, stalledS: Math.round(stalledMs / 1000) },
          'no worker took a fetch job; the writer fetches its runs itself',
        ),
    });
}

function registerAgainWhenRedisIsBack(connection: Redis, write: Queue, settings: WorkerSettings, logger: Logger): void {
  let firstReady = true;
  connection.on('ready', () => {
    if (firstReady) {
      firstReady = false;
      return;
    }
    logger.info('redis is back; registering the schedules again');
    registerSchedules(write, settings)
      .then(() => write.setGlobalConcurrency(1))
      .catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'could not register the schedules'));
  });
}

/** Runs a job by its name's processor, with the context every processor receives. */
function jobProcessor({ o, connection, queues, staging, engine, shutdown }: WorkerParts) {
  const { config, settings, logger } = o;
  return async (job: Job, token?: string): Promise<unknown> => {
    const def = Object.hasOwn(o.jobs, job.name) ? o.jobs[job.name] : undefined;
    if (!def) throw new UnrecoverableError(`no job is named ${JSON.stringify(job.name)}`);
    const jobLogger = logger.child({ job: job.name, jobId: job.id });
    // The writer's jobs are the long ones: a progress line every RUNSYNC_PROGRESS_EVERY.
    const tracker = job.queueName === WRITE_QUEUE ? new ProgressTracker(job.name) : null;
    const deps = { ...engine.deps, logger: jobLogger, signal: shutdown.signal };
    const stopProgress = tracker ? logProgress(tracker, jobLogger, config.progressEveryMs) : () => undefined;
    const ctx: JobContext = {
      deps: tracker ? tracker.track(deps) : deps,
      queues,
      staging,
      settings,
      redis: connection,
      job,
      token,
      logger: jobLogger,
      signal: shutdown.signal,
    };
    try {
      return await def.process(job.data, ctx);
    } catch (e) {
      if (e instanceof PayloadCheckError) throw new UnrecoverableError(e.message);
      throw e;
    } finally {
      stopProgress();
    }
  };
}

/** The writer (one job at a time across the fleet) and the detail fetchers. */
function startJobWorkers(parts: WorkerParts, redisError: (e: Error) => void): { writer: Worker; fetcher: Worker } {
  const { settings, logger } = parts.o;
  const processJob = jobProcessor(parts);
  // A job's lock is renewed at half its duration while its worker lives; once a dead worker's lock
  // lapses, the next stalled-job check hands the job to another worker: both within the takeover.
  const lockDuration = Math.round((settings.takeoverMs * 2) / 3);
  const stalledInterval = settings.takeoverMs - lockDuration;
  const common = {
    connection: parts.connection,
    prefix: settings.prefix,
    lockDuration,
    stalledInterval,
    maxStalledCount: 10,
  };
  const writer = new Worker(WRITE_QUEUE, processJob, { ...common, concurrency: 1 });
  const fetcher = new Worker(FETCH_QUEUE, processJob, { ...common, concurrency: settings.fetchConcurrency });
  for (const w of [writer, fetcher]) {
    w.on('failed', (job, err) => {
      const fields = { job: job?.name, jobId: job?.id, err: err.message };
      // A job that ended because this worker is stopping has not failed: its next attempt resumes it.
      if (parts.shutdown.signal.aborted)
        logger.info(fields, 'job stopped by the shutdown; another attempt takes it up');
      else logger.warn(fields, 'job failed');
    });
    w.on('error', redisError);
  }
  return { writer, fetcher };
}

/**
 * Stops taking jobs, lets work in flight finish or hands it back, and closes everything. Work in
 * flight gets most of the grace; what is left is for handing it back and closing, each step
 * bounded, so that a Redis that does not answer cannot hold the stop.
 */
async function stopWorker(
  { o, connections, queues, staging, engine, shutdown }: WorkerParts,
  { writer, fetcher }: { writer: Worker; fetcher: Worker },
  dashboard: { close(): Promise<void> } | null,
): Promise<void> {
  const { settings, logger } = o;
  const started = Date.now();
  const reserve = Math.min(3000, settings.graceMs * 0.3);
  const left = () => Math.max(0, settings.graceMs - reserve - (Date.now() - started));
  logger.info({ graceMs: settings.graceMs }, 'worker stopping');
  shutdown.abort(new Error('the worker is shutting down'));
  // A BullMQ object closed while its connection still starts up reports that connection's failure
  // after it has let go of its listeners, and the process dies of it: a stop right after the start
  // first lets them finish starting, for a moment at most.
  const all = [writer, fetcher, queues.write, queues.fetch, queues.fetchEvents, queues.flows];
  await within(Promise.all(all.map((b) => b.waitUntilReady())), Math.min(1000, left()));
  const finished = await within(Promise.all([writer.close(), fetcher.close()]), left());
  if (!finished) {
    logger.warn('work still in flight after the grace period; leaving it to other workers');
    await within(Promise.all([writer.close(true), fetcher.close(true)]), reserve / 3);
  }
  const closeAll = Promise.allSettled([
    dashboard?.close(),
    queues.fetchEvents.close(),
    queues.flows.close(),
    queues.write.close(),
    queues.fetch.close(),
    engine.close(),
    staging.store.close(),
  ]);
  await within(closeAll, reserve / 3);
  for (const c of connections) c.disconnect();
  logger.info('worker stopped');
}

/** Whether `p` settled within `ms`; it goes on either way. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A runs pass and a catalog snapshot right away, so a worker starting on an empty warehouse does
 * not wait for the first tick of the schedules. Several workers starting together add one of each.
 */
async function queueFirstPasses(queue: Queue, settings: WorkerSettings, logger: Logger): Promise<void> {
  const opts = (id: string) => ({
    deduplication: { id: `start-${id}`, ttl: 60_000 },
    attempts: 5,
    backoff: { type: 'exponential', delay: 5_000 },
    removeOnComplete: { count: 200 },
    removeOnFail: { count: 200 },
  });
  const queued: string[] = [];
  if (settings.schedules.runs) {
    await queue.add('runs-pass', {}, opts('runs-pass'));
    queued.push('runs-pass');
  }
  if (settings.schedules.catalog) {
    await queue.add('catalog-snapshot', {}, opts('catalog-snapshot'));
    queued.push('catalog-snapshot');
  }
  if (queued.length) logger.info({ jobs: queued }, 'queued a first pass at start');
}
