import type { FreshnessSummary } from '../sync/freshness.ts';
import { type RollingState, verifiedSince } from '../sync/rolling-plan.ts';
import { ROLLING_KEY } from '../sync/state-keys.ts';
import { lastHourLag } from '../sync/status.ts';
import type { Micros } from '../util/timestamp.ts';
import { hasSummaries } from '../warehouse/summaries.ts';
import { getState } from '../warehouse/sync-state.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import { readFromSummaries } from './from-summaries.ts';

// What the HTML report shows, read from the ready-made views (so it reads the same from
// runsync.duckdb and from analytics.duckdb), plus the recent sync passes when the source is the
// warehouse itself (analytics.duckdb holds no bookkeeping).

/** Runs by resolution type, as the v_runs_daily_resolution and v_resolution_by_* views count them. */
export interface ResolutionCounts {
  runs: number;
  deflected: number;
  resolved: number;
  escalated: number;
  pending: number;
  noResolution: number;
}

export interface DayRow extends ResolutionCounts {
  day: string;
  other: number;
}

export interface ToolRow {
  name: string;
  label: string | null;
  calls: number;
  errors: number;
  errorRate: number;
  medianSeconds: number | null;
  inCatalog: boolean;
}

export interface AgentRow extends ResolutionCounts {
  name: string;
}

export interface FreshnessRow {
  table: string;
  rows: number;
  newestChange: Micros | null;
  lastFetched: Micros | null;
}

export interface WaitingRow {
  runId: string;
  agent: string | null;
  tool: string | null;
  ticket: string | null;
  since: Micros | null;
}

export interface EvaluationRow {
  name: string;
  evaluations: number;
  runs: number;
  distinctValues: number;
  avgNumeric: number | null;
}

export interface PassRow {
  kind: string;
  status: string | null;
  startedAt: Micros;
  finishedAt: Micros | null;
  requests: number | null;
}

/** How long changes took to arrive, from the sync's bookkeeping. */
export interface LagReport {
  /** The hour up to the last pass: runs' lags, and catalog objects' in `catalog`. */
  lastHour: Required<FreshnessSummary>;
  /** Every run of the open-run horizon was looked at since this time (rolling reconciliation). */
  horizonVerifiedSince: Micros | null;
}

export interface ReportData {
  generatedAt: Micros;
  source: { kind: 'warehouse' | 'analytics'; file: string };
  days: DayRow[];
  tools: ToolRow[];
  toolTotals: { calls: number; errors: number; tools: number };
  agents: AgentRow[];
  freshness: FreshnessRow[];
  waiting: WaitingRow[];
  waitingTotal: number;
  evaluations: EvaluationRow[];
  /** Recent sync passes, newest first; null when the source has no bookkeeping. */
  passes: PassRow[] | null;
  lag: LagReport | null;
}

export const REPORT_DAYS = 60;
const TOP_TOOLS = 15;
const TOP_AGENTS = 12;

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const opt = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const resolutionCounts = (r: Record<string, unknown>): ResolutionCounts => ({
  runs: num(r.runs),
  deflected: num(r.deflected),
  resolved: num(r.resolved),
  escalated: num(r.escalated),
  pending: num(r.pending),
  noResolution: num(r.no_resolution),
});

