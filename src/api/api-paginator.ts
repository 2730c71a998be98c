import type { EndpointName } from './api-endpoints.ts';
import { PaginationError } from './api-errors.ts';

// Walks `next_cursor` by the spec's paging rule and refuses, with a clear error, anything that
// would loop: a cursor handed out twice, `has_more` without a cursor, an empty page claiming more.
// List order is unspecified, so nothing here looks at the items themselves.

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
}

export class Paginator {
  private nextCursor: string | null;
  private done = false;
  private pages = 0;
  private readonly seen = new Set<string>();
  private readonly maxPages: number;

  constructor(
    private readonly endpoint: EndpointName,
    options: PaginatorOptions = {},
  ) {
    this.nextCursor = options.cursor ?? null;
    if (this.nextCursor !== null) this.seen.add(this.nextCursor);
    this.maxPages = options.maxPages ?? 1_000_000;
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

  /** Takes in one page's pagination; throws PaginationError when it breaks the paging rule. */
  advance(page: PageInfo): void {
    if (this.done) throw new PaginationError('advanced past the last page', { endpoint: this.endpoint });
    this.pages++;
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
    if (this.seen.has(next)) {
      throw new PaginationError(`page ${this.pages} repeats a cursor already followed; stopping rather than looping`, info);
    }
    if (this.pages >= this.maxPages) {
      throw new PaginationError(`more than ${this.maxPages} pages; stopping`, info);
    }
    this.seen.add(next);
    this.nextCursor = next;
  }
}
