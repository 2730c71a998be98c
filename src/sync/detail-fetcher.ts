import { type ApiClient, type ApiError, FetchPool, type RunDetail } from '../api/index.ts';

// Run details for several pages at once under one bound on requests in flight (the client's
// FetchPool), so the page being loaded, the page being fetched and the next one listed keep the
// budget busy together.

export type DetailResult = { id: string; ok: true; detail: RunDetail } | { id: string; ok: false; error: ApiError };

/** Details of several runs, and what to let go of once they are committed. */
export interface DetailBatch {
  results: DetailResult[];
  /** Called after the batch's rows are committed (the worker removes its staged file). */
  release(): Promise<void>;
}

/** Where details come from: this process (DetailFetcher), or the worker's fetch queue. */
export interface DetailSource {
  /** Every id's result, in the order given; rejects when a failure stops everything. */
  fetch(ids: readonly string[]): Promise<DetailBatch>;
  close(): void;
}

const NOTHING_TO_RELEASE = (): Promise<void> => Promise.resolve();

/** The deps' detail source for one walk, or a local fetcher. */
export function detailSource(deps: {
  api: ApiClient;
  settings: { detailConcurrency: number };
  signal: AbortSignal;
  details?: (signal: AbortSignal) => DetailSource;
}): DetailSource {
  return deps.details
    ? deps.details(deps.signal)
    : new DetailFetcher(deps.api, deps.settings.detailConcurrency, deps.signal);
}

export class DetailFetcher implements DetailSource {
  private readonly pool: FetchPool<RunDetail>;

  /**
   * `concurrency` in flight at least, more when the pace needs them; `shares` fetchers of the
   * process side by side split what it needs.
   */
  constructor(api: ApiClient, concurrency: number, signal: AbortSignal, shares = 1) {
    this.pool = new FetchPool((id, s) => api.getRun(id, { signal: s }), api.inFlightBound(concurrency, shares), signal);
  }

  async fetch(ids: readonly string[]): Promise<DetailBatch> {
    const results = (await this.pool.all(ids)).map(
      (r): DetailResult => (r.ok ? { id: r.id, ok: true, detail: r.value } : r),
    );
    return { results, release: NOTHING_TO_RELEASE };
  }

  close(): void {
    this.pool.close();
  }
}
