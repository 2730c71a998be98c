import { exportParquet } from '../src/export/parquet.ts';
import { type JobContext, objectPayload, PayloadCheckError } from '../src/worker/job-context.ts';

// The Parquet export of what changed since the last one (`full` rewrites everything).

export function checkPayload(payload: unknown): { full: boolean } {
  const p = objectPayload(payload ?? {}, 'export-parquet');
  if (p.full !== undefined && typeof p.full !== 'boolean')
    throw new PayloadCheckError('export-parquet: full must be true or false');
  return { full: p.full === true };
}

export default async function exportParquetJob(
  payload: unknown,
  ctx: JobContext,
): Promise<{ dates: number; tables: number; files: number }> {
  const { full } = checkPayload(payload);
  const r = await ctx.deps.gate.use((wh) => exportParquet(wh, { full, target: ctx.deps.parquet }));
  return { dates: r.dates.length, tables: r.tables.length, files: r.written.length };
}
