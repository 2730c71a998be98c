-- Ready-made answers to the questions support teams ask, as views over the resource tables. They
-- use only tables the Parquet export writes, so analytics.duckdb (views over the Parquet tree,
-- same names) carries the same definitions and answers the same questions. Views hold no data:
-- this file is applied again, whole, whenever it changes (it is not a numbered migration).
-- Conventions: a day is the UTC day the run was created (created_date); a rate is a fraction
-- between 0 and 1 of all the runs (or calls) in its group. Views that group by agent, category,
-- tool or evaluation attribute group by the thing's id and label it with its latest name: names
-- change, and the API may leave an id or a name empty. Runs without an id form one group with the
-- id NULL and a label in parentheses, "(no category)", never a name borrowed from other runs; an
-- id whose runs never carried a name is labelled "(unnamed category)" and the like.

-- Runs of a group by resolution type: `no_resolution` counts runs without one (still running,
-- failed, cancelled). A struct, so that a view takes all its columns with unnest().
CREATE OR REPLACE MACRO resolution_counts(resolution) AS {
  'runs': count(*),
  'deflected': count(*) FILTER (WHERE resolution = 'deflected'),
  'resolved': count(*) FILTER (WHERE resolution = 'resolved'),
  'escalated': count(*) FILTER (WHERE resolution = 'escalated'),
  'pending': count(*) FILTER (WHERE resolution = 'pending'),
  'no_resolution': count(*) FILTER (WHERE resolution IS NULL)
};

-- The rates of a group, from its resolution_counts.
CREATE OR REPLACE MACRO resolution_rates(c) AS {
  'deflection_rate': c.deflected / c.runs,
  'escalation_rate': c.escalated / c.runs,
  'resolution_rate': c.resolved / c.runs
};

-- Runs per day by status and resolution type: one row per (day, status, resolution_type) that
-- has runs, with how many are waiting for approval and their mean duration.
-- Runs the API deleted (is_deleted) are left out.
CREATE OR REPLACE VIEW v_runs_daily AS
SELECT
  created_date AS day,
  status,
  resolution_type,
  count(*) AS runs,
  count(*) FILTER (WHERE approval_waiting_for_approval) AS waiting_for_approval,
  avg(duration_seconds) AS avg_duration_seconds
FROM runs
WHERE NOT coalesce(is_deleted, false)
GROUP BY created_date, status, resolution_type
ORDER BY day, status NULLS LAST, resolution_type NULLS LAST;

-- Runs per day by resolution, one row per day, one column per resolution type the API names and
-- `other_resolution` for any type the API may add later, so the columns always add up to `runs`.
-- Runs the API deleted (is_deleted) are left out.
CREATE OR REPLACE VIEW v_runs_daily_resolution AS
SELECT
  created_date AS day,
  unnest(resolution_counts(resolution_type)),
  count(*) FILTER (WHERE resolution_type NOT IN ('deflected', 'resolved', 'escalated', 'pending')) AS other_resolution
FROM runs
WHERE NOT coalesce(is_deleted, false)
GROUP BY created_date
ORDER BY day;

-- Deflection and escalation per agent, over all of the agent's runs. The name is the live
-- catalog's, or for an agent no longer listed its last version's in agents_history, or the
-- latest one its runs carried.
-- Runs the API deleted (is_deleted) are left out.
CREATE OR REPLACE VIEW v_resolution_by_agent AS
WITH per_agent AS (
  SELECT
    agent_id,
    arg_max(agent_name, created_at) FILTER (WHERE agent_name IS NOT NULL) AS last_seen_name,
    resolution_counts(resolution_type) AS c,
    min(created_at) AS first_run_at,
    max(created_at) AS last_run_at
  FROM runs
  WHERE NOT coalesce(is_deleted, false)
  GROUP BY agent_id
),
last_version AS (
  SELECT id, arg_max(name, valid_from) AS name FROM agents_history GROUP BY id
)
SELECT
  p.agent_id,
  CASE
    WHEN p.agent_id IS NULL THEN '(no agent)'
    ELSE coalesce(a.name, h.name, p.last_seen_name, '(unnamed agent)')
  END AS agent_name,
  a.id IS NOT NULL AS in_catalog,
  unnest(p.c),
  unnest(resolution_rates(p.c)),
  p.first_run_at,
  p.last_run_at
