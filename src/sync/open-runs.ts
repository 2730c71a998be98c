import { listValue } from '@duckdb/node-api';
import type { RunSummary } from '../api/index.ts';
import { MICROS_PER_SECOND, type Micros, parseTimestamp } from '../util/timestamp.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import type { Warehouse } from '../warehouse/types.ts';
import { detailSource } from './detail-fetcher.ts';
import { runPipeline } from './load-pipeline.ts';
import {
  addYield,
  type ListingYield,
  type OpenRunCheck,
  planOpenChecks,
  quietOf,
  runsPerRequestOf,
} from './open-due.ts';
import { changeRate, type HazardStats, observe } from './open-hazard.ts';
import { listTicketBatches, type OpenListing } from './open-list.ts';
import { commitRunItems, itemWeight, lateDetails, NO_DETAILS, type RunItem } from './run-commit.ts';
import { RUNS_PAGE_SIZE } from './slice.ts';
import { OPEN_HAZARD_KEY, OPEN_YIELD_KEY } from './state-keys.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// A run still in progress keeps changing: running, paused, waiting for approval, scheduled to
// resume, or with its resolution pending. Such runs are re-checked until they settle, however old,
// up to the open-run horizon: every pass, unless the open set is too large for the share of the
// key's rate its checks may use; then as they come due (open-due.ts).
//
// The cheapest check the API allows is the runs list filtered by ticket id: one request answers
// for up to 200 tickets (up to 100 runs a page), bounded by the created times of the runs asked
// about. The listing also asks for the state that keeps the runs open (running or paused, or a
// resolution pending), so a ticket's settled runs do not take the page's room: a run that left
// that state is not returned, which tells it changed. Only runs whose summary moved, or that the
// listing did not return (changed, or a ticket id that cannot be a filter value), have their
// detail fetched. Which runs are due, and how their looks share the key's rate: open-due.ts.

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

/** The same rule over the runs table, its columns named through `alias`. */
export function openRunSql(alias = 'runs'): string {
  const c = (name: string) => `${alias}.${name}`;
  // A run the API deleted is not checked again: a whole listing that shows it restores it.
  return `((${c('status')} IN ('running', 'paused') OR ${c('approval_waiting_for_approval')} IS TRUE
    OR ${c('scheduled_resume_at')} IS NOT NULL OR ${c('resolution_type')} = 'pending') AND ${c('deleted_at')} IS NULL)`;
}

/**
 * What kind of open run it is, for learning how often each kind changes: its status and each
 * reason it is open, e.g. `paused+approval` or `completed+pending`.
 */
function openKindSql(alias: string): string {
  const c = (name: string) => `${alias}.${name}`;
  return `concat_ws('+', coalesce(${c('status')}, 'none'),
    CASE WHEN ${c('approval_waiting_for_approval')} IS TRUE THEN 'approval' END,
    CASE WHEN ${c('scheduled_resume_at')} IS NOT NULL THEN 'scheduled' END,
    CASE WHEN ${c('resolution_type')} = 'pending' THEN 'pending' END)`;
}

function listingSql(alias: string): string {
  const c = (name: string) => `${alias}.${name}`;
  return `CASE WHEN ${c('status')} IN ('running', 'paused') THEN 'state'
    WHEN ${c('resolution_type')} = 'pending' THEN 'pending' ELSE 'any' END`;
}

export const TICKETS_PER_REQUEST = 200;
/** Runs a ticket batch is planned to list at most: two pages. */
export const RUNS_PER_BATCH = 2 * RUNS_PAGE_SIZE;
const MAX_TICKET_ID_LENGTH = 200;
const DETAILS_PER_ITEM = 100;

export interface OpenRun extends OpenRunCheck {
  id: string;
  ticketId: string | null;
  createdAt: Micros;
  /**
   * Runs stored with the same ticket id that its listing returns (1 when not known): those in the
   * state it asks for, or all of them.
   */
  ticketRuns?: number;
  /** What its ticket batch asks for (`any` when not known). */
  listing?: OpenListing;
  /** What kind of open run it is (its status and why it is open), as its looks are learned from. */
  kind?: string;
}

/**
 * The open runs created in [from, before), with when a pass last looked at each and how many runs
 * stored in that range share its ticket (what listing the ticket returns).
 */
