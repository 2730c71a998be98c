import { statSync } from 'node:fs';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { ResourceSpec } from '../resources/types.ts';
import type { Logger } from '../util/logger.ts';
import { isLargerMemorySize, type MemoryBudget } from '../util/memory-budget.ts';
import { createInstance } from './duckdb-instance.ts';
import { firstLineOf, WarehouseCommitError } from './errors.ts';
import { isCheckpointShortOfMemory } from './out-of-memory.ts';
import { quoteLiteral, sqlRunner } from './sql.ts';
import type { CloseOptions, SqlRunner } from './types.ts';

// What an open warehouse handle does with its DuckDB instance: its work one call at a time, its
// transactions, the connections beside its own, its memory limit, a fresh instance after a failed
// commit, and the checkpoint it closes with.

/**
 * The largest write-ahead log a unit closing with `keepLog` leaves for the next opener. Every unit
 * opens the file afresh and replays that log into memory, beside the batches streaming in, so it
 * is kept to a few batches' worth: more checkpoints, each of a smaller log.
 */
export const KEEP_LOG_MAX = 16 * 1024 * 1024;

/** How long a handle opening its file again (after a failed commit) waits for another process. */
const RENEW_WAIT_MS = 10_000;

/** What a handle was opened with, fixed for its life. */
export interface HandleSetup {
  readonly file: string;
  readonly config: Record<string, string>;
  readonly budget: MemoryBudget;
  readonly logger: Logger;
  readonly readOnly: boolean;
}

/** A handle's state: the DuckDB instance in force and what its work has set. */
export interface Handle extends HandleSetup {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  current: SqlRunner;
  /** Runs on the connection in force: a failed commit replaces it (renew). */
  readonly db: SqlRunner;
  /** DuckDB's memory limit, as it was last set (see releaseFreed). */
  memoryLimit: string;
  resources: readonly ResourceSpec[];
  /** Connections of connect() still open. */
  lanes: number;
  /** Why the handle refuses work until its file is open again; null when it does not. */
  broken: string | null;
  closed: boolean;
  /** Settles when every serial() call so far has. */
  chain: Promise<unknown>;
}

export function newHandle(setup: HandleSetup, instance: DuckDBInstance, connection: DuckDBConnection): Handle {
  const h: Handle = {
    ...setup,
    instance,
    connection,
    current: sqlRunner(connection),
    db: {
      get connection() {
        return h.current.connection;
      },
      run: (sql, params) => h.current.run(sql, params),
      all: (sql, params) => h.current.all(sql, params),
    },
    memoryLimit: setup.config.memory_limit as string,
    resources: [],
    lanes: 0,
    broken: null,
    closed: false,
    chain: Promise.resolve(),
  };
  return h;
}

export async function setMemoryLimit(h: Handle, limit: string): Promise<void> {
  await h.db.run(`SET memory_limit = ${quoteLiteral(limit)}`);
  h.memoryLimit = limit;
}

/**
 * DuckDB's allocator (its own jemalloc) keeps the pages a statement freed for reuse, so after a
 * checkpoint the process holds far more than DuckDB itself still counts (duckdb_memory()). Setting
 * the memory limit, even to the value in force, makes DuckDB hand every freed page back (jemalloc's
 * purge of all arenas), at little cost. Done before a commit, whose automatic checkpoint then
 * starts from the batch's own memory, and after it. The limit is set again as it was given: DuckDB
 * shows it rounded down (96MB as '91.5 MiB'), and setting what it shows would lower it a little
 * every time. Only a release: the commit stands if it fails.
 */
export function releaseFreed(h: Handle): Promise<void> {
  return setMemoryLimit(h, h.memoryLimit).catch(() => undefined);
}

/** Closes the file and opens it again, with `limit` as DuckDB's memory limit. */
export async function openAfresh(h: Handle, limit = h.memoryLimit): Promise<void> {
  h.connection.closeSync();
  h.instance.closeSync();
  h.memoryLimit = limit;
  h.instance = await createInstance(h.file, { ...h.config, memory_limit: limit }, RENEW_WAIT_MS, undefined, undefined);
  h.connection = await h.instance.connect();
  h.current = sqlRunner(h.connection);
  await h.current.run(`SET TimeZone = 'UTC'`);
}

/**
 * A commit DuckDB fails (out of memory while writing the transaction to its log, or merging its
 * keys into an index) is taken out of the log again, but DuckDB may leave an index half merged
 * in memory: the next statement on that instance then finds it corrupt and invalidates the
 * database. So the handle takes a new instance, which reads the file and its log afresh, before
 * anything else runs; with connections of its own still open on the old one, it refuses further
 * work instead.
 */
async function renew(h: Handle, cause: unknown): Promise<void> {
  const error = firstLineOf(cause);
  await h.current.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
  // Until the file is open again (or for good, if it cannot be), nothing else may run.
  h.broken = `a commit failed (${error})`;
  if (h.lanes > 0) return;
  await openAfresh(h);
  h.broken = null;
  h.logger.warn({ file: h.file, error }, 'a commit failed; the warehouse was opened afresh');
}

export function serial<T>(h: Handle, fn: () => Promise<T>): Promise<T> {
  if (h.closed) return Promise.reject(new Error(`the warehouse ${h.file} is closed`));
  if (h.broken) return Promise.reject(new Error(`the warehouse ${h.file} must be opened again: ${h.broken}`));
  const next = h.chain.then(fn, fn);
  h.chain = next.catch(() => undefined);
  return next;
}

