// Listing and fetching run ahead of loading: the producer pushes work items whose details are
// still arriving; the committer takes them strictly in order, and every item already complete
// behind the first goes into the same commit, so loads grow when the warehouse is the slow side and
// the API budget never waits on DuckDB. An item whose details failed fatally stops the pipeline
// after everything before it is committed: work is kept up to the last good page.

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
  const queue: { item: T; settled: boolean; failure: unknown }[] = [];
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

  const push = async (item: T): Promise<void> => {
    // Handlers first: the item's fetches are already under way, and a failure while it waits
    // for room must not go unobserved.
    const entry = { item, settled: false, failure: null as unknown };
    item.ready.then(
      () => {
        entry.settled = true;
        wake('committer');
      },
      (e: unknown) => {
        entry.settled = true;
        entry.failure = e ?? new Error('failed');
        wake('committer');
      },
    );
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
      const head = queue[0];
      if (!head) {
        if (produced) break;
        await new Promise<void>((r) => (wakeCommitter = r));
        continue;
      }
      if (!head.settled) {
        await new Promise<void>((r) => (wakeCommitter = r));
        continue;
      }
      let n = 0;
      while (n < queue.length && queue[n]?.settled && queue[n]?.failure === null) n++;
      const batch = queue.splice(0, n);
      for (const b of batch) load -= weigh(b.item);
      wake('producer');
      if (batch.length) await commit(batch.map((b) => b.item));
      const failed = queue[0];
      if (failed?.settled && failed.failure !== null) throw failed.failure;
    }
    if (produceError !== null) throw produceError;
  } catch (e) {
    controller.abort(e);
    wake('producer');
    await producer;
    // The items still queued are dropped; their fetches end with the abort.
    await Promise.allSettled(queue.map((q) => q.item.ready));
    throw e;
  } finally {
    options.signal.removeEventListener('abort', onAbort);
  }
  await producer;
}
