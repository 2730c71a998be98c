import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DuckDBInstance } from '@duckdb/node-api';
import { fileArchive, PII_NOTE, piiNote } from '../archive/sink.ts';
import { EVOLVE } from '../resources/contract.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { defaultMemoryBudget, isLargerMemorySize, type MemoryBudget } from '../util/memory-budget.ts';
import type { Micros } from '../util/timestamp.ts';
import { createInstance } from './duckdb-instance.ts';
import { firstLineOf, WarehouseLockedError, WarehouseSchemaError } from './errors.ts';
import {
  closeHandle,
  connectLane,
  type Handle,
  newHandle,
  openAfresh,
  releaseFreed,
  serial,
  setMemoryLimit,
  transaction,
} from './handle.ts';
import { defaultMigrationsDir, migrate, pendingMigrations, readSchemaFiles } from './migrate.ts';
import { isReplayShortOfMemory } from './out-of-memory.ts';
import { readResources } from './schema.ts';
import { DB_FILE, type Warehouse, type WarehouseOptions } from './types.ts';

export { KEEP_LOG_MAX } from './handle.ts';

// Opens <dir>/runsync.duckdb, migrating it when writable. A file held by another process gives a
// WarehouseLockedError (after lockWaitMs of retries), never DuckDB's raw IO error. What the handle
// then does with the file is in handle.ts.

// What DuckDB may hold (table data not yet checkpointed, staging, caches) and its threads come
// from the process's memory budget (src/util/memory-budget.ts, and docs/design.md): loading's
// share of it as the memory_limit, which DuckDB spills beyond (a batch that still does not fit is
// merged again with more, see load-runs.ts), and the export's larger one for its run, since a
// day's rows are sorted and buffered per thread as whole row groups. A checkpoint that merges row
// groups rewrites the last, partly filled one of every table it touches, so a pass's batches merge
// only now and then (close).
export const DEFAULT_MEMORY_LIMIT = defaultMemoryBudget().duckdbMemoryLimit;
/** Write-ahead log size at which a commit checkpoints. */
export const CHECKPOINT_THRESHOLD = '128MB';

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

  const config = duckdbConfig(options, budget, readOnly);
  const { instance, raised } = await createReplaying(file, config, budget, options, logger);
  const h = newHandle({ file, config, budget, logger, readOnly }, instance, await instance.connect());
  try {
    await h.db.run(`SET TimeZone = 'UTC'`);
    if (raised) {
      // Folded into the file while the room is there, so the next opener has nothing to replay.
      if (!readOnly) await h.db.run('CHECKPOINT');
      await setMemoryLimit(h, config.memory_limit as string);
    }
    h.resources = await openSchema(h, options.migrationsDir, now);
  } catch (e) {
    h.connection.closeSync();
    h.instance.closeSync();
    throw e;
  }
  return warehouseOf(h, root, options, now);
}

/**
 * Creates the instance, which replays the write-ahead log a unit before left (KEEP_LOG_MAX) within
 * the open's memory limit. The replay applies the log as one transaction, index entries included,
 * and a large batch's on a large warehouse may need more than loading's share: such a replay is
 * done again with the export's share (`raised`; the caller checkpoints and sets the limit back), so
 * a warehouse is never left unable to open at its own limit.
 */
async function createReplaying(
  file: string,
  config: Record<string, string>,
  budget: MemoryBudget,
  options: WarehouseOptions,
  logger: Logger,
): Promise<{ instance: DuckDBInstance; raised: boolean }> {
  const create = (c: Record<string, string>) =>
    createInstance(file, c, options.lockWaitMs ?? 0, options.onLocked, options.signal);
  try {
    return { instance: await create(config), raised: false };
  } catch (e) {
    const error = firstLineOf(e);
    const more = budget.exportMemoryLimit;
    if (!isReplayShortOfMemory(error) || !isLargerMemorySize(more, config.memory_limit as string)) throw e;
    logger.warn(
      { file, error, memoryLimit: more },
      'the write-ahead log did not fit the memory limit to replay; replaying it with more',
    );
    try {
      return { instance: await create({ ...config, memory_limit: more }), raised: true };
    } catch (again) {
      if (!isReplayShortOfMemory(firstLineOf(again))) throw again;
      throw new Error(
        `the write-ahead log of ${file} needs more than ${more} to replay; open it once with a larger RUNSYNC_MEMORY_LIMIT (${firstLineOf(again)})`,
        { cause: again },
      );
    }
  }
}

