import type { BudgetUse } from '../budget/index.ts';
import { CATALOG_TABLES, RESOURCES } from '../resources/registry.ts';
import { applyChanges, type SchemaChange } from '../resources/schema-evolve.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';
import { catalogListedKey } from '../warehouse/load-catalog.ts';
import { readSchemaChanges } from '../warehouse/schema.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import { getState } from '../warehouse/sync-state.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import { type CompletenessSummary, readCompleteness } from './completeness-status.ts';
import { combineLags, type FreshnessSummary, type LagStats, type StageLags } from './freshness.ts';
import { unloadableRuns } from './pending.ts';
import type { RollingState } from './rolling-plan.ts';
import { LIVE_KEY, RECONCILE_KEY, ROLLING_KEY, WATERMARK_KEY } from './state-keys.ts';
import type { WalkState } from './walk.ts';

// What `runsync status` shows, read from the warehouse's bookkeeping: where the live window stands,
// the last passes, the open runs being watched, what is kept aside, walks in progress, row counts.

export interface PassSummary {
  id: string;
  kind: string;
  status: string;
  startedAt: Micros;
  finishedAt: Micros | null;
  requests: number | null;
  rateLimited: number | null;
  retries: number | null;
  errors: string[];
}

export interface WalkSummary {
  key: string;
  from: Micros;
  to: Micros;
  slices: number;
  slice: number;
  done: boolean;
  listed: number;
  fetched: number;
  updatedAt: Micros;
}

export interface StatusReport {
  watermark: Micros | null;
  lastPass: PassSummary | null;
  /** The last pass that did not end well, when it is newer than the last good one. */
  lastFailure: PassSummary | null;
  openRuns: {
    total: number;
    byReason: Record<string, number>;
    oldestCreatedAt: Micros | null;
    /** The earliest last look at any of them: each has been looked at since. */
    lookedAtSince: Micros | null;
    /** Open runs the last pass left unchecked for want of their share of the rate (open-due.ts). */
    deferred: number;
    longestUncheckedSeconds: number;
  };
  pending: { total: number; oldestFailedAt: Micros | null; lastError: string | null };
  /** Runs whose payload the warehouse refused (the first ten): on the pending list, tried every pass. */
  unloadable: { id: string; error: string }[];
  /** Lag from a change to the warehouse and to Parquet over the hour up to the last pass: runs', and catalog objects'. */
  lag: StageLags & { catalog: StageLags };
  /** What the rate budget had learned at the end of the last pass that recorded it, and what it used. */
  rateBudget: (BudgetUse & { passId: string }) | null;
  /** Where the rolling reconciliation stands; null before its first pass, or when it is off. */
  rolling: RollingState | null;
  rejected: number;
  /** What the schema contract keeps out of frozen tables: by resource, and its reasons, commonest first. */
  quarantine: { total: number; byResource: Record<string, number>; reasons: { reason: string; records: number }[] };
  walks: WalkSummary[];
  tables: Record<string, number>;
  freshness: { newestRunUpdatedAt: Micros | null; lastFetchedAt: Micros | null; lastCatalogListedAt: Micros | null };
  /** Per table: when its data was last brought up to date from the API. */
  tableFreshness: Record<string, Micros | null>;
  exportPending: number;
  /** What schema evolution did, oldest first: columns and tables added for new API members. */
  schemaChanges: SchemaChange[];
  /** The API's clock minus this machine's at the end of the last pass that read it, in ms. */
  clockSkewMs: number | null;
  /** The completeness ledger, as of `now` (sync_completeness). */
  completeness: CompletenessSummary;
}

/** The tables status counts: every resource's live and child tables, evolved ones included. */
export function statusTables(resources: readonly ResourceSpec[]): string[] {
  return resources.flatMap((r) => [r.table, ...r.children.map((c) => c.table)]);
}

export const STATUS_TABLES = statusTables(RESOURCES);

