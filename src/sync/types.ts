import type { ApiClient } from '../api/index.ts';
import type { ServerClock } from '../api/server-clock.ts';
import type { RateBudget } from '../budget/types.ts';
import type { ParquetTarget } from '../export/tree.ts';
import type { Logger } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import type { PassLock } from '../warehouse/pass-lock.ts';
import type { DetailSource } from './detail-fetcher.ts';
import type { Freshness } from './freshness.ts';
import type { WarehouseGate } from './warehouse-gate.ts';

// What every part of the sync engine is given. Nothing is global: the CLI, the worker's jobs and
// the tests each build their own.

export interface SyncSettings {
  /** RUNSYNC_START_DATE; null: the first pass reads every run the API has. */
  startDate: Micros | null;
  lookback: Micros;
  openRunHorizon: Micros;
  /** Every run of the horizon re-checked within this (rolling reconciliation); null: off. */
  reconcileEvery: Micros | null;
  /** The share of the key's rate rolling reconciliation may use. */
  reconcileBudget: number;
  /** How far before the pass's start its window ends (default 5 s): runs being created that
   * moment are left to the next pass, whose lookback reads them. */
  settle: Micros;
  /**
   * Run details in flight at once, at least: more when the budget's pace needs more at the round
   * trips seen (the budget, not this, sets the pace).
   */
  detailConcurrency: number;
  /** Pages listed ahead of the one being loaded. */
  bufferedPages: number;
  /**
   * How far the runs lister may run ahead of the details, in runs to fetch plus one per page (default
   * LIST_AHEAD_RUNS): it holds a cursor unused only once this much is waiting.
   */
  listAheadRuns?: number;
  /**
   * Runs whose stored updated_at a walk reads into memory at once (default STORED_MAP_LIMIT); past
   * it, a window is walked a slice at a time and a slice that still holds more is judged by
   * looking each page's runs up.
   */
  storedMapLimit?: number;
  /** Slice length of long windows, reconciliations and backfills (default a day). */
  sliceMicros: Micros;
  /**
   * What a run the API deleted leaves: soft, its states closed in runs_history; hard, none of its
   * states (default soft). Either way runs keeps it, marked deleted, without its child rows.
   */
  deletes?: 'soft' | 'hard';
  /** The setting the API key came from, named when the API refuses it. */
  keySetting?: string;
}

export interface SyncDeps {
  api: ApiClient;
  gate: WarehouseGate;
  logger: Logger;
  signal: AbortSignal;
  /** The clock windows are cut with: the API's (api.serverClock), unless a test sets its own. */
  now: () => Micros;
  /** Set when `now` follows the API's clock: a pass reads it before it cuts a window. */
  apiClock?: ServerClock;
  settings: SyncSettings;
  /** The client's budget, read for requests per endpoint. */
  budget?: RateBudget;
  /** Where run details come from (default: fetched by this process). */
  details?: (signal: AbortSignal) => DetailSource;
  /** Where loads record how long each change took to arrive (passes; not a first sync). */
  freshness?: Freshness;
  /** Where the Parquet export goes (default the warehouse's parquet/ folder). */
  parquet?: ParquetTarget;
  /**
   * Takes the warehouse's pass lock for one operation (the worker's, shared between its jobs);
   * absent when the caller holds it already (the commands) or none is wanted.
   */
  passLock?: () => Promise<PassLock>;
}

/** What a walk over run summaries did. */
export interface RunCounts {
  /** List requests answered. */
  pages: number;
  /** Summaries read. */
  listed: number;
  /** Runs not in the warehouse before. */
  new: number;
  /** Runs whose summary updated_at moved. */
  changed: number;
  unchanged: number;
  /** Details fetched and loaded. */
  fetched: number;
  inserted: number;
  updated: number;
  stale: number;
  childRows: number;
  /** Details that could not be fetched: kept in _sync_pending_runs. */
  pending: number;
  /** Records refused (by the schema or the flattening): kept in _sync_rejected. */
  rejected: number;
  /** Runs the schema contract kept out of a frozen table: in _sync_quarantine. */
  quarantined: number;
  /** Runs found deleted upstream (missing from a whole re-listing, their detail not found). */
  deleted: number;
  /** Slices (or pieces of one) listed again from their first page because the API refused a cursor. */
  cursorRestarts: number;
  /** Of those restarts, the ones that halved the piece being read, after repeated refusals. */
  narrowed: number;
}

export function emptyRunCounts(): RunCounts {
  return {
    pages: 0,
    listed: 0,
    new: 0,
    changed: 0,
    unchanged: 0,
    fetched: 0,
    inserted: 0,
    updated: 0,
    stale: 0,
    childRows: 0,
    pending: 0,
    rejected: 0,
    quarantined: 0,
    deleted: 0,
    cursorRestarts: 0,
    narrowed: 0,
  };
}

export function addRunCounts(into: RunCounts, add: Partial<RunCounts>): RunCounts {
  for (const [k, v] of Object.entries(add)) into[k as keyof RunCounts] += v ?? 0;
  return into;
}
