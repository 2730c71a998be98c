import { type ApiClient, type ApiError, FetchPool, type RunDetail } from '../api/index.ts';

// Run details for several pages at once under one bound on requests in flight (the client's
// FetchPool), so the page being loaded, the page being fetched and the next one listed keep the
// budget busy together.
//
// A page's details are committed together, in order, so one request that hangs would hold up its
// page, and the pages behind it once the pipeline is full. So a page waits for a straggler only so
// long: once every other detail of it is in, and the straggler has been on the wire STRAGGLER_FACTOR
// times longer than answers usually take (STRAGGLER_MIN_MS at least), the page goes on without it
// (`stragglers`): the run is kept pending in the page's commit, so nothing is lost, and its detail
// is committed on its own once it comes (its request is still retried as any other).

export type DetailResult = { id: string; ok: true; detail: RunDetail } | { id: string; ok: false; error: ApiError };

/** Details of several runs, and what to let go of once they are committed. */
export interface DetailBatch {
  results: DetailResult[];
  /** Called after the batch's rows are committed (the worker removes its staged file). */
  release(): Promise<void>;
  /** Runs whose detail is still on its way: kept pending now, committed once `rest` brings them. */
  stragglers?: { ids: string[]; rest: Promise<DetailBatch> };
}

/** A detail is a straggler once on the wire this many times longer than answers usually take. */
export const STRAGGLER_FACTOR = 4;
export const STRAGGLER_MIN_MS = 500;

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
    : new DetailFetcher(deps.api, deps.settings.detailConcurrency, deps.signal, { stragglers: true });
}

export class DetailFetcher implements DetailSource {
  private readonly pool: FetchPool<RunDetail>;
  /** When each run's latest attempt went on the wire. */
  private readonly sentAt = new Map<string, number>();

  /**
   * `concurrency` in flight at least, more when the pace needs them; `shares` fetchers of the
   * process side by side split what it needs.
   */
  /**
   * `stragglers`: a page may go on without details still on their way (a walk, whose pipeline takes
   * them up later); off, every detail is waited for (a fetch job, which hands its batch on whole).
   */
  constructor(
    private readonly api: ApiClient,
    concurrency: number,
    signal: AbortSignal,
    private readonly o: { shares?: number; stragglers?: boolean } = {},
  ) {
    const shares = o.shares ?? 1;
    const get = (id: string, s: AbortSignal) =>
      api.getRun(id, { signal: s, onSend: () => this.sentAt.set(id, performance.now()) });
    this.pool = new FetchPool(get, api.inFlightBound(concurrency, shares), signal);
  }

  async fetch(ids: readonly string[]): Promise<DetailBatch> {
    const results: (DetailResult | undefined)[] = new Array(ids.length);
    let left = ids.length;
    let wake: (() => void) | null = null;
    const each = ids.map((id, i) =>
      this.pool.one(id).then((r) => {
        results[i] = r.ok ? { id: r.id, ok: true, detail: r.value } : r;
        this.sentAt.delete(id);
        left--;
        wake?.();
        return results[i] as DetailResult;
      }),
    );
    const all = Promise.all(each);
    while (left > 0 && this.o.stragglers) {
      const late = left < ids.length ? this.stragglersOf(ids, results) : null;
      if (late) return this.without(ids, late, results, each);
      const waitMs = left < ids.length ? this.stragglerAfterMs() / 4 : null;
      await new Promise<void>((r) => {
        wake = r;
        if (waitMs !== null) setTimeout(r, waitMs).unref();
      });
      wake = null;
    }
    await all;
    if (this.pool.failure !== null) throw this.pool.failure;
    return { results: results as DetailResult[], release: NOTHING_TO_RELEASE };
  }

  private stragglerAfterMs(): number {
    return Math.max(STRAGGLER_MIN_MS, STRAGGLER_FACTOR * (this.api.usualDetailMs() ?? 0));
  }

  /** The indexes still out, when every one of them is a straggler; else null. */
  private stragglersOf(ids: readonly string[], results: readonly (DetailResult | undefined)[]): number[] | null {
    const now = performance.now();
    const after = this.stragglerAfterMs();
    const out: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (results[i] !== undefined) continue;
      const sent = this.sentAt.get(ids[i] as string);
      if (sent === undefined || now - sent < after) return null;
      out.push(i);
    }
    return out;
  }

  private without(
    ids: readonly string[],
    late: readonly number[],
    results: readonly (DetailResult | undefined)[],
    each: readonly Promise<DetailResult>[],
  ): DetailBatch {
    if (this.pool.failure !== null) throw this.pool.failure;
    const out = new Set(late);
    const rest = Promise.all(late.map((i) => each[i] as Promise<DetailResult>)).then((r) => {
      if (this.pool.failure !== null) throw this.pool.failure;
      return { results: r, release: NOTHING_TO_RELEASE };
    });
    // Observed here: a failure that stops everything reaches the pipeline through the item.
    rest.catch(() => undefined);
    return {
      results: results.filter((_, i) => !out.has(i)) as DetailResult[],
      release: NOTHING_TO_RELEASE,
      stragglers: { ids: late.map((i) => ids[i] as string), rest },
    };
  }

  close(): void {
    this.pool.close();
  }
}