const n = (v: bigint | number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** Audit rows read first for the last rate budget: a pass a few passes back nearly always has one. */
const RECENT_AUDIT_ROWS = 200;

async function lastBudgetUse(db: SqlRunner): Promise<StatusReport['rateBudget']> {
  // _sync_audit gains a row a pass, for ever: the newest rows are read first, the whole table only
  // when none of them recorded the budget. Same order in both, so the same row either way.
  const newest = (from: string) =>
    db.all<{ id: string; b: string }>(
      `SELECT id, CAST(counts->'rate_budget' AS VARCHAR) AS b FROM ${from}
       WHERE (counts->'rate_budget') IS NOT NULL ORDER BY finished_at DESC LIMIT 1`,
    );
  let [row] = await newest(`(SELECT * FROM _sync_audit ORDER BY finished_at DESC LIMIT ${RECENT_AUDIT_ROWS})`);
  if (!row) [row] = await newest('_sync_audit');
  return row ? { ...(JSON.parse(row.b) as BudgetUse), passId: row.id } : null;
}

/** The lags passes measured in the hour up to the last one. */
export async function lastHourLag(db: SqlRunner): Promise<StatusReport['lag']> {
  // The hour's start as a constant, so that only the audit's newest row groups are read (their
  // zone maps), not every row's counts.
  const [last] = await db.all<{ u: bigint | null }>(`SELECT epoch_us(max(finished_at)) AS u FROM _sync_audit`);
  if (last?.u === null || last?.u === undefined) return lastHourLags([]);
  const rows = await db.all<{ f: string }>(
    `SELECT CAST(counts->'freshness' AS VARCHAR) AS f FROM _sync_audit
     WHERE finished_at >= ${US_TO_TSTZ('$1')} - INTERVAL 1 HOUR AND (counts->'freshness') IS NOT NULL`,
    [last.u],
  );
  return lastHourLags(rows.map((r) => JSON.parse(r.f) as FreshnessSummary));
}

/** The lags of several passes as one, for runs and for catalog objects. */
export function lastHourLags(parts: readonly FreshnessSummary[]): StatusReport['lag'] {
  const of = (stages: (StageLags | undefined)[], k: keyof StageLags) =>
    combineLags(stages.flatMap((p) => (p?.[k] ? [p[k] as LagStats] : [])));
  const both = (stages: (StageLags | undefined)[]) => ({
    warehouse: of(stages, 'warehouse'),
    parquet: of(stages, 'parquet'),
  });
  return { ...both([...parts]), catalog: both(parts.map((p) => p.catalog)) };
}

/** `now`: on the API's clock; by default this machine's, moved by the skew the last pass read. */
export async function readStatus(db: SqlRunner, now?: Micros): Promise<StatusReport> {
  const state = await readState(db);
  const passes = await readPasses(db);
  const openRuns = await readOpenRuns(db);
  const [skew] = await db.all<{ k: bigint }>(
    `SELECT CAST(counts->>'clockSkewMs' AS BIGINT) AS k FROM _sync_audit
     WHERE (counts->>'clockSkewMs') IS NOT NULL ORDER BY started_at DESC LIMIT 1`,
  );
  const [pending] = await db.all<{ c: bigint; oldest: bigint | null; e: string | null }>(
    `SELECT count(*) AS c, min(epoch_us(first_failed_at)) AS oldest, arg_max(last_error, last_failed_at) AS e
     FROM _sync_pending_runs`,
  );
  const schemaChanges = await readSchemaChanges(db);
  const resources = applyChanges(RESOURCES, schemaChanges);
  const tables = await countRows(db, statusTables(resources));
  const [fresh] = await db.all<{ u: bigint | null; f: bigint | null }>(
    `SELECT max(epoch_us(updated_at)) AS u, max(epoch_us(fetched_at)) AS f FROM runs`,
  );
  const [rejected] = await db.all<{ c: bigint }>(`SELECT count(*) AS c FROM _sync_rejected`);
  const quarantine = await quarantineSummary(db);
  const [dirty] = await db.all<{ c: bigint }>(
    `SELECT count(*) AS c FROM (SELECT DISTINCT table_name, created_date FROM _sync_export_dirty)`,
  );
  const watermark = state.get(WATERMARK_KEY)?.value;
  const at = now ?? Date.now() * 1000 + (skew ? Number(skew.k) : 0) * 1000;
  return {
    completeness: await readCompleteness(db, at),
    watermark: typeof watermark === 'number' ? watermark : null,
    schemaChanges,
    rolling: (await getState<RollingState>(db, ROLLING_KEY)) ?? null,
    lag: await lastHourLag(db),
    rateBudget: await lastBudgetUse(db),
    ...lastPasses(passes),
    openRuns,
    pending: { total: Number(pending?.c ?? 0), oldestFailedAt: n(pending?.oldest), lastError: pending?.e ?? null },
    rejected: Number(rejected?.c ?? 0),
    quarantine,
    unloadable: (await unloadableRuns(db)).map(({ id, error }) => ({ id, error })),
    walks: walksOf(state),
    tables,
    freshness: {
      newestRunUpdatedAt: n(fresh?.u),
      lastFetchedAt: n(fresh?.f),
      lastCatalogListedAt: lastCatalogListing(state),
    },
    tableFreshness: await readTableFreshness(db, state, passes, resources),
    exportPending: Number(dirty?.c ?? 0),
    clockSkewMs: skew ? Number(skew.k) : null,
  };
}

/** A _sync_state value, and when it was written. */
interface StateValue {
  value: unknown;
  updatedAt: Micros;
}

async function readState(db: SqlRunner): Promise<Map<string, StateValue>> {
  const rows = await db.all<{ key: string; value: string; u: bigint }>(
    `SELECT key, value::VARCHAR AS value, epoch_us(updated_at) AS u FROM _sync_state`,
  );
  return new Map(rows.map((r) => [r.key, { value: JSON.parse(r.value) as unknown, updatedAt: Number(r.u) }]));
}

/** A row of _sync_audit as status reads it. */
interface AuditRow {
  id: string;
  kind: string;
  status: string;
  s: bigint;
  f: bigint | null;
  requests: bigint | null;
  rl: bigint | null;
  retries: bigint | null;
  errors: string | null;
}

/** The latest passes, newest first. */
function readPasses(db: SqlRunner): Promise<AuditRow[]> {
  return db.all<AuditRow>(
    `SELECT id, kind, status, epoch_us(started_at) AS s, epoch_us(finished_at) AS f,
            requests, rate_limited AS rl, retries, errors::VARCHAR AS errors
     FROM _sync_audit ORDER BY started_at DESC LIMIT 50`,
  );
}

function toPass(p: AuditRow): PassSummary {
  return {
    id: p.id,
    kind: p.kind,
    status: p.status,
    startedAt: Number(p.s),
    finishedAt: n(p.f),
    requests: n(p.requests),
    rateLimited: n(p.rl),
    retries: n(p.retries),
    errors: p.errors ? (JSON.parse(p.errors) as string[]) : [],
  };
}

/** The last pass, and the last that did not end well when it is newer than the last good one. */
function lastPasses(passes: readonly AuditRow[]): Pick<StatusReport, 'lastPass' | 'lastFailure'> {
  const lastGood = passes.findIndex((p) => p.status === 'ok');
  const failed = passes.findIndex((p) => p.status !== 'ok' && p.status !== 'running');
  return {
    lastPass: passes[0] ? toPass(passes[0]) : null,
    lastFailure: failed >= 0 && (lastGood < 0 || failed < lastGood) ? toPass(passes[failed] as AuditRow) : null,
  };
}

async function readOpenRuns(db: SqlRunner): Promise<StatusReport['openRuns']> {
  const open = await db.all<{ reason: string; c: bigint; oldest: bigint | null; looked: bigint | null }>(
    `SELECT reason, count(*) AS c, min(epoch_us(created_at)) AS oldest, min(epoch_us(last_checked_at)) AS looked
     FROM _sync_open_runs GROUP BY reason ORDER BY reason`,
  );
  const [deferred] = await db.all<{ d: bigint | null; l: bigint | null }>(
    `SELECT CAST(counts->>'openRunsDeferred' AS BIGINT) AS d,
            CAST(counts->>'openRunsLongestUncheckedSeconds' AS BIGINT) AS l
     FROM _sync_audit WHERE kind = 'sync' AND finished_at IS NOT NULL ORDER BY started_at DESC LIMIT 1`,
  );
  return {
    total: open.reduce((a, r) => a + Number(r.c), 0),
    byReason: Object.fromEntries(open.map((r) => [r.reason, Number(r.c)])),
    oldestCreatedAt: earliest(open.map((r) => r.oldest)),
    lookedAtSince: earliest(open.map((r) => r.looked)),
    deferred: Number(deferred?.d ?? 0),
    longestUncheckedSeconds: Number(deferred?.l ?? 0),
  };
}

async function countRows(db: SqlRunner, names: readonly string[]): Promise<Record<string, number>> {
  const tables: Record<string, number> = {};
  for (const t of names) {
    const [r] = await db.all<{ c: bigint }>(`SELECT count(*) AS c FROM ${t}`);
    tables[t] = Number(r?.c ?? 0);
  }
  return tables;
}

/** When any catalog collection was last listed completely. */
function lastCatalogListing(state: ReadonlyMap<string, StateValue>): Micros | null {
  let catalogListed: Micros | null = null;
  for (const [key, v] of state) {
    if (key.startsWith('catalog.') && typeof v.value === 'number')
      catalogListed = Math.max(catalogListed ?? 0, v.value);
  }
  return catalogListed;
}

/** The live window's, the reconciliation's and the backfills' walks, the latest written first. */
function walksOf(state: ReadonlyMap<string, StateValue>): WalkSummary[] {
  const walks: WalkSummary[] = [];
  for (const [key, v] of state) {
    if (key !== LIVE_KEY && key !== RECONCILE_KEY && !key.startsWith('backfill.')) continue;
    const w = v.value as WalkState;
    const slices = Math.max(1, Math.ceil((w.to - w.from) / w.sliceMicros));
    walks.push({
      key,
      from: w.from,
      to: w.to,
      slices,
      slice: Math.min(w.position.slice, slices),
      done: w.done,
      listed: w.listed,
      fetched: w.fetched,
      updatedAt: v.updatedAt,
    });
  }
  return walks.sort((a, b) => b.updatedAt - a.updatedAt);
}

async function readTableFreshness(
  db: SqlRunner,
  state: ReadonlyMap<string, StateValue>,
  passes: readonly AuditRow[],
  resources: readonly ResourceSpec[],
): Promise<Record<string, Micros | null>> {
  const tableFreshness: Record<string, Micros | null> = {};
  for (const t of CATALOG_TABLES) {
    const v = state.get(catalogListedKey(t))?.value;
    tableFreshness[t] = typeof v === 'number' ? v : null;
  }
  tableFreshness.tool_parameters = tableFreshness.tools ?? null;
  const [opts] = await db.all<{ f: bigint | null }>(`SELECT max(epoch_us(fetched_at)) AS f FROM run_tool_options`);
  tableFreshness.run_tool_options = n(opts?.f);
  // The run tables are as fresh as the last pass that finished its window.
  const lastRunsPass = passes.find(
    (p) =>
      (p.kind === 'sync' || p.kind === 'reconcile') && p.status !== 'running' && p.f !== null && p.status !== 'failed',
  );
  for (const t of statusTables(resources.filter((r) => r.table === 'runs')))
    tableFreshness[t] = lastRunsPass ? Number(lastRunsPass.s) : null;
  return tableFreshness;
}

async function quarantineSummary(db: SqlRunner): Promise<StatusReport['quarantine']> {
  // A warehouse made with other schema files (tests build older ones) may have no quarantine.
  const has = await db.all(`SELECT 1 FROM duckdb_tables() WHERE table_name = '_sync_quarantine'`);
  if (has.length === 0) return { total: 0, byResource: {}, reasons: [] };
  const by = await db.all<{ r: string; n: bigint }>(
    `SELECT resource AS r, count(*) AS n FROM _sync_quarantine GROUP BY 1 ORDER BY 1`,
  );
  const reasons = await db.all<{ reason: string; n: bigint }>(
    `SELECT reason, count(*) AS n FROM (SELECT unnest(reasons) AS reason FROM _sync_quarantine)
     GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5`,
  );
  return {
    total: by.reduce((a, r) => a + Number(r.n), 0),
    byResource: Object.fromEntries(by.map((r) => [r.r, Number(r.n)])),
    reasons: reasons.map((r) => ({ reason: r.reason, records: Number(r.n) })),
  };
}

function earliest(values: readonly (bigint | null)[]): Micros | null {
  return values.reduce<Micros | null>((a, v) => (v === null ? a : Math.min(a ?? Infinity, Number(v))), null);
}
