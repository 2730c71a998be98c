import type { ColumnSpec } from './flatten-values.ts';
import { columnSpec as col } from './spec-runs.ts';

// Where each column of the catalog tables comes from. Which of a tool's sub-objects (service,
// app, custom, mcp) is present is not specified; absent ones give null columns.

export type CatalogTable = 'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks';
export const CATALOG_TABLES: readonly CatalogTable[] = ['tools', 'agents', 'guidelines', 'guardrails', 'runbooks'];

const timestamps = [col('created_at', 'timestamptz', 'created_at'), col('updated_at', 'timestamptz', 'updated_at')];

export const TOOL_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('type', 'text', 'type'),
  col('name', 'text', 'name'),
  col('description', 'text', 'description'),
  col('is_write_action', 'boolean', 'is_write_action'),
  col('requires_approval', 'boolean', 'requires_approval'),
  col('enabled', 'boolean', 'enabled'),
  col('service_category', 'text', 'service.category'),
  col('service_availability', 'text', 'service.availability'),
  col('app_integration_id', 'text', 'app.integration_id'),
  col('app_integration_name', 'text', 'app.integration_name'),
  col('app_connection_mode', 'text', 'app.connection_mode'),
  col('app_connection_status', 'text', 'app.connection_status'),
  col('custom_endpoint', 'text', 'custom.endpoint'),
  col('custom_method', 'text', 'custom.method'),
  col('custom_body_format', 'text', 'custom.body_format'),
  col('custom_headers', 'json', 'custom.headers'),
  col('custom_http_timeout_sec', 'bigint', 'custom.http_timeout_sec'),
  col('custom_auth', 'json', 'custom.auth'),
  col('mcp_server_id', 'text', 'mcp.server_id'),
  col('mcp_server_name', 'text', 'mcp.server_name'),
  col('mcp_tool_name', 'text', 'mcp.mcp_tool_name'),
  col('mcp_input_schema', 'json', 'mcp.input_schema'),
  ...timestamps,
];

/** Items of tool.parameters; each row also gets tool_id first and its position as ordinal. */
export const TOOL_PARAMETER_COLUMNS: readonly ColumnSpec[] = [
  col('name', 'text', 'name', true),
  col('type', 'text', 'type'),
  col('required', 'boolean', 'required'),
  col('description', 'text', 'description'),
  col('has_preset_value', 'boolean', 'has_preset_value'),
];

const idList = (name: string) => col(name, 'text_list', name);

export const AGENT_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('name', 'text', 'name'),
  col('description', 'text', 'description'),
  col('status', 'text', 'status'),
  col('instructions', 'text', 'instructions'),
  col('last_run_at', 'timestamptz', 'last_run_at'),
  col('start_with_type', 'text', 'start_with.type'),
  col('start_with_id', 'text', 'start_with.id'),
  col('start_with_name', 'text', 'start_with.name'),
  col('model_config', 'json', 'model_config'),
  idList('tool_ids'),
  col('resolution_tracking', 'boolean', 'resolution_tracking'),
  idList('resolution_rule_ids'),
  idList('knowledge_tags'),
  idList('guideline_ids'),
  idList('guardrail_ids'),
  idList('attribute_ids'),
  idList('category_ids'),
  idList('included_runbook_ids'),
  idList('excluded_runbook_ids'),
  idList('included_workflow_ids'),
  idList('excluded_workflow_ids'),
  ...timestamps,
];

export const GUIDELINE_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('title', 'text', 'title'),
  col('content', 'text', 'content'),
  col('section_id', 'text', 'section.id'),
  col('section_name', 'text', 'section.name'),
  col('section_description', 'text', 'section.description'),
  col('section_icon', 'text', 'section.icon'),
  ...timestamps,
];

export const GUARDRAIL_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('title', 'text', 'title'),
  col('content', 'text', 'content'),
  col('type', 'text', 'type'),
  ...timestamps,
];

export const RUNBOOK_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('name', 'text', 'name'),
  col('description', 'text', 'description'),
  col('content', 'text', 'content'),
  col('type', 'text', 'type'),
  idList('used_by_agent_ids'),
  col('folder_id', 'text', 'folder_id'),
  col('inserts', 'json', 'inserts'),
  col('model_config', 'json', 'model_config'),
  ...timestamps,
];

export const CATALOG_COLUMNS: Readonly<Record<CatalogTable, readonly ColumnSpec[]>> = {
  tools: TOOL_COLUMNS,
  agents: AGENT_COLUMNS,
  guidelines: GUIDELINE_COLUMNS,
  guardrails: GUARDRAIL_COLUMNS,
  runbooks: RUNBOOK_COLUMNS,
};

/** Columns that change without making a new version (agents' last_run_at moves with every run). */
export const UNVERSIONED_COLUMNS: Readonly<Record<CatalogTable, readonly string[]>> = {
  tools: [],
  agents: ['last_run_at'],
  guidelines: [],
  guardrails: [],
  runbooks: [],
};

export const TOOL_OPTION_COLUMNS: readonly ColumnSpec[] = [
  col('tool_name', 'text', 'tool_name', true),
  col('display_name', 'text', 'display_name'),
  col('run_count', 'bigint', 'run_count'),
];
