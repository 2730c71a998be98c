import { FilterError, InvalidRequestError, type ListPage, type RunListFilter, type RunSummary } from '../api/index.ts';
import { parseTimestamp, type Micros } from '../util/timestamp.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import { US_TO_TSTZ } from '../warehouse/warehouse-sql.ts';
import type { SqlRunner, Warehouse } from '../warehouse/warehouse-types.ts';
import { detailSource } from './detail-fetcher.ts';
import { runPipeline } from './load-pipeline.ts';
import { commitRunItems, NO_DETAILS, type RunItem } from './run-commit.ts';
import { slices, type Window } from './sync-window.ts';
import type { RunCounts, SyncDeps } from './sync-types.ts';

// A walk reads every run summary created in [from, to), a slice (a day by default) at a time, and
// fetches the detail of each run that is new or whose summary's updated_at moved past the stored
// one (or of every run, when forced). The list's order is never relied on: a slice is done when
// its listing ends, and what each page holds is judged by id against the warehouse.
//
// Where it stands (slice, part of a split filter, cursor) is saved with every commit, in the same
// transaction as the page's rows, so a killed walk resumes at the page after the last one loaded.
// A saved cursor the API no longer takes makes the slice start over, which costs list requests
// only: what was loaded is unchanged and is not fetched again.

export const RUNS_PAGE_SIZE = 100;

export interface WalkSpec {
  from: Micros;
  to: Micros;
  sliceMicros: Micros;
  /** List filters besides created time (backfills). */
  filter: Omit<RunListFilter, 'createdAfter' | 'createdBefore'>;
  /** Fetch every listed run's detail, changed or not. */
  force: boolean;
}

export interface WalkPosition {
  slice: number;
  part: number;
  cursor: string | null;
}

export interface WalkState extends WalkSpec {
  position: WalkPosition;
  done: boolean;
  startedAt: Micros;
  /** Runs listed and fetched so far, for progress reports of long walks. */
  listed: number;
  fetched: number;
}

export interface WalkHooks {
  /** Bookkeeping committed with the page that completes a slice (the live pass's watermark). */
  onSliceDone?: (tx: SqlRunner, slice: Window) => Promise<void>;
  /** Called after each commit. */
  onProgress?: (state: WalkState, slices: number) => void;
}

export function newWalk(spec: WalkSpec, startedAt: Micros): WalkState {
  return { ...spec, position: { slice: 0, part: 0, cursor: null }, done: false, startedAt, listed: 0, fetched: 0 };
}

export function readWalk(deps: SyncDeps, key: string): Promise<WalkState | undefined> {
  return deps.gate.use((wh) => getState<WalkState>(wh, key));
}

/** Runs whose stored updated_at a walk keeps in memory at once (about 100 bytes each). */
export const STORED_MAP_LIMIT = 250_000;

/**
 * Stored updated_at of the runs created in [from, to): what a page's summaries are judged by. Null
 * when there are more than `limit`, so the walk reads them a slice at a time instead.
 */
export async function storedUpdatedAt(wh: Warehouse, range: Window, limit: number): Promise<Map<string, Micros> | null> {
  const rows = await wh.all<{ id: string; u: bigint }>(
    `SELECT id, epoch_us(updated_at) AS u FROM runs WHERE created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')} LIMIT $3`,
    [BigInt(range.from), BigInt(range.to), limit + 1],
  );
  if (rows.length > limit) return null;
  return new Map(rows.map((r) => [r.id, Number(r.u)]));
}

/**
 * Walks from the saved position. `preloaded`: the stored updated_at of every run in the walk's
 * remaining range, when the caller read it already (it is then not read again).
 */