FROM per_agent p
LEFT JOIN agents a ON a.id = p.agent_id
LEFT JOIN last_version h ON h.id = p.agent_id
ORDER BY p.c.runs DESC, p.agent_id NULLS LAST;

-- Deflection and escalation per category. Categories have no catalog of their own: the label is
-- the name the category's most recently created run carried.
-- Runs the API deleted (is_deleted) are left out.
CREATE OR REPLACE VIEW v_resolution_by_category AS
WITH per_category AS (
  SELECT
    category_id,
    arg_max(category_name, created_at) FILTER (WHERE category_name IS NOT NULL) AS last_seen_name,
    resolution_counts(resolution_type) AS c,
    min(created_at) AS first_run_at,
    max(created_at) AS last_run_at
  FROM runs
  WHERE NOT coalesce(is_deleted, false)
  GROUP BY category_id
)
SELECT
  category_id,
  CASE WHEN category_id IS NULL THEN '(no category)' ELSE coalesce(last_seen_name, '(unnamed category)') END
    AS category_name,
  unnest(c),
  unnest(resolution_rates(c)),
  first_run_at,
  last_run_at
FROM per_category
ORDER BY c.runs DESC, category_id NULLS LAST;

-- Tool calls per tool (steps of type tool_call). A step records its tool by name only, so each
-- recorded name is matched to a catalog tool: the live tool of that name (of the same type when
-- names repeat), else the tool that had that name in an earlier version (tools_history), so
-- calls made before a rename count with the tool's later ones. Calls are grouped by the matched
-- tool's id, labelled with its live name (or, once deleted, its last one); calls no catalog
-- version ever named stay grouped by recorded name and type. recorded_tool_names lists the
-- names the calls carried. Catalog tools never called appear with 0 calls; tools no longer in the
-- catalog appear with in_catalog false.
CREATE OR REPLACE VIEW v_tool_stats AS
WITH known_names AS (
  SELECT name, type, id, 0 AS former, NULL::TIMESTAMPTZ AS valid_from FROM tools
  UNION ALL
  SELECT name, type, id, 1, valid_from FROM tools_history
),
matched AS (
  SELECT r.tool_name, r.tool_type, k.id AS tool_id
  FROM (SELECT DISTINCT tool_name, tool_type FROM run_tool_calls) r
  LEFT JOIN known_names k ON k.name = r.tool_name
  QUALIFY row_number() OVER (
    PARTITION BY r.tool_name, r.tool_type
    ORDER BY k.former, (k.type IS NOT DISTINCT FROM r.tool_type) DESC, k.valid_from DESC NULLS LAST, k.id
  ) = 1
),
calls AS (
  SELECT
    m.tool_id,
    CASE WHEN m.tool_id IS NULL THEN c.tool_name END AS unmatched_name,
    CASE WHEN m.tool_id IS NULL THEN c.tool_type END AS unmatched_type,
    arg_max(c.tool_name, c."timestamp") AS last_recorded_name,
    arg_max(c.tool_type, c."timestamp") AS last_recorded_type,
    list(DISTINCT c.tool_name) FILTER (WHERE c.tool_name IS NOT NULL) AS recorded_tool_names,
    count(*) AS calls,
    count(*) FILTER (WHERE coalesce(c.tool_error, '') <> '') AS errors,
    count(DISTINCT c.run_id) AS runs,
    median(c.duration_seconds) AS median_duration_seconds,
    avg(c.duration_seconds) AS avg_duration_seconds,
    quantile_cont(c.duration_seconds, 0.9) AS p90_duration_seconds,
    min(c."timestamp") AS first_call_at,
    max(c."timestamp") AS last_call_at
  FROM run_tool_calls c
  JOIN matched m ON m.tool_name IS NOT DISTINCT FROM c.tool_name AND m.tool_type IS NOT DISTINCT FROM c.tool_type
  GROUP BY ALL
),
every_tool AS (
  SELECT * FROM calls
  UNION ALL BY NAME
  SELECT t.id AS tool_id, 0 AS calls, 0 AS errors, 0 AS runs
  FROM tools t
  ANTI JOIN matched m ON m.tool_id = t.id
),
last_version AS (
  SELECT id, arg_max(name, valid_from) AS name, arg_max(type, valid_from) AS type FROM tools_history GROUP BY id
)
SELECT
  coalesce(t.name, h.name, e.unmatched_name, e.last_recorded_name, '(no tool name)') AS tool_name,
  o.display_name,
  e.tool_id,
  coalesce(t.type, h.type, e.unmatched_type, e.last_recorded_type) AS tool_type,
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
  e.last_call_at,
  coalesce(list_sort(e.recorded_tool_names), []::VARCHAR[]) AS recorded_tool_names
