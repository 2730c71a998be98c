import { type BackfillSpec, runBackfill } from '../src/sync/backfill.ts';
import type { RunCounts } from '../src/sync/types.ts';
import { type JobContext, objectPayload, PayloadCheckError } from '../src/worker/job-context.ts';
import { settleFailure } from '../src/worker/job-outcome.ts';

// One slice of a queued backfill (a child of its `backfill` flow): the slice's runs, listed with
// the backfill's filters, fetched by the fleet, loaded here. Resumable like any walk: a slice
// stopped half-way continues from its saved position when the job runs again.

export interface BackfillSlicePayload {
  key: string;
  index: number;
  spec: BackfillSpec;
}

export function checkPayload(payload: unknown): BackfillSlicePayload {
  const p = objectPayload(payload, 'backfill-slice');
  const spec = objectPayload(p.spec, 'backfill-slice spec');
  const num = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v);
  if (
    typeof p.key !== 'string' ||
    !num(p.index) ||
    !num(spec.from) ||
    !num(spec.to) ||
    !num(spec.sliceMicros) ||
    typeof spec.force !== 'boolean'
  ) {
    throw new PayloadCheckError(
      'backfill-slice: expected { key, index, spec: { from, to, sliceMicros, force, filter } }',
    );
  }
  objectPayload(spec.filter, 'backfill-slice filter');
  return p as unknown as BackfillSlicePayload;
}

export default async function backfillSlice(
  payload: unknown,
  ctx: JobContext,
): Promise<{ index: number; runs: RunCounts }> {
  const { index, spec } = checkPayload(payload);
  try {
    const r = await runBackfill(ctx.deps, spec, {
      export: false,
      onProgress: (state) =>
        void ctx.job.updateProgress({ listed: state.listed, fetched: state.fetched }).catch(() => undefined),
    });
    return { index, runs: r.runs };
  } catch (e) {
    return settleFailure(ctx, e);
  }
}
