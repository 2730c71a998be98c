import { CursorRefusedError, type ListPage, type RunListFilter, type RunSummary } from '../api/index.ts';
import { formatTimestamp, type Micros } from '../util/timestamp.ts';
import type { RunCounts, SyncDeps } from './types.ts';
import type { Window } from './window.ts';

// Reads every run summary of one created-time slice, whatever the API does with its cursors. A
// cursor is opaque and may stop being accepted at any page (it expired while the walk waited for
// details, or the server forgot it). The slice is then read again from its first page: pages are
// judged by updated_at against what is stored or already asked for, so this costs list requests
// only. The list's order is unspecified, so a refused listing says nothing of which runs were seen:
// the whole slice, or the piece of it being read, is listed again.
//
// A server that keeps refusing would make that loop forever. After a few refusals the piece being
// read is halved by created time, and the rest of the slice is read in pieces one after the other,
// each as wide as the last or, after a clean reading, twice as wide. Only a piece that cannot be
// halved (one microsecond holding more than a page of runs) ends the walk with an error.

export const RUNS_PAGE_SIZE = 100;

/** Refusals of one piece that restart it whole; the next one halves it. */
export const RESTARTS_BEFORE_NARROWING = 2;

/** Where reading a slice stands: the part of a split filter, the cursor within it, the piece. */
export interface SliceAt {
  part: number;
  cursor: string | null;
  /** The created-time piece of the slice being read, once refusals narrowed it; absent: all of it. */
  piece?: Window;
  /** Cursors of this piece refused so far. */
  refused?: number;
}

export type SliceStep =
  | { done: false; at: SliceAt }
  /** `width`: how wide a piece the next slice may start with, when this one had to be narrowed. */
  | { done: true; width: Micros | null };

export interface SlicePage {
  page: ListPage<RunSummary>;
  /** Where reading stands once this page is loaded. */
  next: SliceStep;
}

export interface CursorRestart {
  slice: Window;
  /** What is read again: the piece, or its first half when it was narrowed. */
  piece: Window;
  narrowed: boolean;
  /** Refusals of the piece, this one included. */
  refused: number;
  error: CursorRefusedError;
}

export interface SliceOptions {
  /** List filters besides created time. */
  filter: Omit<RunListFilter, 'createdAfter' | 'createdBefore'>;
  /** Restarts and narrowings are counted here as they happen. */
  counts: Pick<RunCounts, 'cursorRestarts' | 'narrowed'>;
  signal: AbortSignal;
  /** Awaited before listing again after a refusal, so the next attempt holds its cursors briefly. */
  beforeRestart?: () => Promise<void>;
  onRestart?: (restart: CursorRestart) => void;
  /** Fields for the log line of a restart. */
  logFields?: Record<string, unknown>;
}

/** A slice the API will not let be read: every cursor refused, and no narrower piece left to try. */
export class SlicePagingError extends Error {
  override readonly name = 'SlicePagingError';
  constructor(
    readonly piece: Window,
    override readonly cause: CursorRefusedError,
  ) {
    super(
      `the API refused the list cursor of the runs created in [${formatTimestamp(piece.from)}, ` +
        `${formatTimestamp(piece.to)}) ${RESTARTS_BEFORE_NARROWING + 1} times, and that range ` +
        `cannot be narrowed further: more than a page (${RUNS_PAGE_SIZE}) of runs were created in it, and ` +
        `the API does not let them be paged through. Last refusal: ${cause.message}`,
    );
  }
}

function within(piece: Window | undefined, slice: Window): Window | null {
  if (!piece || !(piece.from >= slice.from && piece.to <= slice.to && piece.from < piece.to)) return null;
  return piece.from === slice.from && piece.to === slice.to ? null : piece;
}

/** The pages of one slice, each with the position after it; restarts and narrows on refused cursors. */
export async function* readSlice(
  deps: Pick<SyncDeps, 'api' | 'logger'>,
  slice: Window,
  from: SliceAt,
  o: SliceOptions,
): AsyncGenerator<SlicePage> {
  const narrowedAt = within(from.piece, slice);
  let piece: Window = narrowedAt ?? slice;
  let narrowed = narrowedAt !== null;
  let refused = from.refused ?? 0;
  let resume = { part: from.part, cursor: from.cursor };
  const at = (part: number, cursor: string | null): SliceAt =>
    narrowed ? { part, cursor, piece, refused } : refused > 0 ? { part, cursor, refused } : { part, cursor };
  for (;;) {
    const width = piece.to - piece.from;
    let part = resume.part;
    // Whether this reading of the piece followed a cursor, and its fullest page: what says how
    // wide the next piece may be.
    let paged = resume.cursor !== null;
    let fullest = 0;
    let following: Window | null = null;
    let pages = 0;
    try {
      const filter: RunListFilter = { ...o.filter, createdAfter: piece.from, createdBefore: piece.to };
      for await (const page of deps.api.runPages(filter, { resume, pageSize: RUNS_PAGE_SIZE, signal: o.signal })) {
        if (page.cursor !== null) paged = true;
        fullest = Math.max(fullest, page.received);
        let next: SliceStep;
        if (page.hasMore) next = { done: false, at: at(page.part, page.nextCursor) };
        else if (page.part + 1 < page.parts) next = { done: false, at: at(page.part + 1, null) };
        else {
          // Twice as wide after a clean reading that followed cursors (they are taken again), or
          // whose pages were not half full; as wide after refusals, or when one page was about all
          // a piece this wide holds (cursors may still be refused: one page needs none).
          const grown = refused === 0 && (paged || fullest < RUNS_PAGE_SIZE / 2) ? 2 * width : width;
          following = piece.to >= slice.to ? null : { from: piece.to, to: Math.min(slice.to, piece.to + grown) };
          next = following
            ? { done: false, at: { part: 0, cursor: null, piece: following } }
            : { done: true, width: narrowed ? grown : null };
        }
        if (!next.done) part = next.at.part;
        pages++;
        yield { page, next };
      }
    } catch (e) {
      if (!(e instanceof CursorRefusedError)) throw e;
      refused++;
      const halve = refused > RESTARTS_BEFORE_NARROWING;
      if (halve && width < 2) throw new SlicePagingError(piece, e);
      o.counts.cursorRestarts++;
      if (halve) {
        piece = { from: piece.from, to: piece.from + Math.floor(width / 2) };
        narrowed = true;
        o.counts.narrowed++;
        resume = { part: 0, cursor: null };
      } else {
        resume = { part, cursor: null };
      }
      const fields = {
        ...o.logFields,
        from: formatTimestamp(piece.from),
        to: formatTimestamp(piece.to),
        refused,
        page: e.page,
        heldMs: e.heldMs,
        error: e.message,
      };
      deps.logger.warn(
        fields,
        halve
          ? `list cursors of this slice were refused ${refused} times; reading it in halves by created time`
          : 'a list cursor is no longer accepted; reading the slice again from its first page ' +
              '(nothing unchanged is fetched again)',
      );
      o.onRestart?.({ slice, piece, narrowed: halve, refused, error: e });
      if (halve) refused = 0;
      await o.beforeRestart?.();
      continue;
    }
    if (pages === 0 && (resume.part !== 0 || resume.cursor !== null)) {
      // A saved position past the parts the filter now splits into: read the piece from its start.
      resume = { part: 0, cursor: null };
      continue;
    }
    if (following === null) return;
    piece = following;
    narrowed = true;
    refused = 0;
    resume = { part: 0, cursor: null };
  }
}