FROM every_tool e
LEFT JOIN tools t ON t.id = e.tool_id
LEFT JOIN last_version h ON h.id = e.tool_id
LEFT JOIN run_tool_options o ON o.tool_name = coalesce(t.name, h.name, e.unmatched_name, e.last_recorded_name)
ORDER BY e.calls DESC, tool_name, e.tool_id NULLS LAST;

-- Runs waiting for someone to approve a tool call, oldest change first, with the pending tool,
-- its parameters (as redacted and truncated by the API) and the step that asked.
-- Runs the API deleted (is_deleted) are left out.
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
WHERE r.approval_waiting_for_approval AND NOT coalesce(r.is_deleted, false)
ORDER BY r.updated_at, r.id;

-- The label of an evaluation attribute, over its evaluations (grouped by attribute_id): the name
-- most recently recorded under its id.
CREATE OR REPLACE MACRO attribute_label(attribute_id, name, recorded_at) AS
  CASE
    WHEN attribute_id IS NULL THEN '(no attribute)'
    ELSE coalesce(arg_max(name, recorded_at) FILTER (WHERE name IS NOT NULL), '(unnamed attribute)')
  END;

-- Distribution of evaluation attribute values: one row per (attribute, value), with how many
-- evaluations carry it, in how many runs, and its share of the attribute's evaluations.
CREATE OR REPLACE VIEW v_evaluation_values AS
WITH per_attribute AS (
  SELECT
    attribute_id,
    attribute_label(attribute_id, name, recorded_at) AS attribute_name,
    count(*) AS evaluations
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
  attribute_label(attribute_id, name, recorded_at) AS attribute_name,
  arg_max(description, recorded_at) FILTER (WHERE description IS NOT NULL) AS description,
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
-- Runs the API deleted (is_deleted) are left out.
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
  AND (v.valid_to IS NULL OR r.created_at < v.valid_to)
WHERE NOT coalesce(r.is_deleted, false);

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

-- Run history. runs_history holds the states runsync observed: a state is seen when a fetched
-- detail shows it, so one that began and ended between two looks at the run is not there, and the
-- next state seen follows the one before it. Times are the states' updated_at, on the API's clock.
-- A settled status is completed, failed or cancelled; any other status is open.

-- Every observed change of a run's status, resolution type or wait for approval, and its first
-- state: one row per change, with the state before it.
--   seq                     the change's place among the run's observed states, from 1
--   changed_at              when the new state began (its updated_at)
--   seconds_since_created   from the run's created_at to `changed_at`
CREATE OR REPLACE VIEW run_transitions AS
SELECT * EXCLUDE (changed) FROM (
  SELECT
    id AS run_id,
    created_date,
    created_at,
    agent_id,
    agent_name,
    row_number() OVER w AS seq,
    lag(status) OVER w AS from_status,
    status AS to_status,
    lag(resolution_type) OVER w AS from_resolution_type,
    resolution_type AS to_resolution_type,
    lag(approval_waiting_for_approval) OVER w AS was_waiting_for_approval,
    approval_waiting_for_approval AS waiting_for_approval,
    valid_from AS changed_at,
    observed_at,
    epoch(valid_from - created_at) AS seconds_since_created,
    row_number() OVER w = 1
      OR status IS DISTINCT FROM lag(status) OVER w
      OR resolution_type IS DISTINCT FROM lag(resolution_type) OVER w
      OR approval_waiting_for_approval IS DISTINCT FROM lag(approval_waiting_for_approval) OVER w AS changed
  FROM runs_history
  WINDOW w AS (PARTITION BY id ORDER BY valid_from)
)
WHERE changed;

-- Per run and status: when the run was first seen in it, how long after its creation, and how
-- long it spent in it over all its observed states.
--   seconds_to_status   from created_at to the first state with this status
--   seconds_in_status   the time of its closed states with this status
--   is_current          whether the run's current state has this status (its time still runs)
CREATE OR REPLACE VIEW run_status_durations AS
SELECT
  id AS run_id,
  any_value(created_date) AS created_date,
  any_value(agent_id) AS agent_id,
  status,
  min(valid_from) AS first_at,
  epoch(min(valid_from) - any_value(created_at)) AS seconds_to_status,
  coalesce(sum(epoch(valid_to - valid_from)), 0) AS seconds_in_status,
  bool_or(valid_to IS NULL) AS is_current
FROM runs_history
GROUP BY id, status
ORDER BY run_id, first_at;

-- Each time a run waited for approval of a tool call: consecutive observed states with
-- approval_waiting_for_approval, from the first to the state that ended the wait.
--   seconds_waited   from started_at to ended_at; null while the run still waits
CREATE OR REPLACE VIEW run_approval_waits AS
WITH marked AS (
  SELECT *,
    sum(CASE WHEN approval_waiting_for_approval IS DISTINCT FROM prev THEN 1 ELSE 0 END)
      OVER (PARTITION BY id ORDER BY valid_from) AS island
  FROM (
    SELECT *, lag(approval_waiting_for_approval) OVER (PARTITION BY id ORDER BY valid_from) AS prev FROM runs_history
  )
)
SELECT
  id AS run_id,
  any_value(created_date) AS created_date,
  any_value(agent_id) AS agent_id,
  arg_max(agent_name, valid_from) AS agent_name,
  arg_min(approval_pending_tool_name, valid_from) AS tool_name,
  min(valid_from) AS started_at,
  CASE WHEN bool_or(valid_to IS NULL) THEN NULL ELSE max(valid_to) END AS ended_at,
  CASE WHEN bool_or(valid_to IS NULL) THEN NULL ELSE epoch(max(valid_to) - min(valid_from)) END AS seconds_waited
FROM marked
WHERE approval_waiting_for_approval
GROUP BY id, island
ORDER BY started_at, run_id;

-- Every observed change of a run's resolution type after it first had one (a correction, or a
-- pending resolution settled).
CREATE OR REPLACE VIEW run_resolution_changes AS
SELECT run_id, created_date, agent_id, changed_at, from_resolution_type, to_resolution_type, to_status AS status
FROM run_transitions
WHERE from_resolution_type IS NOT NULL AND from_resolution_type IS DISTINCT FROM to_resolution_type;

-- Runs seen open again after a settled state: one row per re-opening, with the settled state.
CREATE OR REPLACE VIEW run_reopened AS
SELECT run_id, created_date, agent_id, from_status AS settled_status, changed_at AS reopened_at, to_status AS reopened_status
FROM run_transitions
WHERE from_status IN ('completed', 'failed', 'cancelled') AND to_status NOT IN ('completed', 'failed', 'cancelled');
