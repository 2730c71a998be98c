import { AuthError, InvalidRecordError, PermissionError } from '../src/api/index.ts';
import { type DetailBatch, DetailFetcher } from '../src/sync/detail-fetcher.ts';
import { type JobContext, objectPayload, PayloadCheckError } from '../src/worker/job-context.ts';
import { settleFailure } from '../src/worker/job-outcome.ts';
import {
  type FetchDetailsPayload,
  type FetchDetailsResult,
  fatalReason,
  UnrecoverableError,
} from '../src/worker/remote-details.ts';
import type { StagedBatch } from '../src/worker/staging-store.ts';

// Fetches the details of a few runs under the shared budget and leaves them in a staged file for
// the writer. Any worker runs it. A refused key or a missing scope fails the job for good (the
// writer waiting on it stops the pass); a run that could not be fetched is reported in the file. A
// job stopped by the worker's shutdown goes back to the queue without using up an attempt.

const MAX_IDS = 500;

export function checkPayload(payload: unknown): FetchDetailsPayload {
  const p = objectPayload(payload, 'fetch-details');
  const ids = p.ids;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_IDS ||
    !ids.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 200)
  ) {
    throw new PayloadCheckError(`fetch-details: ids must be 1 to ${MAX_IDS} run ids`);
  }
  return { ids: ids as string[] };
}

export default async function fetchDetails(payload: unknown, ctx: JobContext): Promise<FetchDetailsResult> {
  const { ids } = checkPayload(payload);
  // The process runs several fetch jobs at once: together they keep to what the process may have
  // in flight, so no request waits for a connection after its turn in the budget (and then starts
  // in a bunch).
  const shares = ctx.settings.fetchConcurrency;
  const perJob = Math.max(1, Math.floor(ctx.deps.settings.detailConcurrency / shares));
  const fetcher = new DetailFetcher(ctx.deps.api, perJob, ctx.signal, { shares });
  let results: DetailBatch['results'];
  try {
    results = (await fetcher.fetch(ids)).results;
  } catch (e) {
    if (e instanceof AuthError || e instanceof PermissionError) throw new UnrecoverableError(fatalReason(e));
    // Stopped by the worker's shutdown: handed back as it was, not failed.
    return settleFailure(ctx, e);
  } finally {
    fetcher.close();
  }
  const batch: StagedBatch = { details: [], invalid: [], failures: [] };
  for (const r of results) {
    if (r.ok) batch.details.push({ id: r.id, detail: r.detail });
    else {
      const e = r.error;
      if (e instanceof InvalidRecordError) {
        const { endpoint, recordId, requestId, problems, record } = e;
        batch.invalid.push({ endpoint, recordId, requestId, problems: [...problems], record });
      }
      batch.failures.push({
        id: r.id,
        kind: e.name,
        detail: e.message,
        endpoint: e.endpoint,
        status: e.status,
        code: e.code,
        requestId: e.requestId,
      });
    }
  }
  const file = await ctx.staging.write(`details-${ctx.job.id ?? Date.now()}`, batch);
  return { file, ok: batch.details.length, failed: batch.failures.length };
}
