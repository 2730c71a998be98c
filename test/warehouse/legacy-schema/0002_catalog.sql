-- The live catalog: one row per object the API lists now. Sub-objects become parent_member
-- columns, arrays of ids become lists, free-form objects and arrays of objects become JSON.

CREATE TABLE tools (
  id VARCHAR PRIMARY KEY,
  type VARCHAR,
  name VARCHAR,
  description VARCHAR,
  is_write_action BOOLEAN,
  requires_approval BOOLEAN,
  enabled BOOLEAN,
  service_category VARCHAR,
  service_availability VARCHAR,
  app_integration_id VARCHAR,
  app_integration_name VARCHAR,
  app_connection_mode VARCHAR,
  app_connection_status VARCHAR,
  custom_endpoint VARCHAR,
  custom_method VARCHAR,
  custom_body_format VARCHAR,
  custom_headers JSON,
  custom_http_timeout_sec BIGINT,
  custom_auth JSON,
  mcp_server_id VARCHAR,
  mcp_server_name VARCHAR,
  mcp_tool_name VARCHAR,
  mcp_input_schema JSON,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ
);

CREATE TABLE tool_parameters (
  tool_id VARCHAR NOT NULL,
  name VARCHAR NOT NULL,
  ordinal BIGINT,
  type VARCHAR,
  required BOOLEAN,
  description VARCHAR,
  has_preset_value BOOLEAN,
  PRIMARY KEY (tool_id, name)
);

CREATE TABLE agents (
  id VARCHAR PRIMARY KEY,
  name VARCHAR,
  description VARCHAR,
  status VARCHAR,
  instructions VARCHAR,
  last_run_at TIMESTAMPTZ,
  start_with_type VARCHAR,
  start_with_id VARCHAR,
  start_with_name VARCHAR,
  model_config JSON,
  tool_ids VARCHAR[],
  resolution_tracking BOOLEAN,
  resolution_rule_ids VARCHAR[],
  knowledge_tags VARCHAR[],
  guideline_ids VARCHAR[],
  guardrail_ids VARCHAR[],
  attribute_ids VARCHAR[],
  category_ids VARCHAR[],
  included_runbook_ids VARCHAR[],
  excluded_runbook_ids VARCHAR[],
  included_workflow_ids VARCHAR[],
  excluded_workflow_ids VARCHAR[],
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ
);

CREATE TABLE guidelines (
  id VARCHAR PRIMARY KEY,
  title VARCHAR,
  content VARCHAR,
  section_id VARCHAR,
  section_name VARCHAR,
  section_description VARCHAR,
  section_icon VARCHAR,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ
);

CREATE TABLE guardrails (
  id VARCHAR PRIMARY KEY,
  title VARCHAR,
  content VARCHAR,
  type VARCHAR,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ
);

-- inserts: an array of {id, name, type, source} objects, kept as JSON.
CREATE TABLE runbooks (
  id VARCHAR PRIMARY KEY,
  name VARCHAR,
  description VARCHAR,
  content VARCHAR,
  type VARCHAR,
  used_by_agent_ids VARCHAR[],
  folder_id VARCHAR,
  inserts JSON,
  model_config JSON,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ
);
