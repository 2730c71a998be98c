import { FilterError, type RunSummary } from '../api/index.ts';
import { type Micros, parseTimestamp } from '../util/timestamp.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import type { Warehouse } from '../warehouse/types.ts';
import { detailSource } from './detail-fetcher.ts';
import { runPipeline } from './load-pipeline.ts';
import { commitRunItems, NO_DETAILS, type RunItem } from './run-commit.ts';
import { readSlice } from './slice.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// A run still in progress keeps changing: running, paused, waiting for approval, scheduled to
// resume, or with its resolution pending. Such runs are re-checked every pass until they settle,
// however old, up to the open-run horizon.
//
// The cheapest check the API allows is the runs list filtered by ticket id: one request answers
// for up to 200 tickets (up to 100 runs a page), bounded by the created times of the runs asked
// about. Only runs whose summary moved have their detail fetched. A tracked run the listing does
// not return (its ticket id cannot be used as a filter value, or it changed) is fetched by id.

export function isOpenRun(
  run: Pick<RunSummary, 'status' | 'approval' | 'scheduled_resume_at' | 'resolution'>,
): boolean {
  return (
    run.status === 'running' ||
    run.status === 'paused' ||
    run.approval?.waiting_for_approval === true ||
    (run.scheduled_resume_at !== null && run.scheduled_resume_at !== undefined) ||
    run.resolution?.type === 'pending'
  );
}

/** The same rule over the runs table. */
export const OPEN_RUN_SQL = `(status IN ('running', 'paused') OR approval_waiting_for_approval IS TRUE
  OR scheduled_resume_at IS NOT NULL OR resolution_type = 'pending')`;

export const TICKETS_PER_REQUEST = 200;
const MAX_TICKET_ID_LENGTH = 200;
const DETAILS_PER_ITEM = 100;

export interface OpenRun {
  id: string;
  ticketId: string | null;
  createdAt: Micros;
  updatedAt: Micros;
}

export async function openRuns(wh: Warehouse, from: Micros, before: Micros): Promise<OpenRun[]> {
  const rows = await wh.all<{ id: string; t: string | null; c: bigint; u: bigint }>(
    `SELECT id, ticket_id AS t, epoch_us(created_at) AS c, epoch_us(updated_at) AS u FROM runs
     WHERE ${OPEN_RUN_SQL} AND created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')}
     ORDER BY created_at, id`,
    [BigInt(from), BigInt(before)],
  );
  return rows.map((r) => ({ id: r.id, ticketId: r.t, createdAt: Number(r.c), updatedAt: Number(r.u) }));
}

export interface TicketBatch {
  tickets: string[];
  runs: Map<string, OpenRun>;
  createdFrom: Micros;
  /** Exclusive. */
  createdTo: Micros;
}

/** Open runs (oldest first) in batches of up to 200 distinct ticket ids, and those no filter can name. */
export function planTicketBatches(runs: readonly OpenRun[]): { batches: TicketBatch[]; byId: OpenRun[] } {
  const batches: TicketBatch[] = [];
  const byId: OpenRun[] = [];
  let current: TicketBatch | null = null;
  for (const run of runs) {
    const t = run.ticketId;
    if (t === null || t === '' || [...t].length > MAX_TICKET_ID_LENGTH) {
      byId.push(run);
      continue;
    }
    if (current === null || (!current.tickets.includes(t) && current.tickets.length >= TICKETS_PER_REQUEST)) {
      current = { tickets: [], runs: new Map(), createdFrom: run.createdAt, createdTo: run.createdAt + 1 };
      batches.push(current);
    }
    if (!current.tickets.includes(t)) current.tickets.push(t);
    current.runs.set(run.id, run);
    current.createdFrom = Math.min(current.createdFrom, run.createdAt);
    current.createdTo = Math.max(current.createdTo, run.createdAt + 1);
  }
  return { batches, byId };
}

/** Re-checks the open runs created in [from, before); `before` is where this pass's window began. */
export async function refreshOpenRuns(
  deps: SyncDeps,
  from: Micros,
  before: Micros,
  counts: RunCounts,
): Promise<number> {
  if (before <= from) return 0;
  const open = await deps.gate.use((wh) => openRuns(wh, from, before));
  if (open.length === 0) return 0;
  const { batches, byId } = planTicketBatches(open);
  const fetcher = detailSource(deps);
  try {
    await runPipeline<RunItem>(
      async (push, signal) => {
        const direct = [...byId];
        for (const batch of batches) {
          const seen = new Set<string>();
          try {
            // A refused cursor lists the batch again (narrower if it keeps happening); `seen` keeps
            // a run listed twice from being judged twice.
            const pages = readSlice(
              deps,
              { from: batch.createdFrom, to: batch.createdTo },
              { part: 0, cursor: null },
              { filter: { ticketId: batch.tickets }, counts, signal, logFields: { openRuns: batch.runs.size } },
            );
            for await (const { page } of pages) {
              const fetch: string[] = [];
              const listed = new Map<string, string | null>();
              let unchanged = 0;
              for (const s of page.items) {
                const run = batch.runs.get(s.id);
                if (!run || seen.has(s.id)) continue;
                seen.add(s.id);
                const at = parseTimestamp(s.updated_at);
                if (at !== null && at <= run.updatedAt) {
                  unchanged++;
                  continue;
                }
                fetch.push(s.id);
                listed.set(s.id, s.updated_at);
              }
              await push({
                ready: fetch.length ? fetcher.fetch(fetch) : NO_DETAILS,
                listed,
                refused: page.refused,
                counts: { pages: 1, listed: page.received, changed: fetch.length, unchanged },
              });
            }
          } catch (e) {
            if (!(e instanceof FilterError)) throw e;
            deps.logger.warn(
              { parameter: e.parameter, error: e.message },
              'open runs the ticket filter cannot name are checked one by one',
            );
          }
          for (const run of batch.runs.values()) if (!seen.has(run.id)) direct.push(run);
        }
        for (let i = 0; i < direct.length; i += DETAILS_PER_ITEM) {
          const ids = direct.slice(i, i + DETAILS_PER_ITEM).map((r) => r.id);
          await push({
            ready: fetcher.fetch(ids),
            listed: new Map(ids.map((id) => [id, null])),
            counts: { changed: ids.length },
          });
        }
      },
      (items) => commitRunItems(deps, items, counts),
      { ahead: deps.settings.bufferedPages, signal: deps.signal },
    );
  } finally {
    fetcher.close();
  }
  return open.length;
}

/** Keeps _sync_open_runs equal to the open runs inside the horizon, for status and metrics. */
export async function recordOpenRuns(wh: Warehouse, horizonStart: Micros, checkedAt: Micros): Promise<number> {
  return wh.transaction(async (tx) => {
    await tx.run(`DELETE FROM _sync_open_runs`);
    await tx.run(
      `INSERT INTO _sync_open_runs
       SELECT id, created_at, updated_at,
         CASE WHEN status IN ('running', 'paused') THEN status
              WHEN approval_waiting_for_approval IS TRUE THEN 'waiting_for_approval'
              WHEN scheduled_resume_at IS NOT NULL THEN 'scheduled_to_resume'
              ELSE 'resolution_pending' END,
         ${US_TO_TSTZ('$2')}
       FROM runs WHERE ${OPEN_RUN_SQL} AND created_at >= ${US_TO_TSTZ('$1')}`,
      [BigInt(horizonStart), BigInt(checkedAt)],
    );
    const [r] = await tx.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_open_runs`);
    return Number(r?.n ?? 0);
  });
}
