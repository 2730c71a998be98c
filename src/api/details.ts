import { setMaxListeners } from 'node:events';
import { ApiError, AuthError, PermissionError } from './errors.ts';
import { DEFAULT_IN_FLIGHT } from './in-flight.ts';

// Fetching many records by id under one bound on requests in flight. The budget, not this bound,
// sets the pace; the bound only keeps enough requests waiting on it. A failure that concerns one
// item (not found, invalid record, retries exhausted) is that item's result; one that concerns
// them all (the key refused, the scope missing, the caller's abort) stops every fetch of the pool.

export type ItemResult<T> = { id: string; ok: true; value: T } | { id: string; ok: false; error: ApiError };

export type FetchOne<T> = (id: string, signal: AbortSignal) => Promise<T>;

/** Requests in flight at most: a number, or read afresh each time a request would start. */
export type InFlightBound = number | (() => number);

function stopsEverything(e: unknown): boolean {
  return e instanceof AuthError || e instanceof PermissionError || !(e instanceof ApiError);
}

/** Fetches by id, at most `concurrency` at once across every caller of one(). */
export class FetchPool<T> {
  private active = 0;
  private readonly bound: () => number;
  private readonly waiting: (() => void)[] = [];
  private readonly controller = new AbortController();
  private stopped: unknown = null;
  private readonly onOuterAbort: () => void;

  constructor(
    private readonly get: FetchOne<T>,
    concurrency: InFlightBound,
    private readonly outer?: AbortSignal,
  ) {
    this.bound = boundOf(concurrency);
    // Every request in flight listens on the pool's signal, waiting for its turn and on the wire;
    // how many there are is the bound's to say.
    setMaxListeners(0, this.controller.signal);
    this.onOuterAbort = () => this.stop(outer?.reason);
    if (outer?.aborted) this.stop(outer.reason);
    else outer?.addEventListener('abort', this.onOuterAbort, { once: true });
  }

  /** Requests it lets be in flight now. */
  get limit(): number {
    return this.bound();
  }

  /** Why the pool stopped (a failure that concerns every item, or the caller's abort); null while it runs. */
  get failure(): unknown {
    return this.stopped;
  }

  async one(id: string): Promise<ItemResult<T>> {
    await this.slot();
    try {
      if (this.stopped !== null) return { id, ok: false, error: this.stopped as ApiError };
      return { id, ok: true, value: await this.get(id, this.controller.signal) };
    } catch (e) {
      if (!stopsEverything(e) && !this.controller.signal.aborted) return { id, ok: false, error: e as ApiError };
      this.stop(this.outer?.aborted ? this.outer.reason : e);
      return { id, ok: false, error: e as ApiError };
    } finally {
      this.release();
    }
  }

  /** Every id's result, in the order given; rejects when a failure stops everything. */
  async all(ids: readonly string[]): Promise<ItemResult<T>[]> {
    const results = await Promise.all(ids.map((id) => this.one(id)));
    if (this.stopped !== null) throw this.stopped;
    return results;
  }

  close(): void {
    this.outer?.removeEventListener('abort', this.onOuterAbort);
    this.controller.abort();
  }

  private stop(reason: unknown): void {
    if (this.stopped === null) this.stopped = reason ?? new Error('stopped');
    this.controller.abort();
  }

  private async slot(): Promise<void> {
    // Callers queued first go first, also when the bound has risen since they queued.
    if (this.waiting.length === 0 && this.active < this.bound()) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the freed slot on, and as many more as a bound risen since allows. */
  private release(): void {
    this.active--;
    const bound = this.bound();
    while (this.waiting.length > 0 && this.active < bound) {
      this.active++;
      (this.waiting.shift() as () => void)();
    }
  }
}

/** A bound checked once: a number must be a positive integer, a function is read as it goes. */
function boundOf(concurrency: InFlightBound): () => number {
  if (typeof concurrency === 'function')
    return () => {
      const n = Math.floor(concurrency());
      return Number.isFinite(n) && n >= 1 ? n : 1;
    };
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('concurrency must be a positive integer');
  return () => concurrency;
}

export interface ConcurrentFetchOptions {
  /** Requests in flight at most; default DEFAULT_IN_FLIGHT. */
  concurrency?: InFlightBound;
  signal?: AbortSignal;
}

/**
 * Fetches the ids of a source as it yields them, through one pool, yielding each result as it
 * arrives (not in input order); ends, rejecting, when the pool stops. Stopping early cancels what
 * is in flight.
 */
export async function* fetchConcurrently<T>(
  ids: Iterable<string> | AsyncIterable<string>,
  get: FetchOne<T>,
  options: ConcurrentFetchOptions = {},
): AsyncGenerator<ItemResult<T>> {
  const outer = options.signal;
  if (outer?.aborted) throw outer.reason;
  const pool = new FetchPool(get, options.concurrency ?? DEFAULT_IN_FLIGHT, outer);
  const source: Iterator<string> | AsyncIterator<string> =
    Symbol.asyncIterator in ids ? ids[Symbol.asyncIterator]() : (ids as Iterable<string>)[Symbol.iterator]();
  const inflight = new Map<number, Promise<[number, ItemResult<T>]>>();
  let seq = 0;
  let exhausted = false;
  try {
    for (;;) {
      while (!exhausted && inflight.size < pool.limit && pool.failure === null) {
        const next = await source.next();
        if (next.done) exhausted = true;
        else {
          const key = seq++;
          inflight.set(
            key,
            pool.one(next.value).then((r) => [key, r]),
          );
        }
      }
      if (pool.failure !== null) throw pool.failure;
      if (inflight.size === 0) return;
      const [key, result] = await Promise.race(inflight.values());
      inflight.delete(key);
      if (pool.failure !== null) throw pool.failure;
      yield result;
    }
  } finally {
    pool.close();
    await Promise.allSettled(inflight.values());
    if (!exhausted) await source.return?.();
  }
}
