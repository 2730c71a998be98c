import type { Queue } from 'bullmq';
import { type BackfillSpec, backfillKey } from '../sync/backfill.ts';
import { slices } from '../sync/window.ts';
import type { WorkerQueues } from './job-context.ts';

// A queued backfill is a BullMQ flow: a `backfill` parent with one `backfill-slice` child per
// slice, all on the write queue. Its job id is the backfill's key, so enqueueing the same backfill
// twice adds nothing while it is pending; once it has finished, enqueueing it again replays it.

export interface EnqueuedBackfill {
  key: string;
  slices: number;
  /** It was already queued and not finished: nothing was added. */
  existing: boolean;
}

export interface BackfillProgress {
  key: string;
  state: string;
  done: number;
  failed: number;
  total: number;
  result: unknown;
  failedReason: string | null;
}

const SLICE_OPTS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 5_000 },
  failParentOnFailure: true,
  removeOnComplete: { age: 7 * 24 * 3600 },
} as const;

export async function enqueueBackfill(
  queues: Pick<WorkerQueues, 'write' | 'flows'>,
  spec: BackfillSpec,
): Promise<EnqueuedBackfill> {
  const key = backfillKey(spec);
  const parts = slices({ from: spec.from, to: spec.to }, spec.sliceMicros);
  const existing = await queues.write.getJob(key);
  if (existing) {
    const state = await existing.getState();
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown')
      return { key, slices: parts.length, existing: true };
    await existing.remove({ removeChildren: true }).catch(() => undefined);
  }
  await queues.flows.add({
    name: 'backfill',
    queueName: queues.write.name,
    data: { key, spec },
    opts: { jobId: key, removeOnComplete: { age: 7 * 24 * 3600 }, removeOnFail: { age: 7 * 24 * 3600 } },
    children: parts.map((s, index) => ({
      name: 'backfill-slice',
      queueName: queues.write.name,
      data: { key, index, spec: { ...spec, from: s.from, to: s.to, sliceMicros: s.to - s.from } },
      opts: { ...SLICE_OPTS, jobId: `${key}.${index}` },
    })),
  });
  return { key, slices: parts.length, existing: false };
}

export async function backfillProgress(queue: Queue, key: string): Promise<BackfillProgress | null> {
  const job = await queue.getJob(key);
  if (!job) return null;
  const state = await job.getState();
  const counts = await job.getDependenciesCount();
  const done = counts.processed ?? 0;
  const failed = counts.failed ?? 0;
  const total = done + failed + (counts.unprocessed ?? 0) + (counts.ignored ?? 0);
  return {
    key,
    state,
    done: state === 'completed' ? total : done,
    failed,
    total,
    result: job.returnvalue ?? null,
    failedReason: job.failedReason ?? null,
  };
}

/** The queued backfills, newest first. */
export async function listBackfills(queue: Queue, limit = 10): Promise<BackfillProgress[]> {
  const jobs = await queue.getJobs(['waiting-children', 'waiting', 'active', 'delayed', 'completed', 'failed'], 0, 200);
  const parents = jobs
    .filter((j) => j?.name === 'backfill')
    .sort((a, b) => b.timestamp - a.timestamp)
    .slice(0, limit);
  const out: BackfillProgress[] = [];
  for (const p of parents) {
    const progress = await backfillProgress(queue, p.id as string);
    if (progress) out.push(progress);
  }
  return out;
}
