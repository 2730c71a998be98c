import { listValue } from '@duckdb/node-api';
import { InvalidRecordError, type InvalidRecordReport } from '../api/index.ts';
import { type Micros, parseTimestamp } from '../util/timestamp.ts';
import { safeJsonText, stringMember } from '../warehouse/json-text.ts';
import { insertRejected } from '../warehouse/load-rejected.ts';
import { loadRunDetails, type RunLoadResult } from '../warehouse/load-runs.ts';
import { isOutOfMemory, OUTSIZED_MEMORY_LIMIT } from '../warehouse/out-of-memory.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import type { DetailBatch } from './detail-fetcher.ts';
import type { PipelineItem } from './load-pipeline.ts';
import { loadSplitting } from './split-load.ts';
import { addRunCounts, type RunCounts, type SyncDeps } from './types.ts';

// One commit of run work: the details that arrived, merged with their bookkeeping (checkpoints,
// watermarks) in one transaction. Details that could not be fetched go to _sync_pending_runs in
// that same transaction, so moving the checkpoint past their page never loses them; records the
// client refused go to _sync_rejected whole.

export interface RunItem extends PipelineItem {
  ready: Promise<DetailBatch>;
  /** The listed summary's updated_at of every run asked for, by id (null when unknown). */
  listed: ReadonlyMap<string, string | null>;
  /** Summaries of the page that break their schema: kept whole, their runs fetched on their own. */
  refused?: readonly InvalidRecordReport[];
  counts: Partial<RunCounts>;
  bookkeeping?: (tx: SqlRunner) => Promise<void>;
}

export const NO_DETAILS: Promise<DetailBatch> = Promise.resolve({ results: [], release: () => Promise.resolve() });

/**
 * The room an item takes of the pages a pass holds ahead of its commits: one with details a
 * whole place, one without (a page that found nothing new) an eighth. On a large warehouse the
 * reconciliation's pages mostly find nothing, and each commit opens the file: many such pages to
 * a commit spare those opens, at little memory.
 */
export function itemWeight(item: RunItem): number {
  return item.ready === NO_DETAILS ? 1 / 8 : 1;
}

export async function commitRunItems(deps: SyncDeps, items: readonly RunItem[], counts: RunCounts): Promise<void> {
  const details: unknown[] = [];
  const loaded: string[] = [];
  const failed: { id: string; listedAt: string | null; error: string }[] = [];
  const reports: InvalidRecordReport[] = [];
  const stragglers: { id: string; listedAt: string | null }[] = [];
  const local: Partial<RunCounts> = { fetched: 0, pending: 0, rejected: 0 };
  for (const item of items) {
    addRunCounts(counts, item.counts);
    reports.push(...(item.refused ?? []));
    const batch = await item.ready;
    for (const id of batch.stragglers?.ids ?? []) stragglers.push({ id, listedAt: item.listed.get(id) ?? null });
    for (const r of batch.results) {
      if (r.ok) {
        details.push(r.detail);
        loaded.push(r.id);
      } else if (r.error instanceof InvalidRecordError) {
        // Kept whole with why; fetching it again would give the same.
        reports.push(invalidReport(r.error));
        loaded.push(r.id);
      } else {
        failed.push({ id: r.id, listedAt: item.listed.get(r.id) ?? null, error: r.error.message });
      }
    }
  }
  const fetchedAt = deps.now();
  const done = new Set(loaded);
  // Payloads the warehouse refuses stay on the pending list (loadDetails puts them there).
  const refused = new Set<string>();
  const result = await loadDetails(deps, details, fetchedAt, refused, async (tx) => {
    for (const f of stragglers)
      if (!done.has(f.id)) await markPending(tx, f.id, f.listedAt, STILL_FETCHING, fetchedAt, { failed: false });
    await clearPending(
      tx,
      loaded.filter((id) => !refused.has(id)),
    );
    for (const f of failed) await markPending(tx, f.id, f.listedAt, f.error, fetchedAt);
    await keepReports(tx, reports, fetchedAt);
    for (const item of items) await item.bookkeeping?.(tx);
  });
  deps.freshness?.runs.record(changedAt(details), deps.now());
  for (const item of items) await (await item.ready).release();
  for (const f of failed)
    deps.logger.warn({ runId: f.id, error: f.error }, 'run detail not fetched; kept for the next pass');
  for (const q of result.quarantined)
    deps.logger.warn(
      { runId: q.id, reasons: q.reasons },
      'the schema contract keeps this run out of a frozen table; in _sync_quarantine until it is widened and replayed',
    );
  local.fetched = details.length;
  local.pending = failed.length;
  local.rejected = result.rejected.length + reports.length;
  addRunCounts(counts, {
    ...local,
    inserted: result.inserted,
    updated: result.updated,
    stale: result.stale,
    childRows: result.childRows,
    quarantined: result.quarantined.length,
  });
}

function changedAt(details: readonly unknown[]): Micros[] {
  const out: Micros[] = [];
  for (const d of details) {
    const u = parseTimestamp(stringMember(d, 'updated_at') ?? '');
    if (u !== null) out.push(u);
  }
  return out;
}

/** DuckDB failing on what a batch holds (a payload too large for its memory), not on the warehouse. */
function heldByBatch(e: unknown): e is Error {
  return e instanceof Error && /^(Out of Memory Error|Invalid Input Error|Conversion Error)/.test(e.message);
}