export async function openRuns(wh: Warehouse, from: Micros, before: Micros): Promise<OpenRun[]> {
  const range = (c: string) => `${c} >= ${US_TO_TSTZ('$1')} AND ${c} < ${US_TO_TSTZ('$2')}`;
  const rows = await wh.all<{
    id: string;
    t: string | null;
    c: bigint;
    u: bigint;
    l: bigint | null;
    s: bigint | null;
    n: bigint | null;
    k: string;
    f: OpenListing;
  }>(
    `WITH open AS (
       SELECT r.id, r.ticket_id AS t, epoch_us(r.created_at) AS c, epoch_us(r.updated_at) AS u,
         epoch_us(o.last_checked_at) AS l, epoch_us(r.scheduled_resume_at) AS s, ${openKindSql('r')} AS k,
         ${listingSql('r')} AS f
       FROM runs r LEFT JOIN _sync_open_runs o ON o.run_id = r.id
       WHERE ${openRunSql('r')} AND ${range('r.created_at')}),
     shared AS (
       SELECT ticket_id AS t, count(*) AS n_any,
         count(*) FILTER (WHERE status IN ('running', 'paused')) AS n_state,
         count(*) FILTER (WHERE resolution_type = 'pending') AS n_pending
       FROM runs
       WHERE ${range('created_at')} AND ticket_id IN (SELECT t FROM open) GROUP BY ticket_id)
     SELECT open.*, CASE open.f WHEN 'state' THEN shared.n_state WHEN 'pending' THEN shared.n_pending
         ELSE shared.n_any END AS n
     FROM open LEFT JOIN shared ON shared.t = open.t ORDER BY open.c, open.id`,
    [BigInt(from), BigInt(before)],
  );
  const n = (v: bigint | null) => (v === null ? null : Number(v));
  return rows.map((r) => ({
    id: r.id,
    ticketId: r.t,
    createdAt: Number(r.c),
    updatedAt: Number(r.u),
    lastCheckedAt: n(r.l),
    scheduledResumeAt: n(r.s),
    ticketRuns: Math.max(1, Number(r.n ?? 1)),
    kind: r.k,
    listing: r.f,
  }));
}

export interface TicketBatch {
  listing: OpenListing;
  tickets: string[];
  /** Runs its listing is expected to return: its tickets' runs in the state asked for. */
  expected: number;
  runs: Map<string, OpenRun>;
  createdFrom: Micros;
  /** Exclusive. */
  createdTo: Micros;
}

/**
 * Open runs (oldest first) in batches of up to 200 distinct ticket ids, each batch of one kind of
 * listing, and those no filter can name. A batch also stops before its tickets' runs would
 * overflow two pages: a ticket's other runs in the state asked for are listed with it, and a third
 * page holding a few runs would cost as much as a full one.
 */
export function planTicketBatches(runs: readonly OpenRun[]): { batches: TicketBatch[]; byId: OpenRun[] } {
  const batches: TicketBatch[] = [];
  const byId: OpenRun[] = [];
  const filling = new Map<OpenListing, { batch: TicketBatch; tickets: Set<string>; listed: number }>();
  for (const run of runs) {
    const t = run.ticketId;
    if (t === null || t === '' || [...t].length > MAX_TICKET_ID_LENGTH) {
      byId.push(run);
      continue;
    }
    const listing = run.listing ?? 'any';
    let current = filling.get(listing);
    const known = current?.tickets.has(t) === true;
    const more = run.ticketRuns ?? 1;
    if (
      current === undefined ||
      (!known && (current.tickets.size >= TICKETS_PER_REQUEST || current.listed + more > RUNS_PER_BATCH))
    ) {
      const batch = {
        listing,
        tickets: [],
        expected: 0,
        runs: new Map(),
        createdFrom: run.createdAt,
        createdTo: run.createdAt + 1,
      };
      current = { batch, tickets: new Set<string>(), listed: 0 };
      filling.set(listing, current);
      batches.push(batch);
    }
    if (!known) {
      current.batch.tickets.push(t);
      current.tickets.add(t);
      current.listed += more;
      current.batch.expected += more;
    }
    const batch = current.batch;
    batch.runs.set(run.id, run);
    batch.createdFrom = Math.min(batch.createdFrom, run.createdAt);
    batch.createdTo = Math.max(batch.createdTo, run.createdAt + 1);
  }
  return { batches, byId };
}