/**
 * DuckDB's settings for the file. A checkpoint rewrites table data into the file; at DuckDB's
 * default (16 MB of WAL) a bulk load checkpoints after nearly every batch. Closing the warehouse
 * checkpoints anyway. The memory limit keeps a long-running worker's footprint flat however large
 * the warehouse grows (DuckDB's own default is 80% of RAM); DuckDB spills beyond it.
 *
 * DuckDB's allocator keeps what its threads freed, up to allocator_flush_threshold a thread, and
 * hands it back to the system only when told: a checkpoint merges and compresses one table after
 * another, and what each freed would stay resident through the rest. A threshold from the budget
 * and the allocator's background threads, which return freed pages as they age, keep the process
 * near what DuckDB holds.
 */
function duckdbConfig(options: WarehouseOptions, budget: MemoryBudget, readOnly: boolean): Record<string, string> {
  const config: Record<string, string> = {
    checkpoint_threshold: CHECKPOINT_THRESHOLD,
    allocator_flush_threshold: budget.allocatorFlushThreshold,
    allocator_background_threads: 'true',
    memory_limit: options.memoryLimit ?? budget.duckdbMemoryLimit,
    ...options.duckdb,
    access_mode: readOnly ? 'READ_ONLY' : 'READ_WRITE',
  };
  config.threads = String(options.threads ?? budget.threads);
  return config;
}

/** Migrates a writable file (a read-only one must need no migration); the resources it holds. */
async function openSchema(
  h: Handle,
  migrationsDir: string | undefined,
  now: () => Micros,
): Promise<readonly ResourceSpec[]> {
  const schema = await readSchemaFiles(migrationsDir ?? defaultMigrationsDir());
  if (h.readOnly) {
    const pending = await pendingMigrations(h.db, schema.migrations, h.logger);
    if (pending.length)
      throw new WarehouseSchemaError(
        `the warehouse ${h.file} needs schema migrations (${pending.map((m) => m.name).join(', ')});` +
          ' open it once for writing',
      );
  } else {
    await migrate(h.db, schema, h.logger, now);
  }
  return readResources(h.db);
}

/** The Warehouse a handle's state answers for. */
function warehouseOf(h: Handle, root: string, options: WarehouseOptions, now: () => Micros): Warehouse {
  return {
    get connection() {
      return h.current.connection;
    },
    run: h.db.run,
    all: h.db.all,
    dir: root,
    file: h.file,
    readOnly: h.readOnly,
    logger: h.logger,
    maskSecrets: options.maskSecrets ?? true,
    schemaEvolution: options.schemaEvolution ?? true,
    pii: options.pii ?? null,
    contract: options.contract ?? EVOLVE,
    archive: options.archive ?? fileArchive(root, now, { [PII_NOTE]: piiNote(options.pii ?? null) }),
    share: options.share ?? null,
    exportThreads: options.threads ?? h.budget.bulkThreads,
    budget: h.budget,
    now,
    get memoryLimit() {
      return h.memoryLimit;
    },
    get resources() {
      return h.resources;
    },
    resource(table: string) {
      const r = h.resources.find((x) => x.table === table);
      if (!r) throw new Error(`no resource stores its rows in ${table}`);
      return r;
    },
    adoptResources(next: readonly ResourceSpec[]) {
      h.resources = next;
    },
    setMemoryLimit: (limit) => setMemoryLimit(h, limit),
    releaseFreed: () => releaseFreed(h),
    reopen: () =>
      serial(h, async () => {
        if (h.lanes > 0) throw new Error(`the warehouse ${h.file} cannot be opened again while lanes are open`);
        await openAfresh(h);
      }),
    connect: () => connectLane(h),
    serial: (fn) => serial(h, fn),
    transaction: (fn) => transaction(h, fn),
    close: (closeOptions = {}) => closeHandle(h, closeOptions),
  };
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
