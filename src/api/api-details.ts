import { ApiError, AuthError, PermissionError } from './api-errors.ts';

// Fetches many details at once, as many in flight as `concurrency` allows, yielding each as it
// arrives (not in input order). The budget, not this loop, sets the pace. A failure that concerns
// one item (not found, invalid record, retries exhausted) is yielded for the caller to record; one
// that concerns them all (the key refused, the scope missing, the caller's abort) ends the loop.

export type ItemResult<T> = { id: string; ok: true; value: T } | { id: string; ok: false; error: ApiError };

export interface ConcurrentFetchOptions {
  /** Requests in flight at most; default 8. */
  concurrency?: number;
  signal?: AbortSignal;
}

function stopsEverything(e: unknown): boolean {
  return e instanceof AuthError || e instanceof PermissionError || !(e instanceof ApiError);
}

export async function* fetchConcurrently<T>(
  ids: Iterable<string> | AsyncIterable<string>,
  get: (id: string, signal: AbortSignal) => Promise<T>,
  options: ConcurrentFetchOptions = {},
): AsyncGenerator<ItemResult<T>> {
  const concurrency = options.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('concurrency must be a positive integer');
  const controller = new AbortController();
  const outer = options.signal;
  const onAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) throw outer.reason;
  outer?.addEventListener('abort', onAbort, { once: true });

  const source: Iterator<string> | AsyncIterator<string> =
    Symbol.asyncIterator in ids ? ids[Symbol.asyncIterator]() : (ids as Iterable<string>)[Symbol.iterator]();
  const inflight = new Map<number, Promise<[number, ItemResult<T> | { id: string; ok: false; error: unknown }]>>();
  let seq = 0;
  let exhausted = false;
  try {
    for (;;) {
      if (outer?.aborted) throw outer.reason;
      while (!exhausted && inflight.size < concurrency) {
        const next = await source.next();
        if (outer?.aborted) throw outer.reason;
        if (next.done) {
          exhausted = true;
          break;
        }
        const key = seq++;
        const id = next.value;
        inflight.set(
          key,
          get(id, controller.signal).then(
            (value) => [key, { id, ok: true, value }],
            (error: unknown) => [key, { id, ok: false, error }],
          ),
        );
      }
      if (inflight.size === 0) return;
      const [key, result] = await Promise.race(inflight.values());
      inflight.delete(key);
      if (!result.ok && (outer?.aborted || stopsEverything(result.error))) {
        throw outer?.aborted ? outer.reason : result.error;
      }
      yield result as ItemResult<T>;
    }
  } finally {
    outer?.removeEventListener('abort', onAbort);
    controller.abort();
    await Promise.allSettled(inflight.values());
    if (!exhausted) await source.return?.();
  }
}
