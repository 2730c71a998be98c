import { bucketValue, currentSummaries } from '../warehouse/summaries.ts';
import type { SqlRunner } from '../warehouse/types.ts';

// The report's heavy figures from the warehouse's sums per day (warehouse/summaries.ts) rather than
// from every run, tool call and evaluation: the same rows the views give (v_runs_daily_resolution,
// v_resolution_by_agent, v_tool_stats, v_evaluation_attributes, v_runs_awaiting_approval), grouped,
// named as they do and ordered as the report reads them, over sums instead of rows. A median is read from the durations'
// buckets as median() reads the values (the middle one, or the mean of the middle two), each taken
// at its bucket's middle: within half a percent. analytics.duckdb has no sums; the report reads the
// views there.

export interface FromSummaries {
  /** The runs waiting for an approval, as SQL (v_runs_awaiting_approval's runs, and since when). */
  waiting: string;
  days: Record<string, unknown>[];
  agents: Record<string, unknown>[];
  tools: Record<string, unknown>[];
  evaluations: Record<string, unknown>[];
}

const RESOLUTIONS = ['deflected', 'resolved', 'escalated', 'pending'];

/** The resolution_counts macro of views.sql, over summed runs. */
const counts = (runs: string, resolution: string) =>
  [
    `sum(${runs}) AS runs`,
    ...RESOLUTIONS.map((r) => `coalesce(sum(${runs}) FILTER (WHERE ${resolution} = '${r}'), 0) AS ${r}`),
    `coalesce(sum(${runs}) FILTER (WHERE ${resolution} IS NULL), 0) AS no_resolution`,
  ].join(', ');

export async function readFromSummaries(db: SqlRunner, days: number, topAgents: number): Promise<FromSummaries> {
  const s = await currentSummaries(db);
  const dayRows = await db.all(
    `SELECT CAST(created_date AS VARCHAR) AS day, ${counts('runs', 'resolution_type')},
       coalesce(sum(runs) FILTER (WHERE resolution_type NOT IN (${RESOLUTIONS.map((r) => `'${r}'`).join(', ')})), 0)
         AS other_resolution
     FROM ${s.runs} GROUP BY created_date ORDER BY created_date DESC LIMIT ${days}`,
  );
  const agents = await db.all(
    `WITH per_agent AS (
       SELECT agent_id, ${counts('runs', 'resolution_type')},
         arg_max(agent_name, agent_named_at) FILTER (WHERE agent_name IS NOT NULL) AS last_seen_name
       FROM ${s.runs} GROUP BY agent_id
     ),
     last_version AS (SELECT id, arg_max(name, valid_from) AS name FROM agents_history GROUP BY id)
     SELECT p.agent_id,
       CASE WHEN p.agent_id IS NULL THEN '(no agent)'
         ELSE coalesce(a.name, h.name, p.last_seen_name, '(unnamed agent)') END AS agent_name,
       p.* EXCLUDE (agent_id, last_seen_name)
     FROM per_agent p
     LEFT JOIN agents a ON a.id = p.agent_id
     LEFT JOIN last_version h ON h.id = p.agent_id
     ORDER BY runs DESC, agent_name LIMIT ${topAgents}`,
  );
  return {
    waiting: s.waiting,
    days: dayRows,
    agents,
    tools: await toolRows(db, s.toolCalls),
    evaluations: await evaluationRows(db, s),
  };
}

/**
 * v_tool_stats' calls, errors, labels and medians, from the buckets: each recorded name and
 * type matched to a catalog tool as the view matches them (the live tool of that name, of the
 * same type when names repeat, else the one that had the name in an earlier version), and the
 * calls grouped by the matched tool, or by name and type when none ever had the name.
 */
