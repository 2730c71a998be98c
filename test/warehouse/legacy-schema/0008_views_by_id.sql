-- The ready-made views that group by agent, category, tool or evaluation attribute, grouped by
-- the thing's id and labelled with its latest name. Names change (a category renamed, an agent
-- renamed, a tool given a new name) and the API may leave an id or a name empty: a group is one
-- id, whatever names its runs carried, and runs without an id form one group with the id NULL
-- and a label in parentheses, "(no category)", never a name borrowed from other runs. An id whose
-- runs never carried a name is labelled "(unnamed category)" and the like.

-- Deflection and escalation per agent, over all of the agent's runs. The name is the live
-- catalog's, or for an agent no longer listed its last version's in agents_history, or the
-- latest one its runs carried.
CREATE OR REPLACE VIEW v_resolution_by_agent AS
WITH per_agent AS (
  SELECT
    agent_id,
    arg_max(agent_name, created_at) FILTER (WHERE agent_name IS NOT NULL) AS last_seen_name,
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
LEFT JOIN last_version h ON h.id = p.agent_id
ORDER BY p.runs DESC, p.agent_id NULLS LAST;

-- Deflection and escalation per category. Categories have no catalog of their own: the label is
-- the name the category's most recently created run carried.
CREATE OR REPLACE VIEW v_resolution_by_category AS
SELECT
  category_id,
  CASE
    WHEN category_id IS NULL THEN '(no category)'
    ELSE coalesce(
      arg_max(category_name, created_at) FILTER (WHERE category_name IS NOT NULL),
      '(unnamed category)'
    )
  END AS category_name,
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

-- Distribution of evaluation attribute values: one row per (attribute, value), with how many
-- evaluations carry it, in how many runs, and its share of the attribute's evaluations. The
-- attribute's label is the name most recently recorded under its id.
CREATE OR REPLACE VIEW v_evaluation_values AS
WITH per_attribute AS (
  SELECT
    attribute_id,
    CASE
      WHEN attribute_id IS NULL THEN '(no attribute)'
      ELSE coalesce(arg_max(name, recorded_at) FILTER (WHERE name IS NOT NULL), '(unnamed attribute)')
    END AS attribute_name,
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
  CASE
    WHEN attribute_id IS NULL THEN '(no attribute)'
    ELSE coalesce(arg_max(name, recorded_at) FILTER (WHERE name IS NOT NULL), '(unnamed attribute)')
  END AS attribute_name,
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
