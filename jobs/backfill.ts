import { exportParquet } from '../src/export/parquet.ts';
import { type JobContext, objectPayload } from '../src/worker/job-context.ts';

// The parent of a queued backfill's slices: it runs once every slice is loaded, writes the
// Parquet export of what they changed, and sums them up.

export default async function backfill(
  payload: unknown,
  ctx: JobContext,
): Promise<{ slices: number; listed: number; fetched: number; exportedDates: number }> {
  objectPayload(payload, 'backfill');
  const children = Object.values(await ctx.job.getChildrenValues()) as { runs?: { listed: number; fetched: number } }[];
  const e = await ctx.deps.gate.use((wh) => exportParquet(wh, { target: ctx.deps.parquet, lanes: 1 }));
  return {
    slices: children.length,
    listed: children.reduce((a, c) => a + (c.runs?.listed ?? 0), 0),
    fetched: children.reduce((a, c) => a + (c.runs?.fetched ?? 0), 0),
    exportedDates: e.dates.length,
  };
}
