import { existsSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { fileArchive } from '../archive/sink.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { silentLogger } from '../util/logger.ts';
import { defaultMemoryBudget, type MemoryBudget, parseMemorySize } from '../util/memory-budget.ts';
import type { Micros } from '../util/timestamp.ts';
import {
  firstLineOf,
  lockErrorOf,
  WarehouseCommitError,
  WarehouseLockedError,
  WarehouseSchemaError,
} from './errors.ts';
import { defaultMigrationsDir, migrate, pendingMigrations, readSchemaFiles } from './migrate.ts';
import { isCheckpointShortOfMemory } from './out-of-memory.ts';
import { readResources } from './schema.ts';
import { quoteLiteral, sqlRunner } from './sql.ts';
import { DB_FILE, type SqlRunner, type Warehouse, type WarehouseOptions } from './types.ts';

// Opens <dir>/runsync.duckdb, migrating it when writable. A file held by another process gives a
// WarehouseLockedError (after lockWaitMs of retries), never DuckDB's raw IO error.

// What DuckDB may hold (table data not yet checkpointed, staging, caches) and its threads come
// from the process's memory budget (src/util/memory-budget.ts): at the default 400MB, a memory_limit
// of 64MB while loading, which DuckDB spills beyond (a batch that still does not fit is merged
// again with more, see load-runs.ts), and the export's larger one for its run, since a day's rows
// are sorted and buffered per thread as whole row groups. The figures behind the shares are in the
// README's Performance section. A checkpoint that merges row groups rewrites the last, partly
// filled one of every table it touches, so a pass's batches merge only now and then (close).
export const DEFAULT_MEMORY_LIMIT = defaultMemoryBudget().duckdbMemoryLimit;
/** Write-ahead log size at which a commit checkpoints. */
export const CHECKPOINT_THRESHOLD = '128MB';
/**
 * The largest write-ahead log a unit closing with `keepLog` leaves for the next opener. Every unit
 * opens the file afresh and replays that log into memory, beside the batches streaming in, so it
 * is kept to a few batches' worth: more checkpoints, each of a smaller log.
 */
export const KEEP_LOG_MAX = 16 * 1024 * 1024;

function logBytes(file: string): number {
  try {
    return statSync(`${file}.wal`).size;
  } catch {
    return 0;
  }
}

/**
 * DuckDB's threads while loading: one core fewer than the machine has (within the budget).
 * Loading keeps the JavaScript side busy (checking payloads, writing the raw archive) while DuckDB
 * merges; with every core given to DuckDB as well, the two contend and DuckDB's extra thread
 * burns CPU without finishing sooner. The export, when JavaScript waits, takes every core.
 */
export function defaultThreads(budget: MemoryBudget = defaultMemoryBudget()): number {
  return budget.threads;
}

export function exportThreads(budget: MemoryBudget = defaultMemoryBudget()): number {
  return budget.exportThreads;
}

/** Wall-clock microseconds (Date alone has only milliseconds). */
export function systemMicros(): Micros {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

export async function openWarehouse(dir: string, options: WarehouseOptions = {}): Promise<Warehouse> {
  const root = resolve(dir);
  const file = join(root, DB_FILE);
  const readOnly = options.readOnly ?? false;
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? systemMicros;
  const budget = options.budget ?? defaultMemoryBudget();
  if (readOnly && !existsSync(file)) throw new WarehouseSchemaError(`there is no warehouse at ${file}`);
  if (!readOnly) await mkdir(root, { recursive: true, mode: 0o700 });

  // A checkpoint rewrites table data into the file; at DuckDB's default (16 MB of WAL) a bulk load
  // checkpoints after nearly every batch. Closing the warehouse checkpoints anyway. The memory
  // limit keeps a long-running worker's footprint flat however large the warehouse grows
  // (DuckDB's own default is 80% of RAM); DuckDB spills beyond it.
  //
  // DuckDB's allocator keeps what its threads freed, up to allocator_flush_threshold a thread, and
  // hands it back to the system only when told: a checkpoint merges and compresses one table after
  // another, and what each freed stayed resident through the rest. A threshold from the budget and
  // the allocator's background threads, which return freed pages as they age, keep the process
  // near what DuckDB holds.
  const config: Record<string, string> = {
    checkpoint_threshold: CHECKPOINT_THRESHOLD,
    allocator_flush_threshold: budget.allocatorFlushThreshold,
    allocator_background_threads: 'true',
    memory_limit: options.memoryLimit ?? budget.duckdbMemoryLimit,
    ...options.duckdb,
    access_mode: readOnly ? 'READ_ONLY' : 'READ_WRITE',
  };
  config.threads = String(options.threads ?? budget.threads);
  let instance = await createInstance(file, config, options.lockWaitMs ?? 0, options.onLocked, options.signal);
  let connection = await instance.connect();
  let current = sqlRunner(connection);
  // The handle's statements go to the connection in force: a failed commit replaces it (below).
  const db: SqlRunner = {
    get connection() {
      return current.connection;
    },
    run: (sql, params) => current.run(sql, params),
    all: (sql, params) => current.all(sql, params),
  };
  let resources: readonly ResourceSpec[];
  try {
    await db.run(`SET TimeZone = 'UTC'`);
    const schema = await readSchemaFiles(options.migrationsDir ?? defaultMigrationsDir());
    if (readOnly) {
      const pending = await pendingMigrations(db, schema.migrations, logger);
      if (pending.length)
        throw new WarehouseSchemaError(
          `the warehouse ${file} needs schema migrations (${pending.map((m) => m.name).join(', ')});` +
            ' open it once for writing',
        );
    } else {
      await migrate(db, schema, logger, now);
    }
    resources = await readResources(db);
  } catch (e) {
    connection.closeSync();
    instance.closeSync();
    throw e;
  }

  // DuckDB's allocator (its own jemalloc) keeps the pages a statement freed for reuse: after a
  // checkpoint the process held 150-200 MB that DuckDB itself no longer counted (duckdb_memory()
  // 35 MB). Setting the memory limit, even to the value in force, makes DuckDB hand every freed
  // page back (jemalloc's purge of all arenas), in about 5 ms. Done before a commit, whose
  // automatic checkpoint then starts from the batch's own memory, and after it. The limit is set
  // again as it was given: DuckDB shows it rounded down (96MB as '91.5 MiB'), and setting what it
  // shows would lower it a little every time. Only a release: the commit stands if it fails.
  let memoryLimit = config.memory_limit as string;
  const setMemoryLimit = async (limit: string) => {
    await db.run(`SET memory_limit = ${quoteLiteral(limit)}`);
    memoryLimit = limit;
  };
  const releaseFreed = () => setMemoryLimit(memoryLimit).catch(() => undefined);

  // A commit DuckDB fails (out of memory while writing the transaction to its log, or merging its
  // keys into an index) is taken out of the log again, but DuckDB may leave an index half merged
  // in memory: the next statement on that instance then finds it corrupt and invalidates the
  // database. So the handle takes a new instance, which reads the file and its log afresh, before
  // anything else runs; with connections of its own still open on the old one, it refuses further
  // work instead.
  let lanes = 0;
  let broken: string | null = null;
  const renew = async (cause: unknown) => {
    const error = firstLineOf(cause);
    await current.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
    // Until the file is open again (or for good, if it cannot be), nothing else may run.
    broken = `a commit failed (${error})`;
    if (lanes > 0) return;
    await openAfresh();
    broken = null;
    logger.warn({ file, error }, 'a commit failed; the warehouse was opened afresh');
  };

  const openAfresh = async (limit = memoryLimit) => {
    connection.closeSync();
    instance.closeSync();
    memoryLimit = limit;
    instance = await createInstance(file, { ...config, memory_limit: limit }, RENEW_WAIT_MS, undefined, undefined);
    connection = await instance.connect();
    current = sqlRunner(connection);
    await current.run(`SET TimeZone = 'UTC'`);
  };

  // A log is bounded by KEEP_LOG_MAX and one batch (a pass's batches checkpoint as it fills), and
  // is checkpointed within loading's limit, the pass's last unit's too: the export's share there
  // was what the first sync of a million runs peaked on. A log twice that size (a checkpoint failed
  // before it) gets the export's share: a checkpoint that runs out of memory leaves DuckDB unusable
  // until the file is opened again. So one that runs out within loading's limit is tried once
  // more, with the export's share, on the file opened afresh (close). One that still fails leaves
  // the log to the next opener, which replays it; the close must not try it once more on the
  // instance it failed on, since a checkpoint failed there left a log that could no longer be
  // replayed.
  // The limit goes back with the release that follows (releaseFreed).
  //
  // A table read from the file takes its next rows into a row group of their own, and a checkpoint
  // merges that with the partly filled one before it: with the file opened for every batch, each
  // checkpoint rewrote the last row group of every table, up to a full one, however few rows it
  // added. `merge: false` holds DuckDB's merging (its vacuum tasks) for one checkpoint, which then
  // writes only what the log added; a later one merges the small row groups that leaves in one go.
  // `retry`: a failure for want of memory is told to the caller, which tries again, rather than
  // logged as final.
  const checkpoint = async (ample: boolean, merge: boolean, retry: boolean): Promise<CheckpointOutcome> => {
    const limit = memoryLimit;
    const raise = ample && (parseMemorySize(budget.exportMemoryLimit) ?? 0) > (parseMemorySize(limit) ?? Infinity);
    try {
      if (raise) await setMemoryLimit(budget.exportMemoryLimit);
      if (!merge) await db.run('SET max_vacuum_tasks = 0');
      await db.run('CHECKPOINT');
      return 'done';
    } catch (e) {
      const error = firstLineOf(e);
      if (retry && isCheckpointShortOfMemory(error)) {
        logger.debug({ file, error }, "a checkpoint did not fit loading's memory limit; trying it with more");
        return 'short of memory';
      }
      logger.warn({ file, error }, 'the write-ahead log was not checkpointed; the next open replays it');
      return 'failed';
    } finally {
      memoryLimit = limit;
      if (!merge) await db.run('RESET max_vacuum_tasks').catch(() => undefined);
    }
  };

  let chain: Promise<unknown> = Promise.resolve();
  let closed = false;
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new Error(`the warehouse ${file} is closed`));
    if (broken) return Promise.reject(new Error(`the warehouse ${file} must be opened again: ${broken}`));
    const next = chain.then(fn, fn);
    chain = next.catch(() => undefined);
    return next;
  };
  const transaction = <T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> =>
    serial(async () => {
      await db.run('BEGIN TRANSACTION');
      // A schema change made in the transaction is forgotten with it.
      const held = resources;
      let committing = false;
      try {
        const out = await fn(db);
        await releaseFreed();
        committing = true;
        await db.run('COMMIT');
        committing = false;
        await releaseFreed();
        return out;
      } catch (e) {
        resources = held;
        if (!committing) {
          await db.run('ROLLBACK').catch(() => undefined);
          throw e;
        }
        await renew(e);
        throw new WarehouseCommitError(e);
      }
    });

  return {
    get connection() {
      return current.connection;
    },
    run: db.run,
    all: db.all,
    dir: root,
    file,
    readOnly,
    logger,
    maskSecrets: options.maskSecrets ?? true,
    schemaEvolution: options.schemaEvolution ?? true,
    archive: options.archive ?? fileArchive(root, now),
    share: options.share ?? null,
    exportThreads: options.threads ?? budget.bulkThreads,
    budget,
    now,
    get memoryLimit() {
      return memoryLimit;
    },
    get resources() {
      return resources;
    },
    resource(table: string) {
      const r = resources.find((x) => x.table === table);
      if (!r) throw new Error(`no resource stores its rows in ${table}`);
      return r;
    },
    adoptResources(next: readonly ResourceSpec[]) {
      resources = next;
    },
    setMemoryLimit,
    releaseFreed,
    reopen: () =>
      serial(async () => {
        if (lanes > 0) throw new Error(`the warehouse ${file} cannot be opened again while lanes are open`);
        await openAfresh();
      }),
    async connect() {
      if (closed) throw new Error(`the warehouse ${file} is closed`);
      const other = await instance.connect();
      const runner = sqlRunner(other);
      try {
        await runner.run(`SET TimeZone = 'UTC'`);
      } catch (e) {
        other.closeSync();
        throw e;
      }
      lanes++;
      let open = true;
      const close = () => {
        if (!open) return;
        open = false;
        lanes--;
        other.closeSync();
      };
      return { ...runner, close };
    },
    serial,
    transaction,
    async close(options = {}) {
      if (closed) return false;
      await chain;
      closed = true;
      let checkpointed = false;
      // A checkpoint rewrites the metadata of every table it touches, which grows with the table:
      // at a million runs, a few hundred ms for a batch of a few runs. A pass's batches leave their
      // log (durable already) to the next unit, and the pass's last unit checkpoints them together.
      if (!readOnly && !broken) {
        const log = logBytes(file);
        if (options.keepLog && log < KEEP_LOG_MAX) {
          await db.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
        } else {
          // Closing checkpoints the write-ahead log into the file, synchronously, on the JavaScript
          // thread; done here first, it runs on DuckDB's threads and the process keeps answering
          // (its requests keep their pace) meanwhile.
          const ample = log >= 2 * KEEP_LOG_MAX;
          const merge = options.mergeRowGroups !== false;
          let done = await checkpoint(ample, merge, !ample && lanes === 0);
          // Some checkpoints need more than loading's limit whatever their log's size: a pass's
          // last one folds in the open-run set rewritten, which at a million runs did not fit. The
          // failed checkpoint left DuckDB unusable; the file is opened afresh with the export's
          // share, replays the log, and the checkpoint is tried once more.
          if (done === 'short of memory') {
            done = await openAfresh(budget.exportMemoryLimit).then(
              () => checkpoint(true, merge, false),
              (e: unknown) => {
                logger.warn({ file, error: firstLineOf(e) }, 'the warehouse could not be opened again to checkpoint');
                return 'failed' as const;
              },
            );
          }
          if (done !== 'done') await db.run('PRAGMA disable_checkpoint_on_shutdown').catch(() => undefined);
          checkpointed = done === 'done' && log > 0;
          await releaseFreed();
        }
      }
      connection.closeSync();
      instance.closeSync();
      return checkpointed;
    },
  };
}

type CheckpointOutcome = 'done' | 'short of memory' | 'failed';

async function createInstance(
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

/** How long a handle opening its file again (after a failed commit) waits for another process. */
const RENEW_WAIT_MS = 10_000;

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

/** Opens, runs `fn`, and closes, so the file is held only while there is work. */
export async function withWarehouse<T>(
  dir: string,
  options: WarehouseOptions,
  fn: (wh: Warehouse) => Promise<T>,
): Promise<T> {
  const wh = await openWarehouse(dir, options);
  try {
    return await fn(wh);
  } finally {
    await wh.close();
  }
}

export { WarehouseLockedError };