/** Requests the listing of these batches and the runs no filter can name cost. */
export function batchesCost(plan: { batches: readonly TicketBatch[]; byId: readonly OpenRun[] }): number {
  let n = plan.byId.length;
  for (const b of plan.batches) n += Math.max(1, Math.ceil(b.expected / RUNS_PAGE_SIZE));
  return n;
}

export interface OpenRefresh {
  /** Ids of the open runs looked at. */
  checked: string[];
  /** Open runs left for a later pass: the set is too large for the share of the rate. */
  deferred: number;
  longestUnchecked: Micros;
}

const NOTHING_OPEN: OpenRefresh = { checked: [], deferred: 0, longestUnchecked: 0 };

/**
 * Re-checks the open runs created in [from, before): all of them when that fits the share of the
 * key's rate open-run checks may use (or `all` asks for it), else those due (open-due.ts).
 * `before` is where this pass's window began.
 */
export async function refreshOpenRuns(
  deps: SyncDeps,
  from: Micros,
  before: Micros,
  counts: RunCounts,
  all = false,
): Promise<OpenRefresh> {
  if (before <= from) return NOTHING_OPEN;
  const now = deps.now();
  const rate = (await deps.budget?.snapshot())?.ratePerSecond ?? null;
  const { stored, hazard, listingYield } = await deps.gate.use(async (wh) => ({
    stored: await openRuns(wh, from, before),
    hazard: (await getState<HazardStats>(wh, OPEN_HAZARD_KEY)) ?? {},
    listingYield: (await getState<ListingYield>(wh, OPEN_YIELD_KEY)) ?? null,
  }));
  const likely = (r: OpenRun, quiet: Micros) => changeRate(hazard, r.kind ?? '', quiet);
  const plan = planOpenChecks(stored, now, {
    ratePerSecond: rate,
    costOfAll: batchesCost(planTicketBatches(stored)),
    all,
    changeRate: likely,
    runsPerRequest: runsPerRequestOf(listingYield),
  });
  const open = plan.check;
  const refresh: OpenRefresh = {
    checked: open.map((r) => r.id),
    deferred: plan.deferred,
    longestUnchecked: plan.longestUnchecked,
  };
  if (plan.deferred > 0)
    deps.logger.info(
      {
        deferred: plan.deferred,
        checked: open.length,
        longestUncheckedSeconds: Math.round(plan.longestUnchecked / MICROS_PER_SECOND),
      },
      "open runs deferred: checking them all would take more than their share of the key's rate; `runsync sync --all-open` checks every one",
    );
  if (open.length === 0) return refresh;
  let listedLooks = 0;
  let listRequests = 0;
  const looked = (run: OpenRun, changed: boolean) => {
    if (run.lastCheckedAt !== null)
      observe(hazard, run.kind ?? '', quietOf(run), (now - run.lastCheckedAt) as Micros, changed);
  };
  const { batches, byId } = planTicketBatches(open);
  const fetcher = detailSource(deps);
  try {
    await runPipeline<RunItem>(
      async (push, signal) => {
        const direct = [...byId];
        for await (const { batch, pages, filterError } of listTicketBatches(deps, batches, counts, signal)) {
          listRequests += pages.length;
          if (!filterError) listedLooks += batch.runs.size;
          // `seen` keeps a run listed twice (a listing started over) from being judged twice.
          const seen = new Set<string>();
          for (const page of pages) {
            const fetch: string[] = [];
            const listed = new Map<string, string | null>();
            let unchanged = 0;
            for (const s of page.items) {
              const run = batch.runs.get(s.id);
              if (!run || seen.has(s.id)) continue;
              seen.add(s.id);
              const at = parseTimestamp(s.updated_at);
              const changed = at === null || at > run.updatedAt;
              looked(run, changed);
              if (!changed) {
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
          if (filterError)
            deps.logger.warn(
              { parameter: filterError.parameter, error: filterError.message },
              'open runs the ticket filter cannot name are checked one by one',
            );
          for (const run of batch.runs.values()) {
            if (seen.has(run.id)) continue;
            // Not returned by a listing the API took: the run left the state asked for (or its
            // ticket), so it changed.
            if (!filterError) looked(run, true);
            direct.push(run);
          }
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
      { ahead: deps.settings.bufferedPages, signal: deps.signal, weight: itemWeight, followUp: lateDetails },
    );
  } finally {
    fetcher.close();
  }
  await deps.gate.use(async (wh) => {
    await setState(wh, OPEN_HAZARD_KEY, hazard, deps.now());
    if (listRequests > 0)
      await setState(wh, OPEN_YIELD_KEY, addYield(listingYield, listedLooks, listRequests), deps.now());
  });
  return refresh;
}

/**
 * Keeps _sync_open_runs equal to the open runs inside the horizon, for status, metrics and the
 * next pass: a run looked at now (re-checked, listed in the live window from `listedFrom` on, or
 * just opened) is marked so; the others keep when they were last looked at.
 */
export async function recordOpenRuns(
  wh: Warehouse,
  horizonStart: Micros,
  checkedAt: Micros,
  listedFrom: Micros,
  checked: readonly string[],
): Promise<number> {
  return wh.transaction(async (tx) => {
    // A list parameter needs an item to have a type.
    if (checked.length)
      await tx.run(`CREATE OR REPLACE TEMP TABLE _open_checked AS SELECT unnest($1::VARCHAR[]) AS run_id`, [
        listValue([...checked]),
      ]);
    else await tx.run(`CREATE OR REPLACE TEMP TABLE _open_checked (run_id VARCHAR)`);
    // The open set is read afresh (a scan of a few columns), but only what differs is written: a
    // steady pass changes a few rows of the set, and rewriting all of them every pass would cost
    // in proportion to the horizon and leave the file that many dead rows to reclaim.
    await tx.run(
      `CREATE OR REPLACE TEMP TABLE _open_now AS
       SELECT r.id AS run_id, r.created_at, r.updated_at,
         CASE WHEN r.status IN ('running', 'paused') THEN r.status
              WHEN r.approval_waiting_for_approval IS TRUE THEN 'waiting_for_approval'
              WHEN r.scheduled_resume_at IS NOT NULL THEN 'scheduled_to_resume'
              ELSE 'resolution_pending' END AS reason
       FROM runs r WHERE ${openRunSql('r')} AND r.created_at >= ${US_TO_TSTZ('$1')}`,
      [BigInt(horizonStart)],
    );
    await tx.run(
      `CREATE OR REPLACE TEMP TABLE _open_gone AS
       SELECT o.run_id, o.last_checked_at FROM _sync_open_runs o ANTI JOIN _open_now n
         ON n.run_id = o.run_id AND n.created_at IS NOT DISTINCT FROM o.created_at
        AND n.updated_at IS NOT DISTINCT FROM o.updated_at AND n.reason IS NOT DISTINCT FROM o.reason`,
    );
    await tx.run(`DELETE FROM _sync_open_runs WHERE run_id IN (SELECT run_id FROM _open_gone)`);
    const touched = `created_at >= ${US_TO_TSTZ('$2')} OR run_id IN (SELECT run_id FROM _open_checked)`;
    await tx.run(
      `UPDATE _sync_open_runs SET last_checked_at = ${US_TO_TSTZ('$1')}
       WHERE (${touched}) AND last_checked_at IS DISTINCT FROM ${US_TO_TSTZ('$1')}`,
      [BigInt(checkedAt), BigInt(listedFrom)],
    );
    await tx.run(
      `INSERT INTO _sync_open_runs
       SELECT n.run_id, n.created_at, n.updated_at, n.reason,
         CASE WHEN g.last_checked_at IS NULL OR n.created_at >= ${US_TO_TSTZ('$2')}
                OR n.run_id IN (SELECT run_id FROM _open_checked)
              THEN ${US_TO_TSTZ('$1')} ELSE g.last_checked_at END
       FROM _open_now n ANTI JOIN _sync_open_runs o ON o.run_id = n.run_id
       LEFT JOIN _open_gone g ON g.run_id = n.run_id`,
      [BigInt(checkedAt), BigInt(listedFrom)],
    );
    await tx.run(`DROP TABLE _open_checked`);
    await tx.run(`DROP TABLE _open_now`);
    await tx.run(`DROP TABLE _open_gone`);
    const [r] = await tx.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_open_runs`);
    return Number(r?.n ?? 0);
  });
}
