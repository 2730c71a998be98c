import { ApiError, AuthError, PermissionError, type ApiClient, type RunDetail } from '../api/index.ts';

// Run details for several pages at once under one bound on requests in flight, so the page being
// loaded, the page being fetched and the next one listed keep the budget busy together. A failure
// that concerns one run (not found, invalid, retries exhausted) is that run's result; one that
// concerns every run (the key refused, the scope missing, the caller's abort) stops all fetches.

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
export function detailSource(deps: { api: ApiClient; settings: { detailConcurrency: number }; signal: AbortSignal; details?: (signal: AbortSignal) => DetailSource }): DetailSource {
  return deps.details ? deps.details(deps.signal) : new DetailFetcher(deps.api, deps.settings.detailConcurrency, deps.signal);
}

export class DetailFetcher implements DetailSource {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly controller = new AbortController();
  private fatal: unknown = null;
  private readonly onOuterAbort: () => void;

  constructor(
    private readonly api: ApiClient,
    private readonly concurrency: number,
    private readonly outer: AbortSignal,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('detail concurrency must be a positive integer');
    this.onOuterAbort = () => this.stop(outer.reason);
    if (outer.aborted) this.stop(outer.reason);
    else outer.addEventListener('abort', this.onOuterAbort, { once: true });
  }

  /** Every id's result, in the order given; rejects when a failure stops everything. */
  async fetch(ids: readonly string[]): Promise<DetailBatch> {
    const results = await Promise.all(ids.map((id) => this.one(id)));
    if (this.fatal !== null) throw this.fatal;
    return { results, release: NOTHING_TO_RELEASE };
  }

  close(): void {
    this.outer.removeEventListener('abort', this.onOuterAbort);
    this.controller.abort();
  }

  private async one(id: string): Promise<DetailResult> {
    await this.slot();
    try {
      if (this.fatal !== null) return { id, ok: false, error: this.fatal as ApiError };
      const detail = await this.api.getRun(id, { signal: this.controller.signal });
      return { id, ok: true, detail };
    } catch (e) {
      if (e instanceof ApiError && !(e instanceof AuthError) && !(e instanceof PermissionError) && !this.controller.signal.aborted) {
        return { id, ok: false, error: e };
      }
      this.stop(this.outer.aborted ? this.outer.reason : e);
      return { id, ok: false, error: e as ApiError };
    } finally {
      this.release();
    }
  }

  private stop(reason: unknown): void {
    if (this.fatal === null) this.fatal = reason ?? new Error('stopped');
    this.controller.abort();
  }

  private async slot(): Promise<void> {
    if (this.active < this.concurrency) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}
