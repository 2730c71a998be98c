-- Type-2 history of the catalog: every version of every object, with the live table's columns
-- plus content_hash (digest of what makes a version: every column but agents.last_run_at),
-- valid_from, valid_to (null while current) and is_deleted (the object vanished from a complete
-- listing; the row repeats its last content). A version's valid_from is the object's updated_at
-- when that moved forward, else the time of the listing that showed the change, so the versions
-- of one object never overlap. Parameters are versioned with their tool.

CREATE TABLE tools_history (
  id VARCHAR NOT NULL,
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
  updated_at TIMESTAMPTZ,
  content_hash VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (id, valid_from)
);

CREATE TABLE tool_parameters_history (
  tool_id VARCHAR NOT NULL,
  name VARCHAR NOT NULL,
  ordinal BIGINT,
  type VARCHAR,
  required BOOLEAN,
  description VARCHAR,
  has_preset_value BOOLEAN,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (tool_id, name, valid_from)
);

CREATE TABLE agents_history (
  id VARCHAR NOT NULL,
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
  updated_at TIMESTAMPTZ,
  content_hash VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (id, valid_from)
);

CREATE TABLE guidelines_history (
  id VARCHAR NOT NULL,
  title VARCHAR,
  content VARCHAR,
  section_id VARCHAR,
  section_name VARCHAR,
  section_description VARCHAR,
  section_icon VARCHAR,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ,
  content_hash VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (id, valid_from)
);

CREATE TABLE guardrails_history (
  id VARCHAR NOT NULL,
  title VARCHAR,
  content VARCHAR,
  type VARCHAR,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ,
  content_hash VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (id, valid_from)
);

CREATE TABLE runbooks_history (
  id VARCHAR NOT NULL,
  name VARCHAR,
  description VARCHAR,
  content VARCHAR,
  type VARCHAR,
  used_by_agent_ids VARCHAR[],
  folder_id VARCHAR,
  inserts JSON,
  model_config JSON,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ,
  content_hash VARCHAR NOT NULL,
  valid_from TIMESTAMPTZ NOT NULL,
  valid_to TIMESTAMPTZ,
  is_deleted BOOLEAN NOT NULL,
  PRIMARY KEY (id, valid_from)
);