/** Loads a batch, in parts if it must (split-load.ts). */
function loadDetails(
  deps: SyncDeps,
  details: readonly unknown[],
  fetchedAt: Micros,
  refused: Set<string>,
  bookkeeping: (tx: SqlRunner) => Promise<void>,
): Promise<RunLoadResult> {
  const none = async () => undefined;
  return loadSplitting(details, {
    load: (part, last, memoryLimit) =>
      deps.gate.use((wh) => loadRunDetails(wh, part, { fetchedAt, bookkeeping: last ? bookkeeping : none }), {
        keepLog: true,
        ...(memoryLimit ? { memoryLimit } : {}),
      }),
    refuse: async (detail, e, last) => {
      const id = stringMember(detail, 'id');
      const reason = `${UNLOADABLE}${e.message}`;
      const payload = JSON.stringify({ omitted: `payload of ${safeJsonText(detail).length} characters` });
      // Kept aside with why, and on the pending list: every later pass tries it again, and says so.
      if (id !== null) refused.add(id);
      const keep = async (tx: SqlRunner) => {
        await insertRejected(tx, 'runs.get', [{ id, reason, payload }], fetchedAt);
        if (id !== null) await markPending(tx, id, stringMember(detail, 'updated_at'), reason, fetchedAt);
        if (last) await bookkeeping(tx);
      };
      const r = await deps.gate.use((wh) => loadRunDetails(wh, [], { fetchedAt, bookkeeping: keep }));
      return { ...r, received: 1, rejected: [{ id, reason }] };
    },
    combine: (first, second) => ({
      ...second,
      received: first.received + second.received,
      inserted: first.inserted + second.inserted,
      updated: first.updated + second.updated,
      unchanged: first.unchanged + second.unchanged,
      stale: first.stale + second.stale,
      duplicates: first.duplicates + second.duplicates,
      rejected: [...first.rejected, ...second.rejected],
      quarantined: [...first.quarantined, ...second.quarantined],
      childRows: first.childRows + second.childRows,
      createdDates: [...new Set([...first.createdDates, ...second.createdDates])],
    }),
    heldByBatch,
    outOfMemory: isOutOfMemory,
    outsizedMemory: OUTSIZED_MEMORY_LIMIT,
    onHalves: (runs, e) =>
      deps.logger.warn(
        { runs, error: e.message },
        isOutOfMemory(e)
          ? 'a batch of run details did not fit in memory; loading it in halves'
          : 'DuckDB refused a batch of run details; loading it in halves to find the payload it refuses',
      ),
    onAlone: (detail, e) =>
      deps.logger.warn(
        { runId: stringMember(detail, 'id'), error: e.message },
        `a run detail too large for the usual memory; loading it alone with up to ${OUTSIZED_MEMORY_LIMIT}`,
      ),
    onRefused: (detail, e) =>
      deps.logger.error(
        { runId: stringMember(detail, 'id'), error: e.message },
        'a run detail could not be loaded; kept aside in _sync_rejected and tried again by the next pass',
      ),
  });
}

async function clearPending(tx: SqlRunner, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.run(`DELETE FROM _sync_pending_runs WHERE run_id IN (SELECT unnest($1::VARCHAR[]))`, [listValue([...ids])]);
}

/** How the pending list and _sync_rejected say that DuckDB refused a run's payload. */
export const UNLOADABLE = 'could not be loaded: ';

/** Why a run whose detail is still on its way is on the pending list meanwhile. */
const STILL_FETCHING = 'its detail was still on its way when its page was committed';

/**
 * Puts a run on the pending list. A failure counts an attempt; a detail still on its way
 * (`failed: false`) is only kept there until it comes, so a stop meanwhile loses nothing.
 */
export async function markPending(
  tx: SqlRunner,
  id: string,
  listedAt: string | null,
  error: string,
  at: Micros,
  o: { failed: boolean } = { failed: true },
): Promise<void> {
  const listed = listedAt === null ? null : parseTimestamp(listedAt);
  const attempt = o.failed ? 1 : 0;
  await tx.run(
    `INSERT INTO _sync_pending_runs VALUES ($1, ${US_TO_TSTZ('$2')}, $5, ${US_TO_TSTZ('$3')}, ${US_TO_TSTZ('$3')}, $4)
     ON CONFLICT (run_id) DO UPDATE SET
       listed_updated_at = greatest(excluded.listed_updated_at, _sync_pending_runs.listed_updated_at),
       attempts = _sync_pending_runs.attempts + $5,
       last_failed_at = excluded.last_failed_at,
       last_error = excluded.last_error`,
    [id, listed === null ? null : BigInt(listed), BigInt(at), error.slice(0, 2000), attempt],
  );
}

/** The follow-up of an item whose page went on without some details (detail-fetcher.ts). */
export function lateDetails(item: RunItem, value: unknown): RunItem | null {
  const late = (value as DetailBatch).stragglers;
  if (!late) return null;
  return {
    ready: late.rest,
    listed: new Map(late.ids.map((id) => [id, item.listed.get(id) ?? null])),
    counts: {},
  };
}

function invalidReport(e: InvalidRecordError): InvalidRecordReport {
  const endpoint = e.endpoint as InvalidRecordReport['endpoint'];
  return { endpoint, recordId: e.recordId, requestId: e.requestId, problems: e.problems, record: e.record };
}

/** Records the client refused, kept whole; a refused summary also puts its run on the pending list. */
async function keepReports(tx: SqlRunner, reports: readonly InvalidRecordReport[], at: Micros): Promise<void> {
  for (const r of reports) {
    const reason = `breaks the API schema: ${r.problems.slice(0, 5).join('; ')}`;
    await insertRejected(tx, r.endpoint, [{ id: r.recordId, reason, payload: safeJsonText(r.record) }], at);
    if (r.endpoint === 'runs.list' && r.recordId !== null) {
      await markPending(
        tx,
        r.recordId,
        null,
        'its summary breaks the API schema; the detail is fetched on its own',
        at,
      );
    }
  }
}

export function micros(text: string | null | undefined): Micros | null {
  return typeof text === 'string' ? parseTimestamp(text) : null;
}
