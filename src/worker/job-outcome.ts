import { DelayedError, UnrecoverableError } from 'bullmq';
import { AuthError } from '../api/index.ts';
import type { JobContext } from './job-context.ts';

// How a failed writer job ends in BullMQ: a refused key will not get better (unrecoverable, no
// retry); a job stopped by the worker's shutdown is handed back to the queue as it was, without
// using up an attempt (its progress is in the warehouse, the next worker resumes it); anything
// else is retried with backoff.

export async function settleFailure(ctx: JobContext, error: unknown): Promise<never> {
  const cause = (error as { cause?: unknown }).cause ?? error;
  if (cause instanceof AuthError) throw new UnrecoverableError((error as Error).message);
  if (ctx.signal.aborted) {
    await ctx.job.moveToDelayed(Date.now() + 1000, ctx.token);
    ctx.logger.info('handed the job back to the queue on shutdown; its progress is kept');
    throw new DelayedError();
  }
  throw error;
}
