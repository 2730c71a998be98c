import { firstLineOf, WarehouseCommitError } from './errors.ts';
import type { SqlRunner, Warehouse } from './types.ts';

// A batch, a chunk or a file whose payloads are beyond the usual memory (a tool output of many
// megabytes) is done again, once, with room for it, rather than failing the whole operation.

/** The memory a unit of work that failed for lack of it is done again with. */
export const OUTSIZED_MEMORY_LIMIT = '2GB';

/** DuckDB out of memory, in a statement or in the commit (which writes the batch to its log). */
export function isOutOfMemory(e: unknown): boolean {
  return (
    e instanceof Error &&
    (e.message.startsWith('Out of Memory Error') ||
      /^TransactionContext Error: Failed to commit: failed to (pin|allocate)/.test(e.message))
  );
}

/**
 * A checkpoint DuckDB gave up for want of memory: a block that fit neither its memory limit nor its
 * temporary files. DuckDB words it inside a FATAL error rather than as an Out of Memory Error.
 */
export function isCheckpointShortOfMemory(message: string): boolean {
  return /out of memory|failed to pin block|failed to offload/i.test(message);
}

/** An open whose replay of the write-ahead log ran out of memory (its commit or a block it needed). */
export function isReplayShortOfMemory(message: string): boolean {
  return (
    /Failure while replaying WAL/i.test(message) &&
    (isCheckpointShortOfMemory(message) || /(failed to|could not) allocate/i.test(message))
  );
}

/**
 * Runs `work` in a transaction; one that runs out of memory, or whose commit DuckDB refuses, is
 * said in the log (`fields`, `what`) and run again, once, with OUTSIZED_MEMORY_LIMIT. The commit
 * needs that room too (it writes the work to the log), so the limit is restored after it.
 */
export async function transactionWithRoom<R>(
  wh: Warehouse,
  work: (tx: SqlRunner) => Promise<R>,
  fields: Record<string, unknown>,
  what: string,
): Promise<R> {
  try {
    return await wh.transaction(work);
  } catch (e) {
    // A refused commit is mostly memory too, though DuckDB may name what failed undoing it instead.
    if (!isOutOfMemory(e) && !(e instanceof WarehouseCommitError)) throw e;
    wh.logger.warn({ ...fields, error: (e as Error).message, memoryLimit: OUTSIZED_MEMORY_LIMIT }, what);
    let limit: string | null = null;
    try {
      return await wh.transaction(async (tx) => {
        limit = wh.memoryLimit;
        await wh.setMemoryLimit(OUTSIZED_MEMORY_LIMIT);
        return work(tx);
      });
    } finally {
      const restore = limit;
      // What the work loaded may not fit the usual limit (an index it grew): DuckDB then refuses
      // to lower it, and the handle keeps the room until it is closed rather than fail the work.
      if (restore !== null)
        await wh
          .serial(() => wh.setMemoryLimit(restore))
          .catch((e: unknown) =>
            wh.logger.warn(
              { ...fields, error: firstLineOf(e), memoryLimit: wh.memoryLimit },
              'the memory limit stays raised until the warehouse is closed',
            ),
          );
    }
  }
}