export async function walkRuns(
  deps: SyncDeps,
  key: string,
  start: WalkState,
  hooks: WalkHooks,
  counts: RunCounts,
  preloaded?: Map<string, Micros>,
): Promise<WalkState> {
  const parts = slices({ from: start.from, to: start.to }, start.sliceMicros);
  let state: WalkState = { ...start, position: { ...start.position } };
  if (parts.length === 0 || state.position.slice >= parts.length) {
    state = { ...state, done: true };
    await deps.gate.use((wh) => wh.transaction((tx) => setState(tx, key, state, deps.now())));
    return state;
  }
  const fetcher = detailSource(deps);
  // The state as of the last commit; each item carries the state after its page.
  let committed = state;
  try {
    await runPipeline<RunItem & { after: WalkState }>(
      async (push, signal) => {
        let listed = state.listed;
        let fetched = state.fetched;
        // One read for the whole walk when it fits in memory, else one per slice: each read is a
        // turn at the warehouse, which loads also wait for.
        const first = parts[state.position.slice] as Window;
        const whole = preloaded ?? (await deps.gate.use((wh) => storedUpdatedAt(wh, { from: first.from, to: state.to }, STORED_MAP_LIMIT)));
        for (let s = state.position.slice; s < parts.length; s++) {
          const slice = parts[s] as Window;
          const stored = whole ?? (await deps.gate.use((wh) => storedUpdatedAt(wh, slice, Number.MAX_SAFE_INTEGER))) ?? new Map<string, Micros>();
          let resume = s === state.position.slice ? { part: state.position.part, cursor: state.position.cursor } : { part: 0, cursor: null };
          for (;;) {
            let fromSavedCursor = resume.cursor !== null;
            try {
              const filter: RunListFilter = { ...state.filter, createdAfter: slice.from, createdBefore: slice.to };
              for await (const page of deps.api.runPages(filter, { resume, pageSize: RUNS_PAGE_SIZE, signal })) {
                fromSavedCursor = false;
                const judged = judge(page, stored, state.force);
                listed += page.received;
                fetched += judged.fetch.length;
                const position = nextPosition(s, page);
                const done = position.slice >= parts.length;
                const after: WalkState = { ...state, position, done, listed, fetched };
                const sliceDone = position.slice !== s;
                await push({
                  ready: judged.fetch.length ? fetcher.fetch(judged.fetch) : NO_DETAILS,
                  listed: judged.listed,
                  counts: { pages: 1, listed: page.received, new: judged.fresh, changed: judged.changed, unchanged: judged.unchanged },
                  after,
                  bookkeeping: async (tx) => {
                    if (sliceDone) await hooks.onSliceDone?.(tx, slice);
                    await setState(tx, key, after, deps.now());
                  },
                });
              }
              break;
            } catch (e) {
              if (fromSavedCursor && e instanceof InvalidRequestError && !(e instanceof FilterError)) {
                deps.logger.warn({ key, slice: s, error: e.message }, 'the saved cursor is no longer accepted; reading the slice again from its start');
                resume = { part: 0, cursor: null };
                continue;
              }
              throw e;
            }
          }
        }
      },
      async (items) => {
        await commitRunItems(deps, items, counts);
        committed = (items[items.length - 1] as { after: WalkState }).after;
        hooks.onProgress?.(committed, parts.length);
      },
      { ahead: deps.settings.bufferedPages, signal: deps.signal },
    );
  } finally {
    fetcher.close();
  }
  return committed;
}

interface Judged {
  fetch: string[];
  listed: Map<string, string | null>;
  fresh: number;
  changed: number;
  unchanged: number;
}

/** Which runs of a page need their detail; the stored map learns what was asked, so a run listed twice is fetched once. */
export function judge(page: ListPage<RunSummary>, stored: Map<string, Micros>, force: boolean): Judged {
  const out: Judged = { fetch: [], listed: new Map(), fresh: 0, changed: 0, unchanged: 0 };
  for (const s of page.items) {
    if (out.listed.has(s.id)) continue;
    const known = stored.get(s.id);
    const listedAt = parseTimestamp(s.updated_at);
    if (known === undefined) out.fresh++;
    else if (listedAt === null || listedAt > known) out.changed++;
    else {
      out.unchanged++;
      if (!force) continue;
    }
    out.fetch.push(s.id);
    out.listed.set(s.id, s.updated_at);
    if (listedAt !== null) stored.set(s.id, Math.max(listedAt, known ?? listedAt));
  }
  return out;
}

function nextPosition(slice: number, page: ListPage<RunSummary>): WalkPosition {
  if (page.hasMore) return { slice, part: page.part, cursor: page.nextCursor };
  if (page.part + 1 < page.parts) return { slice, part: page.part + 1, cursor: null };
  return { slice: slice + 1, part: 0, cursor: null };
}
