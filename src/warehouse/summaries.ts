import { quoteLiteral } from './sql.ts';
import type { SqlRunner } from './types.ts';

// The report's sums per created_date (schemas/duckdb/0011_report_summaries.sql), so a report reads
// a few thousand rows however many runs are stored. The export sums again the days it writes, and
// a few of the days never summed (a warehouse made before the summaries) each time, so they come
// in without one long stall. The report reads the stored sums of the days summed since they last
// changed and sums the others from the tables as it goes (live), so it always shows the tables.

/** A duration's bucket: a hundredth of a natural logarithm wide; one bucket for none above zero. */
const BUCKET = `CASE WHEN duration_seconds > 0 THEN round(ln(duration_seconds) * 100)::INTEGER
  WHEN duration_seconds IS NOT NULL THEN ${-1_000_000} END`;

/** Runs the API has not deleted: a deleted run stays in runs, marked, and its children are gone. */
const LIVE = 'NOT coalesce(is_deleted, false)';

/** The value a bucket stands for (its middle), as SQL over a bucket column. */
export const bucketValue = (b: string) => `CASE WHEN ${b} = ${-1_000_000} THEN 0 ELSE exp(${b} / 100.0) END`;

interface Summary {
  table: string;
  /** The day's sums from the tables, for the days `where` selects (a condition on created_date). */
  sum: (where: string) => string;
}

export const SUMMARIES = {
  runs: {
    table: '_report_runs_day',
    sum: (where: string) => `SELECT created_date, agent_id, resolution_type, count(*) AS runs,
  max(created_at) FILTER (WHERE agent_name IS NOT NULL) AS agent_named_at,
  arg_max(agent_name, created_at) FILTER (WHERE agent_name IS NOT NULL) AS agent_name
FROM runs WHERE ${where} AND ${LIVE} GROUP BY created_date, agent_id, resolution_type`,
  },
  toolCalls: {
    table: '_report_tool_calls_day',
    sum: (where: string) => `SELECT created_date, tool_name, tool_type, ${BUCKET} AS duration_bucket, count(*) AS calls,
  count(*) FILTER (WHERE coalesce(tool_error, '') <> '') AS errors
FROM run_tool_calls WHERE ${where} GROUP BY ALL`,
  },
  evaluationValues: {
    table: '_report_evaluation_values_day',
    sum: (where: string) => `SELECT created_date, attribute_id, value, count(*) AS evaluations
FROM run_evaluations WHERE ${where} GROUP BY created_date, attribute_id, value`,
  },
  attributes: {
    table: '_report_attributes_day',
    sum: (where: string) => `SELECT created_date, attribute_id, count(*) AS evaluations, count(DISTINCT run_id) AS runs,
  max(recorded_at) FILTER (WHERE name IS NOT NULL) AS named_at,
  arg_max(name, recorded_at) FILTER (WHERE name IS NOT NULL) AS attribute_name
FROM run_evaluations WHERE ${where} GROUP BY created_date, attribute_id`,
  },
  waiting: {
    table: '_report_waiting_day',
    sum: (where: string) => `SELECT r.created_date, r.id AS run_id, r.agent_name,
  r.approval_pending_tool_name AS pending_tool_name, r.ticket_title, coalesce(s."timestamp", r.updated_at) AS since
FROM (SELECT * FROM runs WHERE ${where} AND ${LIVE} AND approval_waiting_for_approval) r
LEFT JOIN (SELECT run_id, id, "timestamp" FROM run_steps WHERE ${where}) s
  ON s.run_id = r.id AND s.id = r.approval_pending_step_id`,
  },
} satisfies Record<string, Summary>;

export type SummaryName = keyof typeof SUMMARIES;

const inDays = (days: readonly string[]) =>
  days.length ? `created_date IN (${days.map((d) => `${quoteLiteral(d)}::DATE`).join(', ')})` : 'false';

/** Whether this warehouse keeps the summaries (the report may also read analytics.duckdb, which does not). */
export async function hasSummaries(db: SqlRunner): Promise<boolean> {
  const [r] = await db.all<{ n: bigint }>(
    `SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = '_report_days' AND schema_name = 'main'`,
  );
  return Number(r?.n ?? 0) > 0;
}

/** Days with runs never summed, oldest first. */
async function unsummedDays(db: SqlRunner): Promise<string[]> {
  const rows = await db.all<{ d: string }>(
    `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM runs
     WHERE created_date NOT IN (SELECT created_date FROM _report_days) ORDER BY 1`,
  );
  return rows.map((r) => r.d);
}

/** Days never summed that an export sums besides those it writes. */
const CATCH_UP_DAYS = 3;

/**
 * Sums again `days` (the days an export wrote) and a few never summed, a day a transaction (the
 * sums of a whole warehouse at once would not fit its memory). A day whose sums fail is left
 * unsummed, which the report sums from the tables, and said through `failed`. Returns the days
 * summed.
 */
export async function refreshSummaries(
  db: SqlRunner,
  days: readonly string[],
  failed: (day: string, error: Error) => void,
): Promise<string[]> {
  const missing = (await unsummedDays(db)).filter((d) => !days.includes(d)).slice(0, CATCH_UP_DAYS);
  const summed: string[] = [];
  for (const day of [...days, ...missing]) {
    const where = inDays([day]);
    await db.run('BEGIN TRANSACTION');
    try {
      for (const s of Object.values(SUMMARIES)) {
        await db.run(`DELETE FROM ${s.table} WHERE ${where}`);
        await db.run(`INSERT INTO ${s.table} ${s.sum(where)}`);
      }
      await db.run(`DELETE FROM _report_days WHERE ${where}`);
      await db.run(`INSERT INTO _report_days VALUES (${quoteLiteral(day)}::DATE)`);
      await db.run('COMMIT');
      summed.push(day);
    } catch (e) {
      await db.run('ROLLBACK').catch(() => undefined);
      await db.run(`DELETE FROM _report_days WHERE ${where}`);
      failed(day, e as Error);
    }
  }
  return summed;
}

/**
 * SQL for the summary's rows as the tables stand: stored sums of days summed and unchanged since,
 * and the other days (changed since the last export, or never summed) summed from the tables.
 */
export async function currentSummaries(db: SqlRunner): Promise<Record<SummaryName, string>> {
  const stale = await db.all<{ d: string }>(
    `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM _sync_export_dirty
     WHERE table_name = 'runs' AND created_date IS NOT NULL`,
  );
  const live = [...new Set([...stale.map((r) => r.d), ...(await unsummedDays(db))])].sort();
  const where = inDays(live);
  const out = {} as Record<SummaryName, string>;
  for (const [name, s] of Object.entries(SUMMARIES) as [SummaryName, Summary][]) {
    out[name] = `(SELECT * FROM ${s.table} WHERE NOT (${where}) UNION ALL BY NAME ${s.sum(where)})`;
  }
  return out;
}
