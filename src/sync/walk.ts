import { listValue } from '@duckdb/node-api';
import type { InvalidRecordReport, ListPage, RunListFilter, RunSummary } from '../api/index.ts';
import { type Micros, parseTimestamp } from '../util/timestamp.ts';
import { storedRuns } from '../warehouse/run-keys.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import type { SqlRunner, Warehouse } from '../warehouse/types.ts';
import { detailSource } from './detail-fetcher.ts';
import { coverSlice, listedRuns, openListing, wholeListing } from './ledger.ts';
import { ListAhead } from './list-ahead.ts';
import { runPipeline } from './load-pipeline.ts';
import { commitRunItems, itemWeight, lateDetails, NO_DETAILS, type RunItem } from './run-commit.ts';
import { type CursorRestart, RUNS_PAGE_SIZE, readSlice, type SliceAt } from './slice.ts';
import type { RunCounts, SyncDeps } from './types.ts';
import { slices, type Window } from './window.ts';

// A walk reads every run summary created in [from, to), a slice (a day by default) at a time, and
// fetches the detail of each run that is new or whose summary's updated_at moved past the stored
// one (or of every run, when forced). The list's order is never relied on: a slice is done when
// its listing ends, and what each page holds is judged by id against the warehouse.
//
// Where it stands (slice, piece, part of a split filter, cursor) is saved with every commit, in the
// same transaction as the page's rows, so a killed walk resumes at the page after the last one
// loaded. A cursor the API no longer takes, saved or just handed out, makes the slice (or the piece
// of it being read) start over, narrower when refusals repeat (slice.ts); this costs list
// requests only: what was loaded or is already being fetched is not fetched again.

export { RUNS_PAGE_SIZE } from './slice.ts';

export interface WalkSpec {
  from: Micros;
  to: Micros;
  sliceMicros: Micros;
  /** List filters besides created time (backfills). */
  filter: Omit<RunListFilter, 'createdAfter' | 'createdBefore'>;
  /** Fetch every listed run's detail, changed or not. */
  force: boolean;
}

export interface WalkPosition extends SliceAt {
  slice: number;
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
  /** Called when a refused cursor makes a slice start over (or narrower), before it does. */
  onCursorRefused?: (restart: CursorRestart) => void;
}

export function newWalk(spec: WalkSpec, startedAt: Micros): WalkState {
  return { ...spec, position: { slice: 0, part: 0, cursor: null }, done: false, startedAt, listed: 0, fetched: 0 };
}

export function readWalk(deps: SyncDeps, key: string): Promise<WalkState | undefined> {
  return deps.gate.use((wh) => getState<WalkState>(wh, key));
}

/** Runs whose stored updated_at a walk keeps in memory at once (a map entry each: id and time). */
export const STORED_MAP_LIMIT = 250_000;

export function storedLimit(deps: Pick<SyncDeps, 'settings'>): number {
  return deps.settings.storedMapLimit ?? STORED_MAP_LIMIT;
}

/**
 * Stored updated_at of the runs created in [from, to): what a page's summaries are judged by (a
 * run marked deleted is not among them, so one listed again is fetched and restored). Null
 * when there are more than `limit`, so the walk reads them a slice at a time instead.
 */
export async function storedUpdatedAt(
  wh: Warehouse,
  range: Window,
  limit: number,
): Promise<Map<string, Micros> | null> {
  const rows = await wh.all<{ id: string; u: bigint }>(
    `SELECT id, epoch_us(updated_at) AS u FROM runs
     WHERE created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')} AND deleted_at IS NULL LIMIT $3`,
    [BigInt(range.from), BigInt(range.to), limit + 1],
  );
  if (rows.length > limit) return null;
  return new Map(rows.map((r) => [r.id, Number(r.u)]));
}

/** Work a walk lists ahead of its fetches (ids to fetch, plus one per page), unless set. */
export const LIST_AHEAD_RUNS = 10_000;

