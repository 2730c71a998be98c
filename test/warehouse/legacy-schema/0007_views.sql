-- Ready-made answers to the questions support teams ask, as views over the tables above. They
-- use only tables the Parquet export writes, so analytics.duckdb (views over the Parquet tree,
-- same names) carries the same definitions and answers the same questions.
-- Conventions: a day is the UTC day the run was created (created_date); a rate is a fraction
-- between 0 and 1 of all the runs (or calls) in its group; a group key the API left empty stays
-- NULL rather than being renamed, so filters on it behave as on the base tables.

-- Runs per day by status and resolution type: one row per (day, status, resolution_type) that
-- has runs, with how many are waiting for approval and their mean duration.
CREATE OR REPLACE VIEW v_runs_daily AS
SELECT
  created_date AS day,
  status,
  resolution_type,
  count(*) AS runs,
  count(*) FILTER (WHERE approval_waiting_for_approval) AS waiting_for_approval,
  avg(duration_seconds) AS avg_duration_seconds
FROM runs
GROUP BY created_date, status, resolution_type
ORDER BY day, status NULLS LAST, resolution_type NULLS LAST;

-- Runs per day by resolution, one row per day, one column per resolution type the API names;
-- `no_resolution` counts runs without one (still running, failed, cancelled) and
-- `other_resolution` any type the API may add later, so the columns always add up to `runs`.
CREATE OR REPLACE VIEW v_runs_daily_resolution AS
SELECT
  created_date AS day,
  count(*) AS runs,
  count(*) FILTER (WHERE resolution_type = 'deflected') AS deflected,
  count(*) FILTER (WHERE resolution_type = 'resolved') AS resolved,
  count(*) FILTER (WHERE resolution_type = 'escalated') AS escalated,
  count(*) FILTER (WHERE resolution_type = 'pending') AS pending,
  count(*) FILTER (WHERE resolution_type IS NULL) AS no_resolution,
  count(*) FILTER (WHERE resolution_type NOT IN ('deflected', 'resolved', 'escalated', 'pending')) AS other_resolution
FROM runs
GROUP BY created_date
ORDER BY day;

-- Deflection and escalation per agent, over all of the agent's runs. The name is the live
-- catalog's, or (for an agent no longer listed) the latest one its runs carried; runs without an
-- agent id form one row with agent_id NULL.
CREATE OR REPLACE VIEW v_resolution_by_agent AS
WITH per_agent AS (
  SELECT
    agent_id,
    arg_max(agent_name, created_at) AS last_seen_name,
    count(*) AS runs,
    count(*) FILTER (WHERE resolution_type = 'deflected') AS deflected,
    count(*) FILTER (WHERE resolution_type = 'resolved') AS resolved,
    count(*) FILTER (WHERE resolution_type = 'escalated') AS escalated,
    count(*) FILTER (WHERE resolution_type = 'pending') AS pending,
    count(*) FILTER (WHERE resolution_type IS NULL) AS no_resolution,
    min(created_at) AS first_run_at,
    max(created_at) AS last_run_at
  FROM runs
  GROUP BY agent_id
)
SELECT
  p.agent_id,
  coalesce(a.name, p.last_seen_name) AS agent_name,
  a.id IS NOT NULL AS in_catalog,
  p.runs,
  p.deflected,
  p.resolved,
  p.escalated,
  p.pending,
  p.no_resolution,
  p.deflected / p.runs AS deflection_rate,
  p.escalated / p.runs AS escalation_rate,
  p.resolved / p.runs AS resolution_rate,
  p.first_run_at,
  p.last_run_at
FROM per_agent p
LEFT JOIN agents a ON a.id = p.agent_id
ORDER BY p.runs DESC, p.agent_id NULLS LAST;

-- Deflection and escalation per category, over all runs of the category. Categories have no
-- catalog of their own: the name is the latest one the category's runs carried. Runs without a
-- category id form one row with category_id NULL.
CREATE OR REPLACE VIEW v_resolution_by_category AS
SELECT
  category_id,
  arg_max(category_name, created_at) AS category_name,
  count(*) AS runs,
  count(*) FILTER (WHERE resolution_type = 'deflected') AS deflected,
  count(*) FILTER (WHERE resolution_type = 'resolved') AS resolved,
  count(*) FILTER (WHERE resolution_type = 'escalated') AS escalated,
  count(*) FILTER (WHERE resolution_type = 'pending') AS pending,
  count(*) FILTER (WHERE resolution_type IS NULL) AS no_resolution,
  count(*) FILTER (WHERE resolution_type = 'deflected') / count(*) AS deflection_rate,
  count(*) FILTER (WHERE resolution_type = 'escalated') / count(*) AS escalation_rate,
  count(*) FILTER (WHERE resolution_type = 'resolved') / count(*) AS resolution_rate,
  min(created_at) AS first_run_at,
  max(created_at) AS last_run_at
FROM runs
GROUP BY category_id
ORDER BY runs DESC, category_id NULLS LAST;

