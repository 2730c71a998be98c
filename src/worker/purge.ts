import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { FETCH_QUEUE, WRITE_QUEUE } from './job-context.ts';
import { BLOCKED_KEY } from './main.ts';
import { FRESHNESS_KEY, PASS_KEY } from './metrics.ts';

// What a deployment keeps in Redis, all of it under its queue prefix (RUNSYNC_QUEUE_PREFIX): the
// write and fetch queues with their jobs, the job schedulers, the shared rate budget and the
// worker's markers. `runsync purge` lists it, then removes it. A prefix holds letters, digits,
// dots, dashes and underscores only, so `<prefix>:*` matches no key of another prefix.

export interface QueueInventory {
  name: string;
  /** Jobs by state. */
  jobs: Record<string, number>;
}

export interface PrefixInventory {
  prefix: string;
  queues: QueueInventory[];
  /** The job schedulers: id and pattern. */
  schedules: { id: string; pattern: string | null }[];
  /** Whether the shared rate budget's state is there. */
  budget: boolean;
  /** runsync's own markers: the last pass, the lags kept for /metrics, a blocked writer. */
  markers: string[];
  /** Every key under the prefix. */
  keys: number;
  /** Worker processes connected to the queues; null: Redis would not say. */
  workers: number | null;
}

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;

async function* keysOf(redis: Redis, prefix: string, under = ''): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:${under}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) yield keys;
  } while (cursor !== '0');
}

async function anyKey(redis: Redis, prefix: string, under: string): Promise<boolean> {
  for await (const _ of keysOf(redis, prefix, under)) return true;
  return false;
}

export async function countKeys(redis: Redis, prefix: string): Promise<number> {
  let n = 0;
  for await (const keys of keysOf(redis, prefix)) n += keys.length;
  return n;
}

/**
 * What is under the prefix. Only queues that have keys are opened: opening a queue writes its
 * `meta` key, and a look must not add to what it lists.
 */
export async function inventory(redis: Redis, prefix: string): Promise<PrefixInventory> {
  const names = [];
  for (const name of [WRITE_QUEUE, FETCH_QUEUE]) if (await anyKey(redis, prefix, `${name}:`)) names.push(name);
  const opened = names.map((name) => new Queue(name, { connection: redis, prefix }));
  try {
    const queues: QueueInventory[] = [];
    let workers: number | null = 0;
    let schedules: PrefixInventory['schedules'] = [];
    for (const q of opened) {
      const counts = await q.getJobCounts(...STATES);
      queues.push({ name: q.name, jobs: Object.fromEntries(Object.entries(counts).filter(([, v]) => v > 0)) });
      const connected = await q.getWorkersCount().catch(() => null);
      workers = workers === null || connected === null ? null : Math.max(workers, connected);
      if (q.name === WRITE_QUEUE)
        schedules = (await q.getJobSchedulers(0, -1, true)).map((s) => ({ id: s.key, pattern: s.pattern ?? null }));
    }
    const markers: string[] = [];
    for (const m of [PASS_KEY, FRESHNESS_KEY, BLOCKED_KEY]) if (await redis.exists(`${prefix}:${m}`)) markers.push(m);
    return {
      prefix,
      queues,
      schedules,
      budget: (await redis.exists(`${prefix}:budget`)) === 1,
      markers,
      keys: await countKeys(redis, prefix),
      workers,
    };
  } finally {
    await Promise.allSettled(opened.map((q) => q.close()));
  }
}

/** The inventory as lines for a person: what will go. */
export function inventoryLines(inv: PrefixInventory, where: string): string[] {
  const jobs = (j: Record<string, number>) =>
    Object.entries(j)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ') || 'no jobs';
  const lines = [`runsync purge: under the prefix "${inv.prefix}" in ${where}, ${inv.keys} key(s):`];
  for (const q of inv.queues) lines.push(`  queue ${q.name.padEnd(8)} ${jobs(q.jobs)}`);
  const schedules = inv.schedules.map((s) => `${s.id} "${s.pattern ?? ''}"`).join(', ');
  lines.push(`  schedules      ${schedules || 'none'}`);
  lines.push(`  rate budget    ${inv.budget ? "the key's shared budget state" : 'none'}`);
  if (inv.markers.length) lines.push(`  markers        ${inv.markers.join(', ')}`);
  return lines;
}

/** Removes every key under the prefix; returns how many were removed. */
export async function removePrefix(redis: Redis, prefix: string): Promise<number> {
  let removed = 0;
  // A second round finds what a scan that ran beside a deletion passed over.
  for (let round = 0; round < 3; round++) {
    let found = 0;
    for await (const keys of keysOf(redis, prefix)) {
      found += keys.length;
      removed += await redis.unlink(...keys);
    }
    if (found === 0) break;
  }
  return removed;
}