/** What a listed page asks for; the walk's position after it goes with it. */
interface Listed {
  fetch: string[];
  listed: Map<string, string | null>;
  refused: InvalidRecordReport[];
  counts: Partial<RunCounts>;
  after: WalkState;
  bookkeeping: (tx: SqlRunner) => Promise<void>;
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
  const state: WalkState = { ...start, position: { ...start.position } };
  if (parts.length === 0 || state.position.slice >= parts.length) {
    const done = { ...state, done: true };
    await deps.gate.use((wh) => wh.transaction((tx) => setState(tx, key, done, deps.now())));
    return done;
  }
  // A walk begun afresh opens its listing for the ledger in its first page's commit.
  const opens = wholeListing(state) && isFresh(state);
  const fetcher = detailSource(deps);
  const ahead = new ListAhead<Listed>(deps.settings.listAheadRuns ?? LIST_AHEAD_RUNS, (l) => 1 + l.fetch.length);
  // The state as of the last commit; each item carries the state after its page.
  let committed = state;
  try {
    await runPipeline<RunItem & { after?: WalkState }>(
      (push, signal) =>
        ahead.run(listWalk(deps, key, state, parts, { hooks, counts, preloaded, ahead, signal, opens }), (l) =>
          push({ ...l, ready: l.fetch.length ? fetcher.fetch(l.fetch) : NO_DETAILS }),
        ),
      async (items) => {
        await commitRunItems(deps, items, counts);
        // Follow-ups (details that came late) carry no position: the last page's is the walk's.
        committed = items.findLast((i) => i.after !== undefined)?.after ?? committed;
        deps.logger.debug(
          { key, position: committed.position, listed: committed.listed, done: committed.done },
          'walk checkpoint committed',
        );
        hooks.onProgress?.(committed, parts.length);
      },
      { ahead: deps.settings.bufferedPages, signal: deps.signal, weight: itemWeight, followUp: lateDetails },
    );
  } finally {
    fetcher.close();
  }
  return committed;
}

interface ListContext {
  hooks: WalkHooks;
  counts: RunCounts;
  preloaded: Map<string, Micros> | undefined;
  ahead: ListAhead<Listed>;
  signal: AbortSignal;
  opens: boolean;
}

/** Every page of the walk from its position, judged, with the position after it. */
async function* listWalk(
  deps: SyncDeps,
  key: string,
  state: WalkState,
  parts: readonly Window[],
  c: ListContext,
): AsyncGenerator<Listed> {
  let listed = state.listed;
  let fetched = state.fetched;
  // One read for the whole walk when it fits in memory, else one per slice: each read is a turn at
  // the warehouse, which loads also wait for. A slice whose stored runs do not fit (a first sync
  // resumed far into its one slice) is judged by looking each page's runs up instead.
  const first = parts[state.position.slice] as Window;
  const whole =
    c.preloaded ??
    (await deps.gate.use((wh) => storedUpdatedAt(wh, { from: first.from, to: state.to }, storedLimit(deps))));
  const keep = askedKeep(deps);
  const ledger = wholeListing(state);
  let opens = c.opens;
  let position = state.position;
  for (let s = position.slice; s < parts.length; s = position.slice) {
    const slice = parts[s] as Window;
    const stored = whole ?? (await deps.gate.use((wh) => storedUpdatedAt(wh, slice, storedLimit(deps))));
    const known = new Known(stored ?? new Map(), keep);
    // Read anew after a refused cursor, a slice's pages hold runs asked for longer ago than the
    // walk remembers: those are committed by then, and the warehouse tells them.
    let lookUp = stored === null;
    const pages = readSlice(deps, slice, position, {
      filter: state.filter,
      counts: c.counts,
      signal: c.signal,
      beforeRestart: () => c.ahead.roomToRestart(),
      onRestart: (restart) => {
        lookUp = true;
        c.hooks.onCursorRefused?.(restart);
      },
      logFields: { key, slice: s },
    });
    for await (const { page, next } of pages) {
      if (lookUp) await lookUpStored(deps, page, known);
      const judged = judge(page, known, state.force);
      // Only what the ledger needs of the page waits for its commit, not the summaries.
      const runs = ledger ? listedRuns(page) : null;
      const opening = opens;
      opens = false;
      listed += page.received;
      fetched += judged.fetch.length;
      position = next.done ? startOf(s + 1, parts, next.width) : { slice: s, ...next.at };
      const after: WalkState = { ...state, position, done: position.slice >= parts.length, listed, fetched };
      yield {
        fetch: judged.fetch,
        listed: judged.listed,
        refused: page.refused,
        counts: {
          pages: 1,
          listed: page.received,
          new: judged.fresh,
          changed: judged.changed,
          unchanged: judged.unchanged,
        },
        after,
        bookkeeping: async (tx) => {
          if (opening) await openListing(tx, key, state.from, deps);
          if (runs) await coverSlice(tx, key, runs, next.done ? slice : null, deps.now());
          if (next.done) await c.hooks.onSliceDone?.(tx, slice);
          await setState(tx, key, after, deps.now());
        },
      };
    }
    if (position.slice === s) throw new Error(`the listing of slice ${s} of ${key} ended before its last page`);
  }
}

