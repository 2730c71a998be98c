import { exportParquet } from '../src/export/parquet.ts';
import { flagPayload, type JobContext } from '../src/worker/job-context.ts';

// The Parquet export of what changed since the last one (`full` rewrites everything).

export function checkPayload(payload: unknown): { full: boolean } {
  return { full: flagPayload(payload, 'export-parquet', 'full') };
}

export default async function exportParquetJob(
  payload: unknown,
  ctx: JobContext,
): Promise<{ dates: number; tables: number; files: number }> {
  const { full } = checkPayload(payload);
  const r = await ctx.deps.gate.use((wh) => exportParquet(wh, { full, target: ctx.deps.parquet, lanes: 1 }));
  return { dates: r.dates.length, tables: r.tables.length, files: r.written.length };
}
