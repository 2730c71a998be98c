import { columnsOf, type Shape } from './shape.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from './types.ts';

// Every resource runsync syncs, declared once. Add a member here and its column appears in the
// table, its history, the staging SQL, the Parquet files and the analytics views; a member the API
// adds without being declared here becomes a column on its own (see schema-evolve.ts).

const stamps: Shape = { created_at: 'timestamptz', updated_at: 'timestamptz' };
const ids = (...names: string[]): Shape => Object.fromEntries(names.map((n) => [n, 'text[]']));

const run: Shape = {
  id: 'text!',
  created_at: 'timestamptz!',
  updated_at: 'timestamptz!',
  status: 'text',
  source: 'text',
  duration_seconds: 'double',
  ticket: { id: 'text', title: 'text', url: 'text' },
  agent: { id: 'text', name: 'text', description: 'text' },
  category: { id: 'text', name: 'text' },
  resolution: { type: 'text', summary: 'text' },
  trigger: {
    event_type: 'text',
    source: 'text',
    // A plain string in the spec, not a date-time: kept as sent.
    timestamp: 'text',
    ticket_status: 'text',
    ticket_priority: 'text',
    ticket_tags: 'text[] ticket_tags',
    trigger_message_type: 'text',
    internal_notes_only: 'boolean',
    is_messaging_ticket: 'boolean',
    customer_name: 'text',
    message_text: 'text',
    latest_comment: 'text',
  },
  approval: {
    waiting_for_approval: 'boolean',
    pending: {
      step_id: 'text',
      tool_id: 'text',
      tool_name: 'text',
      tool_type: 'text',
      params: 'json',
      redacted: 'boolean',
      truncated: 'boolean',
    },
  },
  scheduled_resume_at: 'timestamptz',
};

function runChild(table: string, member: string, shape: Shape, orderBy: string): ChildSpec {
  return { table, member, parentKey: 'run_id', key: 'id', duplicates: 'refuse', columns: columnsOf(shape), orderBy };
}

const runChildren: ChildSpec[] = [
  runChild(
    'run_messages',
    'conversation',
    // source_timestamp is a plain string in the spec (ISO times, epoch seconds and empty text are seen).
    {
      id: 'text!',
      order: 'bigint',
      role: 'text',
      user_name: 'text',
      message: 'text',
      source_timestamp: 'text',
      recorded_at: 'timestamptz',
    },
    'run_id, ordinal, id',
  ),
  runChild(
    'run_steps',
    'steps',
    {
      id: 'text!',
      order: 'bigint',
      timestamp: 'timestamptz',
      type: 'text',
      title: 'text',
      content: 'text',
      status: 'text',
      duration_seconds: 'double',
      tool: {
        name: 'text',
        type: 'text',
        input: 'json',
        output: 'json',
        redacted: 'boolean',
        truncated: 'boolean',
        error: 'text',
      },
    },
    'run_id, ordinal, id',
  ),
  runChild(
    'run_evaluations',
    'evaluation_attributes',
    {
      id: 'text!',
      attribute_id: 'text',
      name: 'text',
      description: 'text',
      value: 'text',
      recorded_at: 'timestamptz',
    },
    'run_id, id',
  ),
];

export const RUNS: ResourceSpec = {
  table: 'runs',
  endpoint: { list: '/runs', get: '/runs/{id}' },
  scope: 'api:runs:read',
  schema: 'run-detail',
  key: 'id',
  merge: 'latest',
  columns: columnsOf(run),
  children: runChildren,
  derived: [{ name: 'run_tool_calls', of: 'run_steps', where: `type = 'tool_call'` }],
  newArrays: { tablePrefix: 'run_' },
  unversioned: [],
  ignored: ['object'],
  archive: 'runs',
  partitionBy: 'created_at',
  orderBy: 'created_at, id',
  label: 'runs',
};

export type CatalogTable = 'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks';

function catalog(
  table: CatalogTable,
  schema: ResourceSpec['schema'],
  shape: Shape,
  extra: Partial<ResourceSpec> = {},
): ResourceSpec {
  return {
    table,
    endpoint: { list: `/${table}`, get: `/${table}/{id}` },
    scope: `api:${table}:read`,
    schema,
    key: 'id',
    merge: 'history',
    columns: columnsOf({ id: 'text!', ...shape, ...stamps }),
    children: [],
    derived: [],
    // Arrays of objects in a catalog object (runbooks' inserts, a custom tool's headers) are JSON.
    newArrays: 'json',
    unversioned: [],
    ignored: ['object'],
    archive: table,
    orderBy: 'id',
    label: table,
    ...extra,
  };
}

