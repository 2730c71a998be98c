import { listValue } from '@duckdb/node-api';
import { InvalidRecordError, type InvalidRecordReport } from '../api/index.ts';
import { parseTimestamp, type Micros } from '../util/timestamp.ts';
import { loadRunDetails } from '../warehouse/load-runs.ts';
import { insertRejected } from '../warehouse/load-rejected.ts';
import { toJsonText } from '../warehouse/json-text.ts';
import { US_TO_TSTZ } from '../warehouse/warehouse-sql.ts';
import type { SqlRunner } from '../warehouse/warehouse-types.ts';
import type { DetailBatch } from './detail-fetcher.ts';
import type { PipelineItem } from './load-pipeline.ts';
import { addRunCounts, type RunCounts, type SyncDeps } from './sync-types.ts';

// One commit of run work: the details that arrived, merged with their bookkeeping (checkpoints,
// watermarks) in one transaction. Details that could not be fetched go to _sync_pending_runs in
// that same transaction, so moving the checkpoint past their page never loses them; records the
// client refused go to _sync_rejected whole.

export interface RunItem extends PipelineItem {
  ready: Promise<DetailBatch>;
  /** The listed summary's updated_at of every run asked for, by id (null when unknown). */
  listed: ReadonlyMap<string, string | null>;
  counts: Partial<RunCounts>;
  bookkeeping?: (tx: SqlRunner) => Promise<void>;
}

export const NO_DETAILS: Promise<DetailBatch> = Promise.resolve({ results: [], release: () => Promise.resolve() });

export async function commitRunItems(deps: SyncDeps, items: readonly RunItem[], counts: RunCounts): Promise<void> {
  const details: unknown[] = [];
  const loaded: string[] = [];
  const failed: { id: string; listedAt: string | null; error: string }[] = [];
  const local: Partial<RunCounts> = { fetched: 0, pending: 0, rejected: 0 };
  for (const item of items) {
    addRunCounts(counts, item.counts);
    for (const r of (await item.ready).results) {
      if (r.ok) {
        details.push(r.detail);
        loaded.push(r.id);
      } else if (r.error instanceof InvalidRecordError) {
        // Reported by the client with its payload; fetching it again would give the same.
        loaded.push(r.id);
      } else {
        failed.push({ id: r.id, listedAt: item.listed.get(r.id) ?? null, error: r.error.message });
      }
    }
  }
  const reports = [...deps.reports.drain('runs.list'), ...deps.reports.drain('runs.get')];
  const fetchedAt = deps.now();
  const result = await deps.gate.use((wh) =>
    loadRunDetails(wh, details, {
      fetchedAt,
      bookkeeping: async (tx) => {
        await clearPending(tx, loaded);
        for (const f of failed) await markPending(tx, f.id, f.listedAt, f.error, fetchedAt);
        await keepReports(tx, reports, fetchedAt);
        for (const item of items) await item.bookkeeping?.(tx);
      },
    }),
  );
  for (const item of items) await (await item.ready).release();
  for (const f of failed) deps.logger.warn({ runId: f.id, error: f.error }, 'run detail not fetched; kept for the next pass');
  local.fetched = details.length;
  local.pending = failed.length;
  local.rejected = result.rejected.length + reports.length;
  addRunCounts(counts, { ...local, inserted: result.inserted, updated: result.updated, stale: result.stale, childRows: result.childRows });
}

async function clearPending(tx: SqlRunner, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.run(`DELETE FROM _sync_pending_runs WHERE run_id IN (SELECT unnest($1::VARCHAR[]))`, [listValue([...ids])]);
}

export async function markPending(tx: SqlRunner, id: string, listedAt: string | null, error: string, at: Micros): Promise<void> {
  const listed = listedAt === null ? null : parseTimestamp(listedAt);
  await tx.run(
    `INSERT INTO _sync_pending_runs VALUES ($1, ${US_TO_TSTZ('$2')}, 1, ${US_TO_TSTZ('$3')}, ${US_TO_TSTZ('$3')}, $4)
     ON CONFLICT (run_id) DO UPDATE SET
       listed_updated_at = greatest(excluded.listed_updated_at, _sync_pending_runs.listed_updated_at),
       attempts = _sync_pending_runs.attempts + 1,
       last_failed_at = excluded.last_failed_at,
       last_error = excluded.last_error`,
    [id, listed === null ? null : BigInt(listed), BigInt(at), error.slice(0, 2000)],
  );
}

/** Records the client refused, kept whole; a refused summary also puts its run on the pending list. */
async function keepReports(tx: SqlRunner, reports: readonly InvalidRecordReport[], at: Micros): Promise<void> {
  for (const r of reports) {
    const reason = `breaks the API schema: ${r.problems.slice(0, 5).join('; ')}`;
    await insertRejected(tx, r.endpoint, [{ id: r.recordId, reason }], [safeJson(r.record)], at);
    if (r.endpoint === 'runs.list' && r.recordId !== null) {
      await markPending(tx, r.recordId, null, 'its summary breaks the API schema; the detail is fetched on its own', at);
    }
  }
}

function safeJson(v: unknown): string {
  try {
    return toJsonText(v);
  } catch {
    return JSON.stringify(String(v));
  }
}

export function micros(text: string | null | undefined): Micros | null {
  return typeof text === 'string' ? parseTimestamp(text) : null;
}
