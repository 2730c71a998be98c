import { type PassResult, runPass } from '../src/sync/pass.ts';
import { flagPayload, type JobContext } from '../src/worker/job-context.ts';
import { settleFailure } from '../src/worker/job-outcome.ts';
import { keyShare } from '../src/worker/key-share.ts';
import { keepFreshness, type LastPass, PASS_KEY } from '../src/worker/metrics.ts';

// The scheduled runs pass (RUNSYNC_SCHEDULE_RUNS; with `reconcile`, RUNSYNC_SCHEDULE_RECONCILE):
// the live window, the open runs, the details that failed before, then the Parquet export. Details
// are fetched by the whole fleet; this job, the only writer at a time, loads them as they arrive.
// The catalog has its own schedule.

export interface RunsPassPayload {
  reconcile?: boolean;
}

export function checkPayload(payload: unknown): RunsPassPayload {
  return { reconcile: flagPayload(payload, 'runs-pass', 'reconcile') };
}

export default async function runsPass(
  payload: unknown,
  ctx: JobContext,
): Promise<Pick<PassResult, 'id' | 'kind' | 'status' | 'runs' | 'errors'>> {
  const { reconcile } = checkPayload(payload);
  await ctx.staging.sweep(6 * 3600_000);
  try {
    const r = await runPass(ctx.deps, { reconcile: reconcile === true, catalog: false });
    // For /metrics of every worker: how far behind the API the warehouse is.
    const last: LastPass = {
      kind: r.kind,
      status: r.status,
      finishedAtMs: Date.now(),
      watermarkMs: r.window ? r.window.to / 1000 : null,
      openRuns: r.openRunsTracked,
      freshness: r.freshness,
      // The share of what the key allowed over the pass, its burst counted (src/worker/key-share.ts).
      rateBudget: r.rateBudget && {
        ...r.rateBudget,
        usedShare: keyShare(r.rateBudget.buckets, r.requests.requests, r.durationMs / 1000),
      },
      horizonVerifiedSinceMs: r.rolling?.verifiedSince ? r.rolling.verifiedSince / 1000 : null,
    };
    await ctx.redis.set(`${ctx.settings.prefix}:${PASS_KEY}`, JSON.stringify(last)).catch(() => undefined);
    await keepFreshness(ctx.redis, ctx.settings.prefix, r.freshness).catch(() => undefined);
    return { id: r.id, kind: r.kind, status: r.status, runs: r.runs, errors: r.errors };
  } catch (e) {
    return settleFailure(ctx, e);
  }
}