const toolParameters: ChildSpec = {
  table: 'tool_parameters',
  member: 'parameters',
  parentKey: 'tool_id',
  key: 'name',
  positionColumn: 'ordinal',
  duplicates: 'drop',
  columns: columnsOf({
    name: 'text!',
    type: 'text',
    required: 'boolean',
    description: 'text',
    has_preset_value: 'boolean',
  }),
  orderBy: 'tool_id, ordinal, name',
};

export const TOOLS = catalog(
  'tools',
  'tool',
  {
    type: 'text',
    name: 'text',
    description: 'text',
    is_write_action: 'boolean',
    requires_approval: 'boolean',
    enabled: 'boolean',
    service: { category: 'text', availability: 'text' },
    app: { integration_id: 'text', integration_name: 'text', connection_mode: 'text', connection_status: 'text' },
    custom: {
      endpoint: 'text',
      method: 'text',
      body_format: 'text',
      headers: 'json',
      http_timeout_sec: 'bigint',
      auth: 'json',
    },
    mcp: { server_id: 'text', server_name: 'text', mcp_tool_name: 'text', input_schema: 'json' },
  },
  { children: [toolParameters] },
);

export const AGENTS = catalog(
  'agents',
  'agent',
  {
    name: 'text',
    description: 'text',
    status: 'text',
    instructions: 'text',
    last_run_at: 'timestamptz',
    start_with: { type: 'text', id: 'text', name: 'text' },
    model_config: 'json',
    ...ids('tool_ids'),
    resolution_tracking: 'boolean',
    ...ids('resolution_rule_ids', 'knowledge_tags', 'guideline_ids', 'guardrail_ids', 'attribute_ids'),
    ...ids('category_ids', 'included_runbook_ids', 'excluded_runbook_ids'),
    ...ids('included_workflow_ids', 'excluded_workflow_ids'),
  },
  // last_run_at moves with every run of the agent: updated in place, not a new version.
  { unversioned: ['last_run_at'] },
);

export const GUIDELINES = catalog('guidelines', 'guideline', {
  title: 'text',
  content: 'text',
  section: { id: 'text', name: 'text', description: 'text', icon: 'text' },
});

export const GUARDRAILS = catalog('guardrails', 'guardrail', { title: 'text', content: 'text', type: 'text' });

export const RUNBOOKS = catalog('runbooks', 'runbook', {
  name: 'text',
  description: 'text',
  content: 'text',
  type: 'text',
  used_by_agent_ids: 'text[]',
  folder_id: 'text',
  inserts: 'json',
  model_config: 'json',
});

export const RUN_TOOL_OPTIONS: ResourceSpec = {
  table: 'run_tool_options',
  endpoint: { list: '/runs/tool-options' },
  scope: 'api:runs:read',
  schema: 'run-tool-option',
  key: 'tool_name',
  merge: 'whole-list',
  columns: columnsOf({ tool_name: 'text!', display_name: 'text', run_count: 'bigint' }),
  children: [],
  derived: [],
  newArrays: 'json',
  unversioned: [],
  ignored: ['object'],
  archive: 'tool-options',
  orderBy: 'tool_name',
  label: 'run tool options',
};

export const CATALOG: readonly ResourceSpec[] = [TOOLS, AGENTS, GUIDELINES, GUARDRAILS, RUNBOOKS];
export const CATALOG_TABLES = CATALOG.map((r) => r.table) as readonly CatalogTable[];

/** Every resource, in the order a pass loads them and status lists them. */
export const RESOURCES: readonly ResourceSpec[] = [RUNS, RUN_TOOL_OPTIONS, ...CATALOG];

export function catalogResource(table: CatalogTable): ResourceSpec {
  const r = CATALOG.find((c) => c.table === table);
  if (!r) throw new Error(`not a catalog table: ${table}`);
  return r;
}

/** A column of a resource's live table by name (tests and status). */
export function columnOf(resource: ResourceSpec, name: string): ColumnSpec | undefined {
  return resource.columns.find((c) => c.name === name);
}