/** A walk not yet begun: nothing of it is committed. */
function isFresh(state: WalkState): boolean {
  const p = state.position;
  return p.slice === 0 && p.part === 0 && p.cursor === null && !p.piece && state.listed === 0;
}

/** The position at the start of slice `s`, narrowed to `width` when the slice before had to be. */
function startOf(s: number, parts: readonly Window[], width: Micros | null): WalkPosition {
  const slice = parts[s];
  if (!slice || width === null || width >= slice.to - slice.from) return { slice: s, part: 0, cursor: null };
  return { slice: s, part: 0, cursor: null, piece: { from: slice.from, to: slice.from + width } };
}

/**
 * What a page is judged by: the stored updated_at of its runs, and what the walk asked for. A walk
 * remembers the runs it asked for, so a run listed again (a slice read anew after a refused
 * cursor) is not fetched twice even before its detail is committed, but only the latest `keep` of
 * them: more than its work in flight, so the rest are committed and the warehouse knows them.
 * Remembering them all would grow with the walk, and a first sync of millions of runs would
 * outgrow V8's heap.
 */
export class Known {
  private readonly asked = new Map<string, Micros>();
  private found: ReadonlyMap<string, Micros> = new Map();

  constructor(
    private readonly stored: ReadonlyMap<string, Micros>,
    private readonly keep: number,
  ) {}

  get(id: string): Micros | undefined {
    return this.asked.get(id) ?? this.found.get(id) ?? this.stored.get(id);
  }

  set(id: string, updatedAt: Micros): void {
    this.asked.delete(id);
    this.asked.set(id, updatedAt);
    if (this.asked.size > this.keep) this.asked.delete(this.asked.keys().next().value as string);
  }

  /** What the warehouse holds of a page's runs (replacing the last page's). */
  lookedUp(rows: ReadonlyMap<string, Micros>): void {
    this.found = rows;
  }
}

/** Runs a walk remembers having asked for: well past its work in flight (see Known). */
function askedKeep(deps: SyncDeps): number {
  const pages = (deps.settings.bufferedPages + 1) * RUNS_PAGE_SIZE;
  return 2 * ((deps.settings.listAheadRuns ?? LIST_AHEAD_RUNS) + pages);
}

/** Reads the stored updated_at of a page's runs that the walk does not know, for `known`. */
async function lookUpStored(deps: SyncDeps, page: ListPage<RunSummary>, known: Known): Promise<void> {
  const ids = page.items.map((r) => r.id).filter((id) => known.get(id) === undefined);
  if (ids.length === 0) return known.lookedUp(new Map());
  const rows = await deps.gate.use((wh) =>
    wh.all<{ id: string; u: bigint }>(
      `SELECT id, epoch_us(updated_at) AS u FROM ${storedRuns('SELECT unnest($1::VARCHAR[]) AS id', ['id', 'updated_at', 'deleted_at'])}
       WHERE deleted_at IS NULL`,
      [listValue(ids)],
    ),
  );
  known.lookedUp(new Map(rows.map((r) => [r.id, Number(r.u)])));
}

interface Judged {
  fetch: string[];
  listed: Map<string, string | null>;
  fresh: number;
  changed: number;
  unchanged: number;
}

/**
 * Which runs of a page need their detail; the stored map learns what was asked, so a run listed
 * twice is fetched once.
 */
export function judge(page: ListPage<RunSummary>, stored: Pick<Known, 'get' | 'set'>, force: boolean): Judged {
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
