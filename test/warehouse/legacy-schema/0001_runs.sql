-- Runs and the contents of a run detail. One row per run in `runs` (its latest known state); the
-- child tables hold the run's conversation, steps and evaluation attributes and are replaced as a
-- whole whenever a newer payload of the run is merged. The (run_id, id) keys of the child tables
-- are kept by that merge rather than by an index, so bulk merges stay cheap at millions of rows.
-- created_date (UTC day of created_at) is on every table so the Parquet export can partition by it.

CREATE TABLE runs (
  id VARCHAR PRIMARY KEY,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  status VARCHAR,
  source VARCHAR,
  duration_seconds DOUBLE,
  ticket_id VARCHAR,
  ticket_title VARCHAR,
  ticket_url VARCHAR,
  agent_id VARCHAR,
  agent_name VARCHAR,
  agent_description VARCHAR,
  category_id VARCHAR,
  category_name VARCHAR,
  resolution_type VARCHAR,
  resolution_summary VARCHAR,
  trigger_event_type VARCHAR,
  trigger_source VARCHAR,
  trigger_timestamp VARCHAR,
  trigger_ticket_status VARCHAR,
  trigger_ticket_priority VARCHAR,
  ticket_tags VARCHAR[],
  trigger_message_type VARCHAR,
  trigger_internal_notes_only BOOLEAN,
  trigger_is_messaging_ticket BOOLEAN,
  trigger_customer_name VARCHAR,
  trigger_message_text VARCHAR,
  trigger_latest_comment VARCHAR,
  approval_waiting_for_approval BOOLEAN,
  approval_pending_step_id VARCHAR,
  approval_pending_tool_id VARCHAR,
  approval_pending_tool_name VARCHAR,
  approval_pending_tool_type VARCHAR,
  approval_pending_params JSON,
  approval_pending_redacted BOOLEAN,
  approval_pending_truncated BOOLEAN,
  scheduled_resume_at TIMESTAMPTZ,
  created_date DATE NOT NULL,
  -- runsync's own: when the stored payload was fetched, and a digest of it (a payload whose
  -- updated_at did not move but whose content did is still taken).
  fetched_at TIMESTAMPTZ NOT NULL,
  payload_hash VARCHAR NOT NULL
);

CREATE TABLE run_messages (
  run_id VARCHAR NOT NULL,
  id VARCHAR NOT NULL,
  ordinal BIGINT,
  role VARCHAR,
  user_name VARCHAR,
  message VARCHAR,
  source_timestamp VARCHAR,
  recorded_at TIMESTAMPTZ,
  created_date DATE NOT NULL
);

CREATE TABLE run_steps (
  run_id VARCHAR NOT NULL,
  id VARCHAR NOT NULL,
  ordinal BIGINT,
  timestamp TIMESTAMPTZ,
  type VARCHAR,
  title VARCHAR,
  content VARCHAR,
  status VARCHAR,
  duration_seconds DOUBLE,
  tool_name VARCHAR,
  tool_type VARCHAR,
  tool_input JSON,
  tool_output JSON,
  tool_redacted BOOLEAN,
  tool_truncated BOOLEAN,
  tool_error VARCHAR,
  created_date DATE NOT NULL
);

CREATE VIEW run_tool_calls AS SELECT * FROM run_steps WHERE type = 'tool_call';

CREATE TABLE run_evaluations (
  run_id VARCHAR NOT NULL,
  id VARCHAR NOT NULL,
  attribute_id VARCHAR,
  name VARCHAR,
  description VARCHAR,
  value VARCHAR,
  recorded_at TIMESTAMPTZ,
  created_date DATE NOT NULL
);

CREATE TABLE run_tool_options (
  tool_name VARCHAR PRIMARY KEY,
  display_name VARCHAR,
  run_count BIGINT,
  fetched_at TIMESTAMPTZ NOT NULL
);
