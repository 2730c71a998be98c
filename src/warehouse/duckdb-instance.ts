import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { lockErrorOf, type WarehouseLockedError } from './errors.ts';

// Creating the DuckDB instance of a warehouse file: a file held by another process is retried for
// lockWaitMs and then given as a WarehouseLockedError, never DuckDB's raw IO error.

/** The instance of `file`, retried while another process holds the file (up to `lockWaitMs`). */
export async function createInstance(
  file: string,
  config: Record<string, string>,
  lockWaitMs: number,
  onLocked: ((e: WarehouseLockedError) => void) | undefined,
  signal: AbortSignal | undefined,
): Promise<DuckDBInstance> {
  const deadline = Date.now() + lockWaitMs;
  const creatingUntil = Date.now() + BEING_CREATED_MS;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await DuckDBInstance.create(file, config);
    } catch (e) {
      if (beingCreated(e, file) && Date.now() < creatingUntil) {
        await sleep(delay);
        continue;
      }
      const locked = lockErrorOf(e, file);
      if (!locked) throw e;
      if (Date.now() + delay > deadline) throw locked;
      onLocked?.(locked);
      if (signal?.aborted) throw signal.reason ?? locked;
      await sleep(delay, undefined, signal ? { signal } : {}).catch(() => {
        throw signal?.reason ?? locked;
      });
    }
  }
}

/** How long a file another process is still creating may be waited for. */
const BEING_CREATED_MS = 5_000;

/**
 * Two processes opening a warehouse that does not exist yet: one creates the file, and the other
 * may find it before its header is written, which DuckDB reports as not a database. A file that
 * young and that short is waited for; an old or full-sized one is really not a database.
 */
function beingCreated(e: unknown, file: string): boolean {
  if (!/not a valid DuckDB database file/i.test(String((e as Error)?.message ?? e))) return false;
  try {
    const st = statSync(file);
    return st.size < 64 * 1024 && Date.now() - st.mtimeMs < BEING_CREATED_MS;
  } catch {
    return true;
  }
}
