import backfill from '../../jobs/backfill.ts';
import backfillSlice from '../../jobs/backfill-slice.ts';
import catalogSnapshot from '../../jobs/catalog-snapshot.ts';
import exportParquet from '../../jobs/export-parquet.ts';
import fetchDetails from '../../jobs/fetch-details.ts';
import runsPass from '../../jobs/runs-pass.ts';
import { FETCH_QUEUE, WRITE_QUEUE, type JobProcessor } from './job-context.ts';

// Every job the worker knows, by name (the file name in jobs/), with the queue it runs on. Jobs
// that write the warehouse share the write queue, which runs one job at a time across all
// workers; detail fetches run anywhere, many at once.

export interface JobDefinition {
  queue: typeof WRITE_QUEUE | typeof FETCH_QUEUE;
  process: JobProcessor;
}

export const JOBS = {
  'runs-pass': { queue: WRITE_QUEUE, process: runsPass },
  'catalog-snapshot': { queue: WRITE_QUEUE, process: catalogSnapshot },
  'export-parquet': { queue: WRITE_QUEUE, process: exportParquet },
  'backfill-slice': { queue: WRITE_QUEUE, process: backfillSlice },
  backfill: { queue: WRITE_QUEUE, process: backfill },
  'fetch-details': { queue: FETCH_QUEUE, process: fetchDetails },
} as const satisfies Record<string, JobDefinition>;

export type JobName = keyof typeof JOBS;

export function jobDefinition(name: string): JobDefinition | null {
  return Object.hasOwn(JOBS, name) ? JOBS[name as JobName] : null;
}
