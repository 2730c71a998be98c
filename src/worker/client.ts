import { FlowProducer, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { FETCH_QUEUE, WRITE_QUEUE } from './job-context.ts';
import { BLOCKED_KEY, redisConnection } from './main.ts';

// The queues as the CLI sees them without running workers: to enqueue a backfill, to wait for it,
// and to report queue depths and a blocked writer in `runsync status`.

export interface QueueClient {
  write: Queue;
  fetch: Queue;
  flows: FlowProducer;
  redis: Redis;
  prefix: string;
  close(): Promise<void>;
}

export function openQueueClient(redisUrl: string, prefix: string): QueueClient {
  const redis = redisConnection(redisUrl);
  const write = new Queue(WRITE_QUEUE, { connection: redis, prefix });
  const fetch = new Queue(FETCH_QUEUE, { connection: redis, prefix });
  const flows = new FlowProducer({ connection: redis, prefix });
  return {
    write,
    fetch,
    flows,
    redis,
    prefix,
    async close() {
      await Promise.allSettled([write.close(), fetch.close(), flows.close()]);
      redis.disconnect();
    },
  };
}

export interface QueueReport {
  write: Record<string, number>;
  fetch: Record<string, number>;
  schedules: { id: string; pattern: string | null; next: number | null }[];
  /** A load waiting for a warehouse someone else holds. */
  blocked: { holderPid: number | null; holder: string | null; waiting: string; since: number } | null;
  /** Worker processes connected to these queues; null when Redis does not say (CLIENT LIST refused). */
  workers: number | null;
}

/** The worker processes connected to the write queue (every worker has one); null: Redis would not say. */
export async function connectedWorkers(c: Pick<QueueClient, 'write'>): Promise<number | null> {
  return c.write.getWorkersCount().catch(() => null);
}

export async function queueReport(c: QueueClient): Promise<QueueReport> {
  const kinds = ['waiting', 'active', 'delayed', 'failed', 'completed', 'waiting-children', 'prioritized'] as const;
  const write = await c.write.getJobCounts(...kinds);
  const fetch = await c.fetch.getJobCounts(...kinds);
  const schedulers = await c.write.getJobSchedulers(0, 20, true);
  const blockedRaw = await c.redis.get(`${c.prefix}:${BLOCKED_KEY}`);
  return {
    write,
    fetch,
    schedules: schedulers.map((s) => ({ id: s.key, pattern: s.pattern ?? null, next: s.next ?? null })),
    blocked: blockedRaw ? (JSON.parse(blockedRaw) as QueueReport['blocked']) : null,
    workers: await connectedWorkers(c),
  };
}
