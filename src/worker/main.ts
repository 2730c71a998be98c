import { hostname } from 'node:os';
import { FlowProducer, type Job, Queue, QueueEvents, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { RedisBudgetStore } from '../budget/redis-store.ts';
import type { RunsyncConfig } from '../config/env.ts';
import { ConfigError } from '../config/error.ts';
import { openStore } from '../storage/open.ts';
import { DetailFetcher } from '../sync/detail-fetcher.ts';
import { logProgress, ProgressTracker } from '../sync/progress.ts';
import { createEngine, type EngineOptions } from '../sync/setup.ts';
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

export function redisConnection(url: string): Redis {
  // BullMQ's workers need commands to wait through a reconnect rather than fail.
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

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
  // The wait began at the first refusal; a refusal more than a retry apart from the last one is
  // a new wait.
  let blockedSince = 0;
  let blockedLast = 0;
  const noteBlocked = (e: WarehouseLockedError) => {
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
  const engine = createEngine(config, {
    logger,
    signal: shutdown.signal,
    store: new RedisBudgetStore({ redis: budgetRedis, key: `${prefix}:budget` }),
    onLocked: noteBlocked,
    ...o.engine,
  });
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
  let firstReady = true;
  connection.on('ready', () => {
    if (firstReady) {
      firstReady = false;
      return;
    }
    logger.info('redis is back; registering the schedules again');
    registerSchedules(queues.write, settings)
      .then(() => queues.write.setGlobalConcurrency(1))
      .catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'could not register the schedules'));
  });

  const processJob = async (job: Job, token?: string): Promise<unknown> => {
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
  // A job's lock is renewed at half its duration while its worker lives; once a dead worker's lock
  // lapses, the next stalled-job check hands the job to another worker: both within the takeover.
  const lockDuration = Math.round((settings.takeoverMs * 2) / 3);
  const stalledInterval = settings.takeoverMs - lockDuration;
  const common = { connection, prefix, lockDuration, stalledInterval, maxStalledCount: 10 };
  const writer = new Worker(WRITE_QUEUE, processJob, { ...common, concurrency: 1 });
  const fetcher = new Worker(FETCH_QUEUE, processJob, { ...common, concurrency: settings.fetchConcurrency });
  for (const w of [writer, fetcher]) {
    w.on('failed', (job, err) => {
      const fields = { job: job?.name, jobId: job?.id, err: err.message };
      // A job that ended because this worker is stopping has not failed: its next attempt resumes it.
      if (shutdown.signal.aborted) logger.info(fields, 'job stopped by the shutdown; another attempt takes it up');
      else logger.warn(fields, 'job failed');
    });
    w.on('error', redisError);
  }
  const metrics = createMetrics({ queues, redis: connection, prefix, api: engine.deps.api });
  writer.on('completed', (job, result) => metrics.recordJob(job.name, result));
  const dashboard = o.dashboard ? await startDashboard({ ...o.dashboard, queues, metrics, logger }) : null;
  logger.info({ prefix, schedules: settings.schedules, fetchConcurrency: settings.fetchConcurrency }, 'worker started');

  let closing: Promise<void> | null = null;
  return {
    queues,
    dashboardUrl: dashboard?.url ?? null,
    close() {
      closing ??= (async () => {
        // Work in flight gets most of the grace; what is left is for handing it back and closing,
        // each step bounded, so that a Redis that does not answer cannot hold the stop.
        const started = Date.now();
        const reserve = Math.min(3000, settings.graceMs * 0.3);
        const left = () => Math.max(0, settings.graceMs - reserve - (Date.now() - started));
        logger.info({ graceMs: settings.graceMs }, 'worker stopping');
        shutdown.abort(new Error('the worker is shutting down'));
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
      })();
      return closing;
    },
  };
}

/** Resolves once the connection is ready; rejects when `signal` aborts first. */
function untilReady(connection: Redis, signal: AbortSignal | undefined): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      connection.off('ready', ready);
      signal?.removeEventListener('abort', stopped);
    };
    const ready = () => {
      done();
      resolve();
    };
    const stopped = () => {
      done();
      reject(signal?.reason ?? new Error('stopped'));
    };
    if (signal?.aborted) return stopped();
    connection.on('ready', ready);
    signal?.addEventListener('abort', stopped, { once: true });
  });
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

const CONNECTION_ERROR = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection is closed/;

/**
 * One warning when Redis goes away (and a reminder a minute), one line when it is back: a
 * reconnect every few hundred milliseconds, from each of the connections BullMQ holds, is not news
 * each time. Returns the handler for every other emitter of Redis errors; what is not a lost
 * connection is logged as it comes.
 */
function watchRedis(connections: Redis[], logger: Logger): (e: Error) => void {
  let down: number | null = null;
  let lastNote = 0;
  const onError = (e: Error) => {
    if (!CONNECTION_ERROR.test(e.message)) {
      logger.warn({ err: e.message }, 'worker error');
      return;
    }
    const now = Date.now();
    if (down === null) down = now;
    if (now - lastNote < 60_000) return;
    lastNote = now;
    logger.warn(
      { err: e.message, downForS: Math.round((now - down) / 1000) },
      'redis is unreachable; reconnecting (stop with SIGTERM or Ctrl-C at any time)',
    );
  };
  for (const c of connections) {
    c.on('error', onError);
    c.on('ready', () => {
      if (down === null) return;
      logger.info({ downForS: Math.round((Date.now() - down) / 1000) }, 'redis is reachable again');
      down = null;
      lastNote = 0;
    });
  }
  return onError;
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
