import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { Logger } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import type { WarehouseLockedError } from './warehouse-errors.ts';

// The warehouse handle every loader, the export and rebuild receive. It is opened per unit of
// work and closed after it: DuckDB lets one process hold the file, and readers must not wait.

export interface WarehouseOptions {
  readOnly?: boolean;
  logger?: Logger;
  /** Mask secrets of custom tools before anything is written (default true). */
  maskSecrets?: boolean;
  /** DuckDB's memory_limit, e.g. '512MB' (default DEFAULT_MEMORY_LIMIT, 64MB; DuckDB spills to disk beyond it). */
  memoryLimit?: string;
  /** DuckDB worker threads (default: one fewer than the cores, at least one; see defaultThreads). */
  threads?: number;
  /** Further DuckDB settings, by name (e.g. allocator_flush_threshold). */
  duckdb?: Readonly<Record<string, string>>;
  /** How long to keep retrying while another process holds the file (default 0: fail at once). */
  lockWaitMs?: number;
  /** Told of every attempt that found the file held, before the wait (e.g. to report it). */
  onLocked?: (error: WarehouseLockedError) => void;
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

export interface Warehouse extends SqlRunner {
  readonly dir: string;
  /** The DuckDB file, <dir>/runsync.duckdb. */
  readonly file: string;
  readonly readOnly: boolean;
  readonly logger: Logger;
  readonly maskSecrets: boolean;
  /** DuckDB threads for work the JavaScript side waits on (the export): the threads option, or every core. */
  readonly exportThreads: number;
  now(): Micros;
  /** DuckDB's memory limit in force, as it was set (e.g. '96MB'). */
  readonly memoryLimit: string;
  /** Sets DuckDB's memory limit; on the handle's connection, so inside serial() or a transaction. */
  setMemoryLimit(limit: string): Promise<void>;
  /** Runs `fn` after every earlier serial() call of this handle has finished. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /** serial(), inside BEGIN … COMMIT; ROLLBACK when `fn` throws. */
  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export const DB_FILE = 'runsync.duckdb';
export const ANALYTICS_FILE = 'analytics.duckdb';
