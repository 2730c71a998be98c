import { isOutOfMemory } from './out-of-memory.ts';
import type { SqlRunner, Warehouse } from './types.ts';

// Bulk work (a rebuild's inserts, an export's files) on several connections side by side. DuckDB
// runs a statement on the thread that asked for it, so statements of their own keep the cores busy
// where one statement's threads would wait on each other (a Parquet file is written, and a table's
// row groups compressed, on one thread at a time).

export interface Lanes<J> {
  /** Connections, each with a statement of its own at a time. */
  lanes: number;
  /** Jobs of one key never run at once (two appends to one table at once can corrupt it in DuckDB 1.5). */
  key?: (job: J) => string;
}

/**
 * Runs every job on one of `lanes` connections of its own. A job that runs out of memory is left
 * undone and returned, to be done again alone with more; any other failure stops the lanes and is
 * thrown once every lane has finished its job in hand, so no statement is left running.
 */
export async function inLanes<J>(
  wh: Warehouse,
  jobs: readonly J[],
  { lanes, key }: Lanes<J>,
  run: (db: SqlRunner, job: J) => Promise<void>,
): Promise<J[]> {
  const pending = [...jobs];
  const busy = new Set<string>();
  const outsized: J[] = [];
  let failure: { error: unknown } | null = null;
  const waiting: (() => void)[] = [];
  const take = async (): Promise<J | null> => {
    for (;;) {
      if (failure || pending.length === 0) return null;
      const at = key ? pending.findIndex((j) => !busy.has(key(j))) : 0;
      if (at >= 0) {
        const [job] = pending.splice(at, 1) as [J];
        if (key) busy.add(key(job));
        return job;
      }
      await new Promise<void>((wake) => waiting.push(wake));
    }
  };
  const lane = async () => {
    let conn: Awaited<ReturnType<Warehouse['connect']>>;
    try {
      conn = await wh.connect();
    } catch (e) {
      failure ??= { error: e };
      for (const wake of waiting.splice(0)) wake();
      return;
    }
    try {
      for (let job = await take(); job !== null; job = await take()) {
        try {
          await run(conn, job);
        } catch (e) {
          if (isOutOfMemory(e)) outsized.push(job);
          else failure ??= { error: e };
        } finally {
          if (key) busy.delete(key(job));
          for (const wake of waiting.splice(0)) wake();
        }
      }
    } finally {
      conn.close();
    }
  };
  // Every lane is waited for, one that failed to start too, so no statement is left running.
  await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(lanes, jobs.length)) }, lane));
  if (failure) throw (failure as { error: unknown }).error;
  return outsized;
}
