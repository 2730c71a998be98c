import type { FlowProducer, Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { SyncDeps } from '../sync/types.ts';
import type { Logger } from '../util/logger.ts';
import type { WorkerSettings } from './config.ts';
import type { StagingStore } from './staging-store.ts';

// What every job processor receives besides its payload. A processor is a plain async function
// `(payload, ctx)` that checks its payload first; the file name in jobs/ is the job name.

export const WRITE_QUEUE = 'write';
export const FETCH_QUEUE = 'fetch';

export interface WorkerQueues {
  /** Jobs that write the warehouse: one at a time across every worker (global concurrency 1). */
  write: Queue;
  /** Detail fetches: any worker, many at once. */
  fetch: Queue;
  fetchEvents: QueueEvents;
  flows: FlowProducer;
}

export interface JobContext {
  /** The sync engine's dependencies, with this job's logger and abort signal. */
  deps: SyncDeps;
  queues: WorkerQueues;
  staging: StagingStore;
  settings: WorkerSettings;
  redis: Redis;
  job: Job;
  /** The lock token of the job (for handing it back). */
  token: string | undefined;
  logger: Logger;
  signal: AbortSignal;
}

export type JobProcessor = (payload: unknown, ctx: JobContext) => Promise<unknown>;

export interface JobDefinition {
  queue: typeof WRITE_QUEUE | typeof FETCH_QUEUE;
  process: JobProcessor;
}

/** The jobs a worker runs, by name (jobs/index.ts). */
export type JobRegistry = Readonly<Record<string, JobDefinition>>;

/** A payload that is not what the job expects: the job fails at once, it will not get better. */
export class PayloadCheckError extends Error {
  override readonly name = 'PayloadCheckError';
}

export function objectPayload(payload: unknown, job: string): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new PayloadCheckError(`${job}: the payload must be an object`);
  }
  return payload as Record<string, unknown>;
}

/** The one flag a payload may carry, `name`: true or false, and false when it or the payload is missing. */
export function flagPayload(payload: unknown, job: string, name: string): boolean {
  const flag = objectPayload(payload ?? {}, job)[name];
  if (flag !== undefined && typeof flag !== 'boolean')
    throw new PayloadCheckError(`${job}: ${name} must be true or false`);
  return flag === true;
}
