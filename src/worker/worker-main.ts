import { hostname } from 'node:os';
import { FlowProducer, Queue, QueueEvents, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { RedisBudgetStore } from '../budget/budget-redis-store.ts';
import { ConfigError } from '../config/config-error.ts';
import type { RunsyncConfig } from '../config/config-env.ts';
import { createEngine, type EngineOptions } from '../sync/sync-setup.ts';
import type { Logger } from '../util/logger.ts';
import type { WarehouseLockedError } from '../warehouse/warehouse-errors.ts';
import { FETCH_QUEUE, PayloadCheckError, WRITE_QUEUE, type JobContext, type WorkerQueues } from './job-context.ts';
import { jobDefinition } from './job-registry.ts';
import { RemoteDetails } from './remote-details.ts';
import { StagingStore } from './staging-store.ts';
import { startDashboard } from './worker-dashboard.ts';
import { createMetrics } from './worker-metrics.ts';
import type { WorkerSettings } from './worker-config.ts';

// `runsync worker`: the BullMQ workers of one process (the writer, one job at a time across the
// fleet, and the detail fetchers), the shared rate budget in Redis, and the job schedulers,
// registered at every start (upsert: several workers starting together make one schedule) and
// again whenever Redis comes back, in case it came back empty.

export interface WorkerOptions {
  config: RunsyncConfig;
  settings: WorkerSettings;
  logger: Logger;
  /** Tests pass a clock and short retry delays. */
  engine?: Partial<EngineOptions>;
  /** Serve Bull Board and /metrics here. */
  dashboard?: { port: number; host: string };
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
  const jobOpts = { attempts: 5, backoff: { type: 'exponential', delay: 5_000 }, removeOnComplete: { count: 200 }, removeOnFail: { count: 200 } };
  const wanted = {
    'runs-pass': settings.schedules.runs && { pattern: settings.schedules.runs, name: 'runs-pass', data: {} },
    'catalog-snapshot': settings.schedules.catalog && { pattern: settings.schedules.catalog, name: 'catalog-snapshot', data: {} },
    reconcile: settings.schedules.reconcile && { pattern: settings.schedules.reconcile, name: 'runs-pass', data: { reconcile: true } },
  };
  for (const id of SCHEDULES) {
    const w = wanted[id];
    if (w) await queue.upsertJobScheduler(id, { pattern: w.pattern, tz: 'UTC' }, { name: w.name, data: w.data, opts: jobOpts });
    else await queue.removeJobScheduler(id);
  }
}

export async function startWorker(o: WorkerOptions): Promise<WorkerHandle> {
  const { config, settings, logger } = o;
  if (config.redisUrl === null) throw new ConfigError('REDIS_URL', 'is not set; the worker keeps its queues and shared rate budget in Redis');
  const prefix = settings.prefix;
  const connection = redisConnection(config.redisUrl);
  const budgetRedis = redisConnection(config.redisUrl);
  const eventsRedis = redisConnection(config.redisUrl);
  for (const c of [connection, budgetRedis, eventsRedis]) c.on('error', (e: Error) => logger.warn({ err: e.message }, 'redis connection error; reconnecting'));
  const shutdown = new AbortController();
  const staging = new StagingStore(settings.stagingDir);
  const queues: WorkerQueues = {
    write: new Queue(WRITE_QUEUE, { connection, prefix }),
    fetch: new Queue(FETCH_QUEUE, { connection, prefix }),
    fetchEvents: new QueueEvents(FETCH_QUEUE, { connection: eventsRedis, prefix }),
    flows: new FlowProducer({ connection, prefix }),
  };
  // The writer waits on many fetch jobs at once, each wait a listener on these.
  for (const emitter of [queues.fetch, queues.fetchEvents]) emitter.setMaxListeners(1000);
  const noteBlocked = (e: WarehouseLockedError) => {
    const info = JSON.stringify({ holderPid: e.holderPid, holder: e.holder, waiting: `${hostname()}:${process.pid}`, since: Date.now() });
    connection.set(`${prefix}:${BLOCKED_KEY}`, info, 'PX', 30_000).catch(() => undefined);
  };
  const engine = createEngine(config, {
    logger,
    signal: shutdown.signal,
    store: new RedisBudgetStore({ redis: budgetRedis, key: `${prefix}:budget` }),
    onLocked: noteBlocked,
    ...o.engine,
  });
  engine.deps.details = (signal) =>
    new RemoteDetails({ queue: queues.fetch, events: queues.fetchEvents, staging, reports: engine.deps.reports, signal, chunk: settings.fetchChunk });

  await queues.write.setGlobalConcurrency(1);
  await registerSchedules(queues.write, settings);
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
    const def = jobDefinition(job.name);
    if (!def) throw new UnrecoverableError(`no job is named ${JSON.stringify(job.name)}`);
    const jobLogger = logger.child({ job: job.name, jobId: job.id });
    const ctx: JobContext = {
      deps: { ...engine.deps, logger: jobLogger, signal: shutdown.signal },
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
    }
  };
  const common = { connection, prefix, lockDuration: 60_000, stalledInterval: 15_000, maxStalledCount: 10 };
  const writer = new Worker(WRITE_QUEUE, processJob, { ...common, concurrency: 1 });
  const fetcher = new Worker(FETCH_QUEUE, processJob, { ...common, concurrency: settings.fetchConcurrency });
  for (const w of [writer, fetcher]) {
    w.on('failed', (job, err) => logger.warn({ job: job?.name, jobId: job?.id, err: err.message }, 'job failed'));
    w.on('error', (err) => logger.warn({ err: err.message }, 'worker error'));
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
        logger.info({ graceMs: settings.graceMs }, 'worker stopping');
        shutdown.abort(new Error('the worker is shutting down'));
        const graceful = Promise.all([writer.close(), fetcher.close()]);
        const timedOut = await Promise.race([graceful.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), settings.graceMs).unref())]);
        if (timedOut) {
          logger.warn('work still in flight after the grace period; leaving it to other workers');
          await Promise.all([writer.close(true), fetcher.close(true)]);
        }
        await dashboard?.close();
        await Promise.allSettled([queues.fetchEvents.close(), queues.flows.close(), queues.write.close(), queues.fetch.close()]);
        await engine.close();
        for (const c of [connection, budgetRedis, eventsRedis]) c.disconnect();
        logger.info('worker stopped');
      })();
      return closing;
    },
  };
}
