import type { EndpointName } from './endpoints.ts';
import { CursorRefusedError, FilterError, InvalidRequestError, NotFoundError, PaginationError } from './errors.ts';

// Walks `next_cursor` by the spec's paging rule and refuses, with a clear error, anything that
// would loop: a cursor handed out twice, `has_more` without a cursor, an empty page claiming more.
// List order is unspecified, so nothing here looks at the items themselves.
//
// A cursor is opaque and the spec gives it no lifetime: an API may stop taking one it handed out
// (expired, forgotten). A page request refused while it carried a cursor, whose filters the first
// page accepted, is such a refusal; paging can then restart from the first page.
//
// A listing of a million runs is ten thousand pages, so the cursors followed are not all kept: the
// latest RECENT_CURSORS are, which catches a short loop at once, and one cursor marked at pages
// 1, 2, 4, 8... (Brent's cycle check) catches a loop of any length within about twice its pages
// after it starts, since the server's next cursor follows from the one sent.

export interface PageInfo {
  /** Items on the page as received, before any was set aside as invalid. */
  itemCount: number;
  hasMore: boolean;
  nextCursor: string | null;
  requestId?: string | null;
}

export interface PaginatorOptions {
  /** Resume after this cursor instead of starting at the first page. */
  cursor?: string | null;
  /** Pages before giving up; a guard against a server that never stops. */
  maxPages?: number;
  /** The clock a held cursor's age is read from (milliseconds). */
  nowMs?: () => number;
}

/** Cursors remembered exactly, the latest first to be checked against. */
export const RECENT_CURSORS = 1024;

export class Paginator {
  private nextCursor: string | null;
  private done = false;
  private pages = 0;
  /** Pages of the current listing (since the first page or the last restart). */
  private listed = 0;
  private restarted = 0;
  /** When the cursor in hand was received; null for one given from a saved position. */
  private cursorSince: number | null = null;
  private readonly recent = new Set<string>();
  /** Brent's mark: a cursor followed earlier, moved forward each time `sinceMark` reaches `markSpan`. */
  private mark: string | null = null;
  private sinceMark = 0;
  private markSpan = 1;
  private readonly maxPages: number;
  private readonly nowMs: () => number;

  constructor(
    private readonly endpoint: EndpointName,
    options: PaginatorOptions = {},
  ) {
    this.nextCursor = options.cursor ?? null;
    if (this.nextCursor !== null) this.remember(this.nextCursor);
    this.maxPages = options.maxPages ?? 1_000_000;
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** The cursor to send for the next page; null for the first page. */
  get cursor(): string | null {
    return this.nextCursor;
  }

  get finished(): boolean {
    return this.done;
  }

  get pageCount(): number {
    return this.pages;
  }

  /** How many times paging went back to the first page. */
  get restarts(): number {
    return this.restarted;
  }

  /** Takes in one page's pagination; throws PaginationError when it breaks the paging rule. */
  advance(page: PageInfo): void {
    if (this.done) throw new PaginationError('advanced past the last page', { endpoint: this.endpoint });
    this.pages++;
    this.listed++;
    const info = { endpoint: this.endpoint, requestId: page.requestId ?? null };
    if (!page.hasMore) {
      this.done = true;
      this.nextCursor = null;
      return;
    }
    const next = page.nextCursor;
    if (next === null || next === '') {
      throw new PaginationError(`page ${this.pages} says has_more but gives no next_cursor`, info);
    }
    if (page.itemCount === 0) {
      throw new PaginationError(`page ${this.pages} is empty yet says has_more; stopping rather than looping`, info);
    }
    if (this.recent.has(next) || next === this.mark) {
      throw new PaginationError(
        `page ${this.pages} repeats a cursor already followed; stopping rather than looping`,
        info,
      );
    }
    if (this.pages >= this.maxPages) {
      throw new PaginationError(`more than ${this.maxPages} pages; stopping`, info);
    }
    this.remember(next);
    this.nextCursor = next;
    this.cursorSince = this.nowMs();
  }

  /**
   * The failure of the request for the next page, as a CursorRefusedError when it means the API no
   * longer takes the cursor sent; null when it is any other failure (to be thrown as it is).
   */
  refusal(error: unknown): CursorRefusedError | null {
    if (this.nextCursor === null || this.done) return null;
    if (error instanceof CursorRefusedError) return error;
    if (error instanceof FilterError) return null;
    if (!(error instanceof InvalidRequestError) && !(error instanceof NotFoundError)) return null;
    const { endpoint, path, status, code, requestId } = error;
    const info = { endpoint, path, status, code, requestId, cause: error };
    if (this.cursorSince === null) {
      const saved = { page: null, heldMs: null };
      return new CursorRefusedError(`the saved cursor is no longer accepted: ${error.detail}`, info, saved);
    }
    const heldMs = Math.max(0, this.nowMs() - this.cursorSince);
    const page = this.listed + 1;
    const held = `held ${(heldMs / 1000).toFixed(1)} s`;
    return new CursorRefusedError(
      `the cursor for page ${page} (${held}) is no longer accepted: ${error.detail}`,
      info,
      { page, heldMs },
    );
  }

  /** Back to the first page, after a refused cursor. The pages-before-giving-up guard still counts. */
  restart(): void {
    this.restarted++;
    this.nextCursor = null;
    this.cursorSince = null;
    this.done = false;
    this.listed = 0;
    this.recent.clear();
    this.mark = null;
    this.sinceMark = 0;
    this.markSpan = 1;
  }

  private remember(cursor: string): void {
    this.recent.add(cursor);
    if (this.recent.size > RECENT_CURSORS) this.recent.delete(this.recent.values().next().value as string);
    if (this.mark === null || ++this.sinceMark >= this.markSpan) {
      this.mark = cursor;
      this.sinceMark = 0;
      this.markSpan *= 2;
    }
  }
}
