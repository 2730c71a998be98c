import type { ApiClient, InvalidRecordReport } from '../api/index.ts';
import type { RateBudget } from '../budget/budget-types.ts';
import type { Logger } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import type { DetailSource } from './detail-fetcher.ts';
import type { WarehouseGate } from './warehouse-gate.ts';

// What every part of the sync engine is given. Nothing is global: the CLI, the worker's jobs and
// the tests each build their own.

export interface SyncSettings {
  /** RUNSYNC_START_DATE; null: the first pass reads every run the API has. */
  startDate: Micros | null;
  lookback: Micros;
  openRunHorizon: Micros;
  /** How far before the pass's start its window ends (default 5 s): runs being created that
   * moment are left to the next pass, whose lookback reads them. */
  settle: Micros;
  /** Run details in flight at once (the budget, not this, sets the pace). */
  detailConcurrency: number;
  /** Pages listed ahead of the one being loaded. */
  bufferedPages: number;
  /** Slice length of long windows, reconciliations and backfills (default a day). */
  sliceMicros: Micros;
}

export interface SyncDeps {
  api: ApiClient;
  gate: WarehouseGate;
  logger: Logger;
  signal: AbortSignal;
  /** The clock windows are cut with. */
  now: () => Micros;
  settings: SyncSettings;
  /** Records the client refused (it reports them here, the engine keeps them in _sync_rejected). */
  reports: RecordReports;
  /** The client's budget, read for requests per endpoint. */
  budget?: RateBudget;
  /** Where run details come from (default: fetched by this process). */
  details?: (signal: AbortSignal) => DetailSource;
}

/** Collects the client's reports of records that break their schema, for the next commit. */
export class RecordReports {
  private pending: InvalidRecordReport[] = [];
  total = 0;

  readonly push = (report: InvalidRecordReport): void => {
    this.pending.push(report);
    this.total++;
  };

  /** Takes the reports of one endpoint about the given records (a fetch job's own). */
  drainRecords(endpoint: string, ids: ReadonlySet<string>): InvalidRecordReport[] {
    const mine = (r: InvalidRecordReport) => r.endpoint === endpoint && r.recordId !== null && ids.has(r.recordId);
    const out = this.pending.filter(mine);
    this.pending = this.pending.filter((r) => !mine(r));
    return out;
  }

  /** Takes the reports of endpoints starting with `prefix` (all by default). */
  drain(prefix = ''): InvalidRecordReport[] {
    const out = this.pending.filter((r) => r.endpoint.startsWith(prefix));
    this.pending = prefix ? this.pending.filter((r) => !r.endpoint.startsWith(prefix)) : [];
    return out;
  }
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
}

export function emptyRunCounts(): RunCounts {
  return { pages: 0, listed: 0, new: 0, changed: 0, unchanged: 0, fetched: 0, inserted: 0, updated: 0, stale: 0, childRows: 0, pending: 0, rejected: 0 };
}

export function addRunCounts(into: RunCounts, add: Partial<RunCounts>): RunCounts {
  for (const [k, v] of Object.entries(add)) into[k as keyof RunCounts] += v ?? 0;
  return into;
}