-- Tool calls per tool (steps of type tool_call): volume, errors (a call whose tool error is a
-- non-empty string), error rate, duration, joined to the tool catalog by the recorded tool name
-- (preferring a catalog tool of the same type when names repeat) and to the tool options'
-- display name. Catalog tools never called appear with 0 calls; tools called but no longer in
-- the catalog appear with in_catalog false.
CREATE OR REPLACE VIEW v_tool_stats AS
WITH calls AS (
  SELECT
    tool_name,
    tool_type,
    count(*) AS calls,
    count(*) FILTER (WHERE coalesce(tool_error, '') <> '') AS errors,
    count(DISTINCT run_id) AS runs,
    median(duration_seconds) AS median_duration_seconds,
    avg(duration_seconds) AS avg_duration_seconds,
    quantile_cont(duration_seconds, 0.9) AS p90_duration_seconds,
    min("timestamp") AS first_call_at,
    max("timestamp") AS last_call_at
  FROM run_tool_calls
  GROUP BY tool_name, tool_type
),
matched AS (
  SELECT c.*, t.id AS tool_id
  FROM calls c
  LEFT JOIN tools t ON t.name = c.tool_name
  QUALIFY row_number() OVER (
    PARTITION BY c.tool_name, c.tool_type
    ORDER BY (t.type IS NOT DISTINCT FROM c.tool_type) DESC, t.id
  ) = 1
),
every_tool AS (
  SELECT * FROM matched
  UNION ALL BY NAME
  SELECT name AS tool_name, type AS tool_type, 0 AS calls, 0 AS errors, 0 AS runs, id AS tool_id
  FROM tools
  WHERE id NOT IN (SELECT tool_id FROM matched WHERE tool_id IS NOT NULL)
)
SELECT
  e.tool_name,
  o.display_name,
  e.tool_id,
  coalesce(t.type, e.tool_type) AS tool_type,
  t.id IS NOT NULL AS in_catalog,
  t.enabled,
  t.requires_approval,
  t.is_write_action,
  t.service_category,
  t.app_integration_name,
  t.mcp_server_name,
  e.calls,
  e.errors,
  e.errors / nullif(e.calls, 0) AS error_rate,
  e.runs,
  e.median_duration_seconds,
  e.avg_duration_seconds,
  e.p90_duration_seconds,
  e.first_call_at,
  e.last_call_at
FROM every_tool e
LEFT JOIN tools t ON t.id = e.tool_id
LEFT JOIN run_tool_options o ON o.tool_name = e.tool_name
ORDER BY e.calls DESC, e.tool_name;

-- Runs waiting for someone to approve a tool call, oldest change first, with the pending tool,
-- its parameters (as redacted and truncated by the API) and the step that asked.
CREATE OR REPLACE VIEW v_runs_awaiting_approval AS
SELECT
  r.id AS run_id,
  r.created_at,
  r.updated_at,
  r.status,
  r.agent_id,
  r.agent_name,
  r.category_name,
  r.ticket_id,
  r.ticket_title,
  r.ticket_url,
  r.approval_pending_step_id AS pending_step_id,
  s."timestamp" AS pending_step_at,
  s.title AS pending_step_title,
  r.approval_pending_tool_id AS pending_tool_id,
  r.approval_pending_tool_name AS pending_tool_name,
  r.approval_pending_tool_type AS pending_tool_type,
  r.approval_pending_params AS pending_params,
  r.approval_pending_redacted AS pending_params_redacted,
  r.approval_pending_truncated AS pending_params_truncated,
  r.scheduled_resume_at
FROM runs r
LEFT JOIN run_steps s ON s.run_id = r.id AND s.id = r.approval_pending_step_id
WHERE r.approval_waiting_for_approval
ORDER BY r.updated_at, r.id;

-- Distribution of evaluation attribute values: one row per (attribute, value), with how many
-- evaluations carry it, in how many runs, and its share of the attribute's evaluations. The
-- attribute's name is the one most recently recorded.
CREATE OR REPLACE VIEW v_evaluation_values AS
WITH per_attribute AS (
  SELECT attribute_id, arg_max(name, recorded_at) AS attribute_name, count(*) AS evaluations
  FROM run_evaluations
  GROUP BY attribute_id
),
per_value AS (
  SELECT attribute_id, value, count(*) AS evaluations, count(DISTINCT run_id) AS runs
  FROM run_evaluations
  GROUP BY attribute_id, value
)
SELECT
  v.attribute_id,
  a.attribute_name,
  v.value,
  v.evaluations,
  v.runs,
  v.evaluations / a.evaluations AS share
FROM per_value v
JOIN per_attribute a ON a.attribute_id IS NOT DISTINCT FROM v.attribute_id
ORDER BY a.attribute_name, v.attribute_id, v.evaluations DESC, v.value;

