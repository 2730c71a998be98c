// Listing and fetching run ahead of loading: the producer pushes work items whose details are
// still arriving; the committer takes them strictly in order, and every item already complete
// behind the first goes into the same commit, so loads grow when the warehouse is the slow side and
// the API budget never waits on DuckDB. An item whose details failed fatally stops the pipeline
// after everything before it is committed: work is kept up to the last good page.
//
// An item may leave part of its work to a follow-up (`followUp`: details of a page that are still
// on their way, kept pending by the page's commit). Follow-ups hold no place in the order: each is
// committed with whatever commit comes once it is ready, and the pipeline ends when they are all in.

export interface PipelineItem {
  /** Settles when the item's fetches are done; rejects when they failed fatally. */
  ready: Promise<unknown>;
}

export interface PipelineOptions<T> {
  /** Items produced ahead of the commits (backpressure), counted by `weight`. */
  ahead: number;
  signal: AbortSignal;
  /** The room an item takes of `ahead` (default 1). */
  weight?: (item: T) => number;
  /** The work an item left for later, once its `ready` gave `value`; null when none. */
  followUp?: (item: T, value: unknown) => T | null;
}

interface Entry<T> {
  item: T;
  settled: boolean;
  failure: unknown;
}

export async function runPipeline<T extends PipelineItem>(
  produce: (push: (item: T) => Promise<void>, signal: AbortSignal) => Promise<void>,
  commit: (items: T[]) => Promise<void>,
  options: PipelineOptions<T>,
): Promise<void> {
  const weigh = options.weight ?? (() => 1);
  let load = 0;
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal.reason);
  // A signal aborted before the pipeline began fires no event: it stops at once.
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  const queue: Entry<T>[] = [];
  const loose: Entry<T>[] = [];
  let produced = false;
  let produceError: unknown = null;
  let wakeCommitter: (() => void) | null = null;
  let wakeProducer: (() => void) | null = null;
  const wake = (which: 'committer' | 'producer') => {
    const w = which === 'committer' ? wakeCommitter : wakeProducer;
    if (which === 'committer') wakeCommitter = null;
    else wakeProducer = null;
    w?.();
  };

  const watch = (item: T): Entry<T> => {
    const entry: Entry<T> = { item, settled: false, failure: null };
    item.ready.then(
      (value) => {
        const later = options.followUp?.(item, value) ?? null;
        if (later) loose.push(watch(later));
        entry.settled = true;
        wake('committer');
      },
      (e: unknown) => {
        entry.settled = true;
        entry.failure = e ?? new Error('failed');
        wake('committer');
      },
    );
    return entry;
  };

  const push = async (item: T): Promise<void> => {
    // Handlers first: the item's fetches are already under way, and a failure while it waits
    // for room must not go unobserved.
    const entry = watch(item);
    while (load >= options.ahead && !controller.signal.aborted) {
      await new Promise<void>((r) => (wakeProducer = r));
    }
    if (controller.signal.aborted) throw controller.signal.reason;
    queue.push(entry);
    load += weigh(item);
    wake('committer');
  };

  const producer = produce(push, controller.signal).then(
    () => {
      produced = true;
      wake('committer');
    },
    (e: unknown) => {
      produced = true;
      produceError = e ?? new Error('failed');
      wake('committer');
    },
  );

  try {
    for (;;) {
      let n = 0;
      while (n < queue.length && queue[n]?.settled && queue[n]?.failure === null) n++;
      const done = (e: Entry<T>) => e.settled && e.failure === null;
      const later = loose.filter(done);
      if (n === 0 && later.length === 0) {
        const failed = queue[0]?.settled ? queue[0] : loose.find((e) => e.settled);
        if (failed) throw failed.failure;
        if (produced && queue.length === 0 && loose.length === 0) break;
        await new Promise<void>((r) => (wakeCommitter = r));
        continue;
      }
      const batch = queue.splice(0, n);
      for (const b of batch) load -= weigh(b.item);
      loose.splice(0, loose.length, ...loose.filter((e) => !done(e)));
      wake('producer');
      await commit([...batch, ...later].map((b) => b.item));
    }
    if (produceError !== null) throw produceError;
  } catch (e) {
    controller.abort(e);
    wake('producer');
    await producer;
    // The items still queued are dropped; their fetches end with the abort.
    await Promise.allSettled([...queue, ...loose].map((q) => q.item.ready));
    throw e;
  } finally {
    options.signal.removeEventListener('abort', onAbort);
  }
  await producer;
}