async function toolRows(db: SqlRunner, calls: string) {
  return db.all(
    `WITH c AS MATERIALIZED (
       SELECT tool_name, tool_type, duration_bucket, sum(calls) AS calls, sum(errors) AS errors
       FROM ${calls} GROUP BY ALL
     ),
     known_names AS (
       SELECT name, type, id, 0 AS former, NULL::TIMESTAMPTZ AS valid_from FROM tools
       UNION ALL
       SELECT name, type, id, 1, valid_from FROM tools_history
     ),
     matched AS (
       SELECT r.tool_name, r.tool_type, k.id AS tool_id
       FROM (SELECT DISTINCT tool_name, tool_type FROM c) r
       LEFT JOIN known_names k ON k.name = r.tool_name
       QUALIFY row_number() OVER (
         PARTITION BY r.tool_name, r.tool_type
         ORDER BY k.former, (k.type IS NOT DISTINCT FROM r.tool_type) DESC, k.valid_from DESC NULLS LAST, k.id
       ) = 1
     ),
     grouped AS (
       SELECT {'id': m.tool_id, 'name': CASE WHEN m.tool_id IS NULL THEN c.tool_name END,
               'type': CASE WHEN m.tool_id IS NULL THEN c.tool_type END} AS tool,
              c.duration_bucket, sum(c.calls) AS calls, sum(c.errors) AS errors
       FROM c JOIN matched m ON m.tool_name IS NOT DISTINCT FROM c.tool_name
         AND m.tool_type IS NOT DISTINCT FROM c.tool_type
       GROUP BY ALL
     ),
     ranked AS (
       SELECT *, sum(calls) FILTER (WHERE duration_bucket IS NOT NULL) OVER (PARTITION BY tool) AS timed,
         sum(calls) FILTER (WHERE duration_bucket IS NOT NULL) OVER (
           PARTITION BY tool ORDER BY duration_bucket ROWS UNBOUNDED PRECEDING) AS upto
       FROM grouped
     ),
     per_tool AS (
       SELECT tool, sum(calls) AS calls, sum(errors) AS errors,
         min(duration_bucket) FILTER (WHERE upto > (timed - 1) // 2) AS below,
         min(duration_bucket) FILTER (WHERE upto > timed // 2) AS above
       FROM ranked GROUP BY tool
     ),
     last_version AS (SELECT id, arg_max(name, valid_from) AS name FROM tools_history GROUP BY id)
     SELECT coalesce(t.name, h.name, p.tool.name, '(no tool name)') AS tool_name, o.display_name, p.calls,
       p.errors, p.errors / nullif(p.calls, 0) AS error_rate,
       (${bucketValue('p.below')} + ${bucketValue('p.above')}) / 2 AS median_duration_seconds,
       t.id IS NOT NULL AS in_catalog
     FROM per_tool p
     LEFT JOIN tools t ON t.id = p.tool.id
     LEFT JOIN last_version h ON h.id = p.tool.id
     LEFT JOIN run_tool_options o ON o.tool_name = coalesce(t.name, h.name, p.tool.name)
     ORDER BY p.calls DESC, tool_name`,
  );
}

/** v_evaluation_attributes' counts per attribute, from the sums per value and per attribute. */
async function evaluationRows(db: SqlRunner, s: Awaited<ReturnType<typeof currentSummaries>>) {
  return db.all(
    `WITH per_attribute AS (
       SELECT attribute_id, sum(evaluations) AS evaluations, sum(runs) AS runs,
         arg_max(attribute_name, named_at) FILTER (WHERE attribute_name IS NOT NULL) AS name
       FROM ${s.attributes} GROUP BY attribute_id
     ),
     per_value AS (
       SELECT attribute_id, value, sum(evaluations) AS evaluations FROM ${s.evaluationValues} GROUP BY ALL
     ),
     values_of AS (
       SELECT attribute_id, count(DISTINCT value) AS distinct_values,
         sum(TRY_CAST(value AS DOUBLE) * evaluations) / nullif(sum(evaluations) FILTER (
           WHERE TRY_CAST(value AS DOUBLE) IS NOT NULL), 0) AS avg_numeric_value
       FROM per_value GROUP BY attribute_id
     )
     SELECT a.attribute_id,
       CASE WHEN a.attribute_id IS NULL THEN '(no attribute)' ELSE coalesce(a.name, '(unnamed attribute)') END
         AS attribute_name,
       a.evaluations, a.runs, v.distinct_values, v.avg_numeric_value
     FROM per_attribute a LEFT JOIN values_of v ON v.attribute_id IS NOT DISTINCT FROM a.attribute_id
     ORDER BY a.evaluations DESC, attribute_name`,
  );
}