-- One row per evaluation attribute: how often it was recorded, over how many runs, how many
-- distinct values, and for values that read as numbers (a CSAT score) their count and mean.
CREATE OR REPLACE VIEW v_evaluation_attributes AS
SELECT
  attribute_id,
  arg_max(name, recorded_at) AS attribute_name,
  arg_max(description, recorded_at) AS description,
  count(*) AS evaluations,
  count(DISTINCT run_id) AS runs,
  count(DISTINCT value) AS distinct_values,
  count(TRY_CAST(value AS DOUBLE)) AS numeric_evaluations,
  avg(TRY_CAST(value AS DOUBLE)) AS avg_numeric_value,
  min(recorded_at) AS first_recorded_at,
  max(recorded_at) AS last_recorded_at
FROM run_evaluations
GROUP BY attribute_id
ORDER BY attribute_name, attribute_id;

-- Each run with its agent's configuration as it was when the run was created, from
-- agents_history: the version whose [valid_from, valid_to) holds the run's created_at.
-- agent_config_match says how the version was found:
--   as_of_creation        the version in force when the run was created;
--   earliest_known        the run predates every version runsync has seen (history starts at the
--                         first snapshot), so the earliest one stands in;
--   agent_not_in_catalog  the agent never appeared in the agents listing;
--   no_agent              the run names no agent.
-- A run created after its agent was deleted gets the deleted version (agent_version_deleted).
CREATE OR REPLACE VIEW v_run_agent_config AS
WITH versions AS (
  SELECT
    h.*,
    CASE WHEN row_number() OVER (PARTITION BY h.id ORDER BY h.valid_from) = 1
      THEN '-infinity'::TIMESTAMPTZ ELSE h.valid_from END AS reaches_back_to
  FROM agents_history h
)
SELECT
  r.id AS run_id,
  r.created_at AS run_created_at,
  r.created_date,
  r.status AS run_status,
  r.resolution_type,
  r.agent_id,
  CASE
    WHEN r.agent_id IS NULL THEN 'no_agent'
    WHEN v.id IS NULL THEN 'agent_not_in_catalog'
    WHEN r.created_at >= v.valid_from THEN 'as_of_creation'
    ELSE 'earliest_known'
  END AS agent_config_match,
  v.valid_from AS agent_version_valid_from,
  v.valid_to AS agent_version_valid_to,
  v.is_deleted AS agent_version_deleted,
  v.content_hash AS agent_version_hash,
  v.updated_at AS agent_updated_at,
  v.name AS agent_name,
  v.description AS agent_description,
  v.status AS agent_status,
  v.instructions AS agent_instructions,
  v.start_with_type AS agent_start_with_type,
  v.start_with_id AS agent_start_with_id,
  v.start_with_name AS agent_start_with_name,
  v.model_config AS agent_model_config,
  v.tool_ids AS agent_tool_ids,
  v.resolution_tracking AS agent_resolution_tracking,
  v.resolution_rule_ids AS agent_resolution_rule_ids,
  v.knowledge_tags AS agent_knowledge_tags,
  v.guideline_ids AS agent_guideline_ids,
  v.guardrail_ids AS agent_guardrail_ids,
  v.attribute_ids AS agent_attribute_ids,
  v.category_ids AS agent_category_ids,
  v.included_runbook_ids AS agent_included_runbook_ids,
  v.excluded_runbook_ids AS agent_excluded_runbook_ids,
  v.included_workflow_ids AS agent_included_workflow_ids,
  v.excluded_workflow_ids AS agent_excluded_workflow_ids
FROM runs r
LEFT JOIN versions v
  ON v.id = r.agent_id
  AND r.created_at >= v.reaches_back_to
  AND (v.valid_to IS NULL OR r.created_at < v.valid_to);

-- Freshness of every exported table: its rows, the newest change it holds (a run's updated_at,
-- a step's or message's time, a catalog version's valid_from, so deletions count) and, where
-- runsync records it, when it last fetched from the API.
CREATE OR REPLACE VIEW v_table_freshness AS
SELECT 'runs' AS table_name, count(*) AS row_count, max(updated_at) AS newest_change_at,
  max(fetched_at) AS last_fetched_at FROM runs
UNION ALL SELECT 'run_messages', count(*), max(recorded_at), NULL FROM run_messages
UNION ALL SELECT 'run_steps', count(*), max("timestamp"), NULL FROM run_steps
UNION ALL SELECT 'run_evaluations', count(*), max(recorded_at), NULL FROM run_evaluations
UNION ALL SELECT 'run_tool_options', count(*), NULL, max(fetched_at) FROM run_tool_options
UNION ALL SELECT 'tools', (SELECT count(*) FROM tools), max(valid_from), NULL FROM tools_history
UNION ALL SELECT 'agents', (SELECT count(*) FROM agents), max(valid_from), NULL FROM agents_history
UNION ALL SELECT 'guidelines', (SELECT count(*) FROM guidelines), max(valid_from), NULL FROM guidelines_history
UNION ALL SELECT 'guardrails', (SELECT count(*) FROM guardrails), max(valid_from), NULL FROM guardrails_history
UNION ALL SELECT 'runbooks', (SELECT count(*) FROM runbooks), max(valid_from), NULL FROM runbooks_history;