export function transaction<T>(h: Handle, fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
  return serial(h, async () => {
    await h.db.run('BEGIN TRANSACTION');
    // A schema change made in the transaction is forgotten with it.
    const held = h.resources;
    let committing = false;
    try {
      const out = await fn(h.db);
      await releaseFreed(h);
      committing = true;
      await h.db.run('COMMIT');
      committing = false;
      await releaseFreed(h);
      return out;
    } catch (e) {
      h.resources = held;
      if (!committing) {
        await h.db.run('ROLLBACK').catch(() => undefined);
        throw e;
      }
      await renew(h, e);
      throw new WarehouseCommitError(e);
    }
  });
}

/** Another connection to the instance in force, counted while open. */
export async function connectLane(h: Handle): Promise<SqlRunner & { close(): void }> {
  if (h.closed) throw new Error(`the warehouse ${h.file} is closed`);
  const other = await h.instance.connect();
  const runner = sqlRunner(other);
  try {
    await runner.run(`SET TimeZone = 'UTC'`);
  } catch (e) {
    other.closeSync();
    throw e;
  }
  h.lanes++;
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    h.lanes--;
    other.closeSync();
  };
  return { ...runner, close };
}

/**
 * Waits for the handle's work, checkpoints (unless the log is left to the next opener) and closes.
 * A checkpoint rewrites the metadata of every table it touches, which grows with the table, so a
 * checkpoint of a large warehouse costs far more than a batch of a few runs. A pass's batches
 * leave their log (durable already) to the next unit, and the pass's last unit checkpoints them
 * together.
 */
export async function closeHandle(h: Handle, options: CloseOptions): Promise<boolean> {
  if (h.closed) return false;
  await h.chain;
  h.closed = true;
  let checkpointed = false;
  if (!h.readOnly && !h.broken) {
    const log = logBytes(h.file);
    if (options.keepLog && log < KEEP_LOG_MAX) {
      await h.db.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
    } else {
      checkpointed = (await checkpointBeforeClose(h, log, options.mergeRowGroups !== false)) && log > 0;
    }
  }
  h.connection.closeSync();
  h.instance.closeSync();
  return checkpointed;
}

/**
 * Closing checkpoints the write-ahead log into the file, synchronously, on the JavaScript thread;
 * done here first, it runs on DuckDB's threads and the process keeps answering (its requests keep
 * their pace) meanwhile. Whether it was done.
 */
async function checkpointBeforeClose(h: Handle, log: number, merge: boolean): Promise<boolean> {
  const ample = log >= 2 * KEEP_LOG_MAX;
  let done = await checkpoint(h, ample, merge, !ample && h.lanes === 0);
  // Some checkpoints need more than loading's limit whatever their log's size: a pass's last one
  // folds in the open-run set rewritten, which on a large warehouse may not fit. The failed
  // checkpoint left DuckDB unusable; the file is opened afresh with the export's share, replays
  // the log, and the checkpoint is tried once more.
  if (done === 'short of memory') {
    done = await openAfresh(h, h.budget.exportMemoryLimit).then(
      () => checkpoint(h, true, merge, false),
      (e: unknown) => {
        h.logger.warn({ file: h.file, error: firstLineOf(e) }, 'the warehouse could not be opened again to checkpoint');
        return 'failed' as const;
      },
    );
  }
  if (done !== 'done') await h.db.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
  await releaseFreed(h);
  return done === 'done';
}

/**
 * A log is bounded by KEEP_LOG_MAX and one batch (a pass's batches checkpoint as it fills), and
 * is checkpointed within loading's limit, the pass's last unit's too: the export's share there
 * would make those checkpoints the peak of a long first sync. A log twice that size (a checkpoint
 * failed before it) gets the export's share (`ample`): a checkpoint that runs out of memory leaves
 * DuckDB unusable until the file is opened again. So one that runs out within loading's limit is
 * tried once more, with the export's share, on the file opened afresh (close). One that still
 * fails leaves the log to the next opener, which replays it; the close must not try it once more
 * on the instance it failed on, since a checkpoint failed there left a log that could no longer
 * be replayed. The limit goes back with the release that follows (releaseFreed).
 *
 * A table read from the file takes its next rows into a row group of their own, and a checkpoint
 * merges that with the partly filled one before it: with the file opened for every batch, each
 * checkpoint would rewrite the last row group of every table, up to a full one, however few rows
 * it added. `merge: false` holds DuckDB's merging (its vacuum tasks) for one checkpoint, which then
 * writes only what the log added; a later one merges the small row groups that leaves in one go.
 * `retry`: a failure for want of memory is told to the caller, which tries again, rather than
 * logged as final.
 */
async function checkpoint(h: Handle, ample: boolean, merge: boolean, retry: boolean): Promise<CheckpointOutcome> {
  const limit = h.memoryLimit;
  const raise = ample && isLargerMemorySize(h.budget.exportMemoryLimit, limit);
  try {
    if (raise) await setMemoryLimit(h, h.budget.exportMemoryLimit);
    if (!merge) await h.db.run('SET max_vacuum_tasks = 0');
    await h.db.run('CHECKPOINT');
    return 'done';
  } catch (e) {
    const error = firstLineOf(e);
    if (retry && isCheckpointShortOfMemory(error)) {
      h.logger.debug({ file: h.file, error }, "a checkpoint did not fit loading's memory limit; trying it with more");
      return 'short of memory';
    }
    h.logger.warn({ file: h.file, error }, 'the write-ahead log was not checkpointed; the next open replays it');
    return 'failed';
  } finally {
    h.memoryLimit = limit;
    if (!merge) await h.db.run('RESET max_vacuum_tasks').catch(() => undefined);
  }
}

type CheckpointOutcome = 'done' | 'short of memory' | 'failed';

function logBytes(file: string): number {
  try {
    return statSync(`${file}.wal`).size;
  } catch {
    return 0;
  }
}