export async function readReportData(db: SqlRunner, source: ReportData['source'], now: Micros): Promise<ReportData> {
  // The warehouse keeps sums per day that make the heaviest figures cheap whatever its size;
  // analytics.duckdb has only the views.
  const summed =
    source.kind === 'warehouse' && (await hasSummaries(db))
      ? await readFromSummaries(db, REPORT_DAYS, TOP_AGENTS)
      : null;
  const dayRows =
    summed?.days ??
    (await db.all(
      `SELECT CAST(day AS VARCHAR) AS day, * EXCLUDE (day)
       FROM v_runs_daily_resolution ORDER BY day DESC LIMIT ${REPORT_DAYS}`,
    ));
  const days = fillDays(
    dayRows.reverse().map((r) => ({ day: String(r.day), ...resolutionCounts(r), other: num(r.other_resolution) })),
  );
  // v_tool_stats reads every tool call: read once, for both the top tools and the totals (a row
  // per tool, as many as the catalog and the calls name).
  const toolStats =
    summed?.tools ??
    (await db.all(`SELECT tool_name, display_name, calls, errors, error_rate, median_duration_seconds,
      in_catalog FROM v_tool_stats ORDER BY calls DESC, tool_name`));
  const called = toolStats.filter((r) => num(r.calls) > 0);
  const tools = called.slice(0, TOP_TOOLS).map((r) => ({
    name: String(r.tool_name ?? '(no name)'),
    label: str(r.display_name),
    calls: num(r.calls),
    errors: num(r.errors),
    errorRate: num(r.error_rate),
    medianSeconds: opt(r.median_duration_seconds),
    inCatalog: r.in_catalog === true,
  }));
  const t = {
    calls: toolStats.reduce((a, r) => a + num(r.calls), 0),
    errors: toolStats.reduce((a, r) => a + num(r.errors), 0),
    tools: called.length,
  };
  const agents = (
    summed?.agents ??
    (await db.all(`SELECT * FROM v_resolution_by_agent ORDER BY runs DESC, agent_name LIMIT ${TOP_AGENTS}`))
  ).map((r) => ({
    name: String(r.agent_name ?? r.agent_id ?? '(no agent)'),
    ...resolutionCounts(r),
  }));
  const freshness = (
    await db.all(
      `SELECT table_name, row_count, epoch_us(newest_change_at) AS newest, epoch_us(last_fetched_at) AS fetched
         FROM v_table_freshness`,
    )
  ).map((r) => ({
    table: String(r.table_name),
    rows: num(r.row_count),
    newestChange: opt(r.newest),
    lastFetched: opt(r.fetched),
  }));
  const waitingFrom = summed
    ? `(SELECT run_id, agent_name, pending_tool_name, ticket_title, since FROM ${summed.waiting})`
    : `(SELECT run_id, agent_name, pending_tool_name, ticket_title, coalesce(pending_step_at, updated_at) AS since
        FROM v_runs_awaiting_approval)`;
  const waiting = (
    await db.all(`SELECT run_id, agent_name, pending_tool_name, ticket_title, epoch_us(since) AS since
      FROM ${waitingFrom} ORDER BY since NULLS LAST, run_id LIMIT 20`)
  ).map((r) => ({
    runId: String(r.run_id),
    agent: str(r.agent_name),
    tool: str(r.pending_tool_name),
    ticket: str(r.ticket_title),
    since: opt(r.since),
  }));
  const [w] = await db.all(`SELECT count(*) AS n FROM ${waitingFrom}`);
  const evaluations = (
    summed?.evaluations ??
    (await db.all(`SELECT * FROM v_evaluation_attributes ORDER BY evaluations DESC, attribute_name`))
  ).map((r) => ({
    name: String(r.attribute_name ?? r.attribute_id ?? '(unnamed)'),
    evaluations: num(r.evaluations),
    runs: num(r.runs),
    distinctValues: num(r.distinct_values),
    avgNumeric: opt(r.avg_numeric_value),
  }));
  return {
    generatedAt: now,
    source,
    days,
    tools,
    toolTotals: t,
    agents,
    freshness,
    waiting,
    waitingTotal: num(w?.n),
    evaluations,
    passes: source.kind === 'warehouse' ? await recentPasses(db) : null,
    lag: source.kind === 'warehouse' ? await lagReport(db) : null,
  };
}

async function lagReport(db: SqlRunner): Promise<LagReport> {
  return {
    lastHour: await lastHourLag(db),
    horizonVerifiedSince: verifiedSince(await getState<RollingState>(db, ROLLING_KEY)),
  };
}

async function recentPasses(db: SqlRunner): Promise<PassRow[]> {
  const rows = await db.all(
    `SELECT kind, status, epoch_us(started_at) AS s, epoch_us(finished_at) AS f, requests
       FROM _sync_audit ORDER BY started_at DESC LIMIT 10`,
  );
  return rows.map((r) => ({
    kind: String(r.kind),
    status: str(r.status),
    startedAt: num(r.s),
    finishedAt: opt(r.f),
    requests: opt(r.requests),
  }));
}

/** Days without runs get a zero row, so the chart's axis is true to time. */
function fillDays(rows: DayRow[]): DayRow[] {
  if (rows.length < 2) return rows;
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const out: DayRow[] = [];
  const last = Date.parse(`${(rows[rows.length - 1] as DayRow).day}T00:00:00Z`);
  for (let t = Date.parse(`${(rows[0] as DayRow).day}T00:00:00Z`); t <= last; t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push(
      byDay.get(day) ?? {
        day,
        runs: 0,
        deflected: 0,
        resolved: 0,
        escalated: 0,
        pending: 0,
        noResolution: 0,
        other: 0,
      },
    );
  }
  return out;
}
