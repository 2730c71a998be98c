import { type PassResult, runPass } from '../src/sync/pass.ts';
import type { JobContext } from '../src/worker/job-context.ts';
import { settleFailure } from '../src/worker/job-outcome.ts';
import { keepFreshness } from '../src/worker/metrics.ts';

// The scheduled catalog snapshot (RUNSYNC_SCHEDULE_CATALOG): every catalog collection and the run
// tool options, with history, then the Parquet export of what changed.

export default async function catalogSnapshot(
  _payload: unknown,
  ctx: JobContext,
): Promise<Pick<PassResult, 'id' | 'kind' | 'status' | 'errors'>> {
  try {
    const r = await runPass(ctx.deps, { kind: 'snapshot' });
    await keepFreshness(ctx.redis, ctx.settings.prefix, r.freshness).catch(() => undefined);
    return { id: r.id, kind: r.kind, status: r.status, errors: r.errors };
  } catch (e) {
    return settleFailure(ctx, e);
  }
}
