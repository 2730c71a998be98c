import { FETCH_QUEUE, type JobRegistry, WRITE_QUEUE } from '../src/worker/job-context.ts';
import backfill from './backfill.ts';
import backfillSlice from './backfill-slice.ts';
import catalogSnapshot from './catalog-snapshot.ts';
import exportParquet from './export-parquet.ts';
import fetchDetails from './fetch-details.ts';
import runsPass from './runs-pass.ts';

// Every job the worker knows, by name (the file name in this folder), with the queue it runs on.
// Jobs that write the warehouse share the write queue, which runs one job at a time across all
// workers; detail fetches run anywhere, many at once. `runsync worker` hands this map to the worker.

export const JOBS = {
  'runs-pass': { queue: WRITE_QUEUE, process: runsPass },
  'catalog-snapshot': { queue: WRITE_QUEUE, process: catalogSnapshot },
  'export-parquet': { queue: WRITE_QUEUE, process: exportParquet },
  'backfill-slice': { queue: WRITE_QUEUE, process: backfillSlice },
  backfill: { queue: WRITE_QUEUE, process: backfill },
  'fetch-details': { queue: FETCH_QUEUE, process: fetchDetails },
} as const satisfies JobRegistry;
