// One giant record never stops a pass. When DuckDB fails on what a batch holds (a payload too
// large for its memory, a value it cannot convert), the batch is loaded in halves, the batch's
// bookkeeping with the later half so it commits only once everything before it has; a payload
// that ran out of memory alone is tried once more with more memory; then it is refused (kept
// aside with why, and tried again by later passes). Failures of the warehouse itself (a lock, a
// full disk) are not the batch's: they are thrown.

export interface SplitSteps<T, R> {
  /** Loads `items`; `last` is true for the part that carries the batch's bookkeeping. */
  load(items: readonly T[], last: boolean, memoryLimit: string | undefined): Promise<R>;
  /** Keeps aside a payload that cannot be loaded even alone with more memory. */
  refuse(item: T, error: Error, last: boolean): Promise<R>;
  /** The results of two parts, the earlier first, as one. */
  combine(first: R, second: R): R;
  /** Whether the failure comes from what the batch holds rather than from the warehouse. */
  heldByBatch(error: unknown): error is Error;
  /** Whether the failure is a want of memory, which more memory may cure. */
  outOfMemory(error: unknown): boolean;
  /** The memory a payload alone is given for its last try. */
  outsizedMemory: string;
  onHalves?(size: number, error: Error): void;
  onAlone?(item: T, error: Error): void;
  onRefused?(item: T, error: Error): void;
}

export async function loadSplitting<T, R>(
  items: readonly T[],
  steps: SplitSteps<T, R>,
  last = true,
  memoryLimit?: string,
): Promise<R> {
  try {
    return await steps.load(items, last, memoryLimit);
  } catch (e) {
    if (!steps.heldByBatch(e) || items.length === 0) throw e;
    if (items.length > 1) {
      steps.onHalves?.(items.length, e);
      const half = Math.ceil(items.length / 2);
      const first = await loadSplitting(items.slice(0, half), steps, false, memoryLimit);
      const second = await loadSplitting(items.slice(half), steps, last, memoryLimit);
      return steps.combine(first, second);
    }
    const item = items[0] as T;
    if (memoryLimit === undefined && steps.outOfMemory(e)) {
      steps.onAlone?.(item, e);
      return loadSplitting(items, steps, last, steps.outsizedMemory);
    }
    steps.onRefused?.(item, e);
    return steps.refuse(item, e, last);
  }
}
