-- What the HTML report shows, summed per created_date: the report reads these few rows rather than
-- every run, tool call and evaluation (src/warehouse/summaries.ts). The export keeps them: it sums
-- again the days it writes, from the tables. A day still to be exported, or never summed, is summed
-- from the tables when the report is made. Nothing else reads them. _report_days marks a day summed
-- in every one of these tables: a migration that adds one must empty it, so every day is summed
-- again.

-- Runs per day, agent and resolution type, with the latest name the agent's runs carried.
CREATE TABLE _report_runs_day (
  created_date DATE NOT NULL,
  agent_id VARCHAR,
  resolution_type VARCHAR,
  runs BIGINT NOT NULL,
  agent_named_at TIMESTAMPTZ,
  agent_name VARCHAR
);

-- Tool calls per day, recorded tool name and type, and duration bucket: a hundredth of a natural
-- logarithm wide (NULL: no duration; -1000000: none above zero), so a median read from the
-- buckets is within half a percent.
CREATE TABLE _report_tool_calls_day (
  created_date DATE NOT NULL,
  tool_name VARCHAR,
  tool_type VARCHAR,
  duration_bucket INTEGER,
  calls BIGINT NOT NULL,
  errors BIGINT NOT NULL
);

-- Evaluations per day, attribute and value.
CREATE TABLE _report_evaluation_values_day (
  created_date DATE NOT NULL,
  attribute_id VARCHAR,
  value VARCHAR,
  evaluations BIGINT NOT NULL
);

-- Evaluations per day and attribute: the runs that have one, and the latest name recorded.
CREATE TABLE _report_attributes_day (
  created_date DATE NOT NULL,
  attribute_id VARCHAR,
  evaluations BIGINT NOT NULL,
  runs BIGINT NOT NULL,
  named_at TIMESTAMPTZ,
  attribute_name VARCHAR
);

-- Runs waiting for someone to approve a tool call, with the time the pending step asked (or the
-- run's last change).
CREATE TABLE _report_waiting_day (
  created_date DATE NOT NULL,
  run_id VARCHAR NOT NULL,
  agent_name VARCHAR,
  pending_tool_name VARCHAR,
  ticket_title VARCHAR,
  since TIMESTAMPTZ
);

-- The days summed, so a warehouse made before the summaries (or a day not yet summed) is summed
-- from the tables rather than read as empty.
CREATE TABLE _report_days (created_date DATE PRIMARY KEY);
