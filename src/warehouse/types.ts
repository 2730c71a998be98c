import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { ArchiveSink } from '../archive/sink.ts';
import type { PiiPolicy } from '../pii/types.ts';
import type { SchemaContract } from '../resources/contract.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { ShareGroup } from '../util/file-share.ts';
import type { Logger } from '../util/logger.ts';
import type { MemoryBudget } from '../util/memory-budget.ts';
import type { Micros } from '../util/timestamp.ts';
import type { WarehouseLockedError } from './errors.ts';

// The warehouse handle every loader, the export and rebuild receive. It is opened per unit of
// work and closed after it: DuckDB lets one process hold the file, and readers must not wait.

export interface WarehouseOptions {
  readOnly?: boolean;
  logger?: Logger;
  /** Mask secrets of custom tools before anything is written (default true). */
  maskSecrets?: boolean;
  /** New API members become columns (default true); off, they stay in the raw archive only. */
  schemaEvolution?: boolean;
  /**
   * The personal-data policy payloads were given before they came here (the API client applies
   * it): archive files note it, and rebuild applies it again to files written under another.
   */
  pii?: PiiPolicy | null;
  /** RUNSYNC_SCHEMA_CONTRACT: what new and changed members may do to each table (default: evolve). */
  contract?: SchemaContract;
  /** Where loads keep what changed the warehouse (default: the raw archive under the directory). */
  archive?: ArchiveSink;
  /** The process's memory budget (RUNSYNC_MEMORY_LIMIT); DuckDB's limit and threads come from it. */
  budget?: MemoryBudget;
  /** DuckDB's memory_limit, e.g. '512MB', over the budget's (DuckDB spills to disk beyond it). */
  memoryLimit?: string;
  /** DuckDB worker threads, over the budget's (one fewer than the cores, within the budget). */
  threads?: number;
  /** Further DuckDB settings, by name (e.g. allocator_flush_threshold). */
  duckdb?: Readonly<Record<string, string>>;
  /** How long to keep retrying while another process holds the file (default 0: fail at once). */
  lockWaitMs?: number;
  /** Told of every attempt that found the file held, before the wait (e.g. to report it). */
  onLocked?: (error: WarehouseLockedError) => void;
  /** Ends the wait for a held file (a process stopping). */
  signal?: AbortSignal;
  /** The group that may read the Parquet tree and analytics.duckdb (RUNSYNC_SHARE_GROUP). */
  share?: ShareGroup | null;
  /** Directory of the numbered DDL files (default: the package's schemas/duckdb). */
  migrationsDir?: string;
  /** The clock used for fetched_at and listing times (tests pin it). */
  now?: () => Micros;
}

export type SqlParams = readonly DuckDBValue[];

/** Runs SQL on the handle's connection; inside transaction() that is the open transaction. */
export interface SqlRunner {
  readonly connection: DuckDBConnection;
  run(sql: string, params?: SqlParams): Promise<void>;
  /** Rows as plain objects: BIGINT as bigint, VARCHAR as string (select timestamps as epoch_us). */
  all<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T[]>;
}

/**
 * Sync bookkeeping written in the same transaction as a merge: statements with positional
 * parameters, or a function given the transaction.
 */
export type Bookkeeping = readonly (readonly [sql: string, params?: SqlParams])[] | ((tx: SqlRunner) => Promise<void>);

/** How a batch of fetched payloads (run details, the tool options) is loaded. */
export interface LoadOptions {
  /** When the payloads were fetched (default: now). */
  fetchedAt?: Micros;
  bookkeeping?: Bookkeeping;
}

export interface Warehouse extends SqlRunner {
  readonly dir: string;
  /** The DuckDB file, <dir>/runsync.duckdb. */
  readonly file: string;
  readonly readOnly: boolean;
  readonly logger: Logger;
  readonly maskSecrets: boolean;
  readonly schemaEvolution: boolean;
  /** The personal-data policy in force (null: off). */
  readonly pii: PiiPolicy | null;
  readonly contract: SchemaContract;
  /** Where loads keep what changed the warehouse: the raw archive, or nowhere during a replay of it. */
  readonly archive: ArchiveSink;
  /** The group the export gives the Parquet tree and analytics.duckdb to; null: owner only. */
  readonly share: ShareGroup | null;
  /** DuckDB threads for the Parquet export: the threads option, or the budget's bulkThreads. */
  readonly exportThreads: number;
  now(): Micros;
  /** The resources as this warehouse stores them: the declarations with its schema changes. */
  readonly resources: readonly ResourceSpec[];
  resource(table: string): ResourceSpec;
  /** Takes the resources in force after a committed schema change. */
  adoptResources(next: readonly ResourceSpec[]): void;
  /** DuckDB's memory limit in force, as it was set (e.g. '96MB'). */
  readonly memoryLimit: string;
  /** The budget the handle was opened with (the default one when none was given). */
  readonly budget: MemoryBudget;
  /** Sets DuckDB's memory limit; on the handle's connection, so inside serial() or a transaction. */
  setMemoryLimit(limit: string): Promise<void>;
  /**
   * Has DuckDB hand back to the system what its statements freed (it keeps it for reuse until its
   * limit is set again); on the handle's connection. Never fails: only a release.
   */
  releaseFreed(): Promise<void>;
  /**
   * Closes the file and opens it again with the settings it was opened with (not those SET since),
   * so DuckDB forgets what it had loaded of the tables. Refused while lanes are open.
   */
  reopen(): Promise<void>;
  /**
   * Another connection to the same database, for statements that run beside the handle's own
   * (each in a transaction of its own); closed by the caller, before the handle.
   */
  connect(): Promise<SqlRunner & { close(): void }>;
  /** Runs `fn` after every earlier serial() call of this handle has finished. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /** serial(), inside BEGIN … COMMIT; ROLLBACK when `fn` throws. */
  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T>;
  /**
   * Checkpoints and closes; true when it wrote a write-ahead log into the file. `keepLog`: a
   * write-ahead log of less than KEEP_LOG_MAX is left for the next opener to take up instead (its
   * unit is followed by others that checkpoint). `mergeRowGroups: false`: the checkpoint writes what
   * the log added as row groups of their own, and merging them into full ones is left to a later one.
   */
  close(options?: CloseOptions): Promise<boolean>;
}

export interface CloseOptions {
  keepLog?: boolean;
  mergeRowGroups?: boolean;
}

export const DB_FILE = 'runsync.duckdb';
export const ANALYTICS_FILE = 'analytics.duckdb';
