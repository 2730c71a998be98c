import { columnsOf, type Member, type Shape } from './shape.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from './types.ts';

// Every resource runsync syncs, declared once. Add a member here, with its kind and what it means,
// and its column appears in the table, its history, the staging SQL, the Parquet files, the
// analytics views and the warehouse reference (`npm run docs:warehouse`); a member the API adds
// without being declared here becomes a column on its own (see schema-evolve.ts).

const stamps = (what: string): Shape => ({
  created_at: ['timestamptz', `When the ${what} was created (the API's time).`],
  updated_at: ['timestamptz', `When the ${what} last changed (the API's time).`],
});

const run: Shape = {
  id: ['text!', "The run's id (a uuid)."],
  created_at: ['timestamptz!', 'When the run was created; its created_date is the UTC day of this.'],
  updated_at: [
    'timestamptz!',
    'When the run last changed; a newer one on the list makes runsync fetch the detail again.',
  ],
  status: ['text', 'completed, running, failed, cancelled, paused, or a value the API adds later; null when not set.'],
  source: ['text', 'Where the run came from, as the API names it.'],
  duration_seconds: ['double', 'How long the run took, in seconds.'],
  ticket: {
    id: ['text', 'The source ticket or conversation id.'],
    title: ['text', "The ticket's title."],
    url: ['text', 'A link to the ticket in its source system, or null.'],
  },
  agent: {
    id: ['text', 'The id of the agent that handled the run (agents.id).'],
    name: ['text', "The agent's name as the run recorded it."],
    description: ['text', "The agent's description, from the run's detail."],
  },
  category: {
    id: ['text', "The run's category id; categories have no catalog endpoint."],
    name: ['text', "The category's name as the run recorded it."],
  },
  resolution: {
    type: ['text', 'deflected, resolved, escalated, pending, or a value the API adds later; null: no resolution yet.'],
    summary: ['text', "The resolution's summary text."],
  },
  trigger: {
    event_type: ['text', 'The event that started the run.'],
    source: ['text', "The trigger's source."],
    // A plain string in the spec, not a date-time: kept as sent.
    timestamp: ['text', 'When the trigger fired, as the API sent it (text: the spec does not make it a date-time).'],
    ticket_status: ['text', "The ticket's status when the run was triggered."],
    ticket_priority: ['text', "The ticket's priority when the run was triggered."],
    ticket_tags: ['text[] ticket_tags', "The ticket's tags when the run was triggered."],
    trigger_message_type: ['text', 'The kind of message that triggered the run.'],
    internal_notes_only: ['boolean', 'Whether the trigger carried internal notes only.'],
    is_messaging_ticket: ['boolean', 'Whether the ticket is a messaging conversation.'],
    customer_name: ['text', "The customer's name on the ticket."],
    message_text: ['text', 'The text of the triggering message (detail only).'],
    latest_comment: ['text', "The ticket's latest comment when the run was triggered (detail only)."],
  },
  approval: {
    waiting_for_approval: ['boolean', 'Whether the run waits for someone to approve a tool call.'],
    pending: {
      step_id: ['text', 'The step that asks for approval (run_steps.id).'],
      tool_id: ['text', 'The tool awaiting approval (tools.id).'],
      tool_name: ['text', 'The name of the tool awaiting approval.'],
      tool_type: ['text', 'The type of the tool awaiting approval.'],
      params: ['json', 'The parameters of the call awaiting approval, as redacted and truncated by the API.'],
      redacted: ['boolean', 'Whether the API redacted the pending parameters.'],
      truncated: ['boolean', 'Whether the API truncated the pending parameters.'],
    },
  },
  scheduled_resume_at: ['timestamptz', 'When a paused run is scheduled to resume, or null.'],
};

function runChild(table: string, member: string, shape: Shape, orderBy: string, about: string): ChildSpec {
  return {
    table,
    member,
    parentKey: 'run_id',
    key: 'id',
    duplicates: 'refuse',
    columns: columnsOf(shape),
    orderBy,
    about,
  };
}

const runChildren: ChildSpec[] = [
  runChild(
    'run_messages',
    'conversation',
    // source_timestamp is a plain string in the spec (ISO times, epoch seconds and empty text are seen).
    {
      id: ['text!', "The message's id (a uuid)."],
      order: ['bigint', "Position of the message in the conversation (the API's `order`)."],
      role: ['text', 'Who wrote it, as the API names the role.'],
      user_name: ['text', 'The name of the person or agent who wrote it.'],
      message: ['text', 'The message text.'],
      source_timestamp: [
        'text',
        'The time the source system gave the message, as sent (ISO time, epoch seconds or empty).',
      ],
      recorded_at: ['timestamptz', 'When the platform recorded the message.'],
    },
    'run_id, ordinal, id',
    "One row per conversation item of a run (the detail's `conversation`).",
  ),
  runChild(
    'run_steps',
    'steps',
    {
      id: ['text!', "The step's id (a uuid)."],
      order: ['bigint', "Position of the step in the run (the API's `order`)."],
      timestamp: ['timestamptz', 'When the step ran.'],
      type: ['text', 'The kind of step; `tool_call` for a call of a tool, other values as the API sends them.'],
      title: ['text', "The step's title."],
      content: ['text', "The step's content."],
      status: ['text', "The step's status, as the API names it."],
      duration_seconds: ['double', 'How long the step took, in seconds.'],
      tool: {
        name: ['text', 'The recorded name of the tool the step used (the `tool_name` run filter takes it).'],
        type: ['text', 'The type of that tool.'],
        input: ['json', "The tool's input, as redacted and truncated by the API."],
        output: ['json', "The tool's output, as redacted and truncated by the API."],
        redacted: ['boolean', 'Whether the API redacted the input or output.'],
        truncated: ['boolean', 'Whether the API truncated the input or output.'],
        error: ['text', "The tool's error message; empty or null when it succeeded."],
      },
    },
    'run_id, ordinal, id',
    "One row per execution step of a run (the detail's `steps`), with the step's tool object as `tool_*` columns.",
  ),
  runChild(
    'run_evaluations',
    'evaluation_attributes',
    {
      id: ['text!', "The evaluation's id (a uuid)."],
      attribute_id: ['text', 'The evaluation attribute this is a value of (a uuid).'],
      name: ['text', "The attribute's name."],
      description: ['text', "The attribute's description."],
      value: ['text', 'The value recorded, as text (a score reads as a number).'],
      recorded_at: ['timestamptz', 'When the value was recorded.'],
    },
    'run_id, id',
    "One row per evaluation attribute recorded on a run (the detail's `evaluation_attributes`).",
  ),
];

/** Members of the run detail that the summary lacks: a state is what the summary shows. */
const DETAIL_ONLY = new Set(['agent_description', 'trigger_message_text', 'trigger_latest_comment']);

const runColumns = columnsOf(run);

const runStates: NonNullable<ResourceSpec['states']> = {
  table: 'runs_history',
  columns: runColumns.map((c) => c.name).filter((n) => !DETAIL_ONLY.has(n)),
  counts: [
    { name: 'message_count', member: 'conversation', about: 'Conversation items the run had in this state.' },
    { name: 'step_count', member: 'steps', about: 'Execution steps the run had in this state.' },
    {
      name: 'tool_call_count',
      member: 'steps',
      ofType: 'tool_call',
      about: 'Steps of type `tool_call` the run had in this state.',
    },
    {
      name: 'evaluation_count',
      member: 'evaluation_attributes',
      about: 'Evaluation attributes recorded on the run in this state.',
    },
  ],
  about:
    "Every state of a run that runsync observed (type 2): the summary's fields and the counts of its children, one row per state, `valid_to` null on the current one. A state is observed when a fetched detail shows it: one that began and ended between two fetches of the run is not seen, and `valid_from` is the run's `updated_at` of the state, so durations are on the API's clock. A new row is made only when the state differs from the current one.",
};

export const RUNS: ResourceSpec = {
  table: 'runs',
  endpoint: { list: '/runs', get: '/runs/{id}' },
  scope: 'api:runs:read',
  schema: 'run-detail',
  key: 'id',
  merge: 'latest',
  columns: runColumns,
  children: runChildren,
  states: runStates,
  derived: [
    {
      name: 'run_tool_calls',
      of: 'run_steps',
      where: `type = 'tool_call'`,
      about: "The steps whose type is `tool_call`: one row per tool call, with run_steps' columns.",
    },
  ],
  newArrays: { tablePrefix: 'run_' },
  unversioned: [],
  ignored: ['object'],
  archive: 'runs',
  partitionBy: 'created_at',
  orderBy: 'created_at, id',
  label: 'runs',
  about: 'One row per run, in its latest known state: the fields of its summary and of its detail.',
};

export type CatalogTable = 'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks';

/** What a catalog object is, in a few words, for its id, stamps and table's meaning. */
interface CatalogNoun {
  /** "tool", "agent"… */
  readonly one: string;
  /** What the live table holds: "every tool the organization has". */
  readonly live: string;
  /** The id's form, where the spec gives one. */
  readonly id: string;
}

function catalog(
  table: CatalogTable,
  schema: ResourceSpec['schema'],
  noun: CatalogNoun,
  shape: Shape,
  extra: Partial<ResourceSpec> = {},
): ResourceSpec {
  const id: Shape = { id: ['text!', noun.id] };
  return {
    table,
    endpoint: { list: `/${table}`, get: `/${table}/{id}` },
    scope: `api:${table}:read`,
    schema,
    key: 'id',
    merge: 'history',
    columns: columnsOf({ ...id, ...shape, ...stamps(noun.one) }),
    children: [],
    derived: [],
    // Arrays of objects in a catalog object (runbooks' inserts, a custom tool's headers) are JSON.
    newArrays: 'json',
    unversioned: [],
    ignored: ['object'],
    archive: table,
    orderBy: 'id',
    label: table,
    about: `One row per ${noun.one} as the last snapshot listed it: ${noun.live}.`,
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
    name: ['text!', "The parameter's name, unique within its tool."],
    type: ['text', "The parameter's type, as the API names it."],
    required: ['boolean', 'Whether a call must give the parameter.'],
    description: ['text', "The parameter's description."],
    has_preset_value: ['boolean', 'Whether the parameter has a preset value.'],
  }),
  orderBy: 'tool_id, ordinal, name',
  about: "One row per parameter of a tool (the tool's `parameters`).",
};

export const TOOLS = catalog(
  'tools',
  'tool',
  {
    one: 'tool',
    live: 'the service, app, custom and MCP tools available to the organization',
    id: 'The public tool id: `service:<id>`, `app:<id>`, `custom:<uuid>` or `mcp:<uuid>`.',
  },
  {
    type: ['text', 'service_tool, app_tool, custom_tool, mcp_tool, or a value the API adds later.'],
    name: ['text', "The tool's name, as steps record it in tool_name."],
    description: ['text', "The tool's description."],
    is_write_action: ['boolean', 'Whether the tool changes something outside the platform.'],
    requires_approval: ['boolean', 'Whether a call of the tool waits for approval.'],
    enabled: ['boolean', 'Whether the tool is enabled.'],
    service: {
      category: ['text', "A service tool's category."],
      availability: ['text', "A service tool's availability."],
    },
    app: {
      integration_id: ['text', "An app tool's integration id."],
      integration_name: ['text', "An app tool's integration name."],
      connection_mode: ['text', "An app tool's connection mode, as the API names it."],
      connection_status: ['text', "An app tool's connection status, as the API names it."],
    },
    custom: {
      endpoint: ['text', "A custom tool's endpoint URL."],
      method: ['text', "A custom tool's HTTP method."],
      body_format: ['text', "A custom tool's body format."],
      headers: ['json', "A custom tool's headers, `[{name, value}]`; values of sensitive headers are masked."],
      http_timeout_sec: ['bigint', "A custom tool's HTTP timeout, in seconds."],
      auth: ['json', "A custom tool's auth object; its secret-bearing members are masked."],
    },
    mcp: {
      server_id: ['text', "An MCP tool's server id (a uuid)."],
      server_name: ['text', "An MCP tool's server name."],
      mcp_tool_name: ['text', "The tool's name on its MCP server."],
      input_schema: ['json', "An MCP tool's input schema."],
    },
  },
  { children: [toolParameters] },
);

const ids = (what: string): Member => ['text[]', what];

export const AGENTS = catalog(
  'agents',
  'agent',
  {
    one: 'agent',
    live: "the organization's AI support agents and their configuration",
    id: "The agent's id (a uuid).",
  },
  {
    name: ['text', "The agent's name."],
    description: ['text', "The agent's description."],
    status: ['text', "The agent's status, as the API names it."],
    instructions: ['text', "The agent's instructions."],
    last_run_at: ['timestamptz', 'When the agent last ran; updated in place, it makes no new version.'],
    start_with: {
      type: ['text', 'What the agent starts with: its kind, as the API names it.'],
      id: ['text', 'What the agent starts with: its id.'],
      name: ['text', 'What the agent starts with: its name.'],
    },
    model_config: ['json', "The agent's model configuration."],
    tool_ids: ids('The tools the agent may use (tools.id).'),
    resolution_tracking: ['boolean', 'Whether the agent tracks resolutions.'],
    resolution_rule_ids: ids("The agent's resolution rules."),
    knowledge_tags: ids("The agent's knowledge tags."),
    guideline_ids: ids('The guidelines the agent follows (guidelines.id).'),
    guardrail_ids: ids('The guardrails the agent keeps to (guardrails.id).'),
    attribute_ids: ids('The evaluation attributes the agent records (run_evaluations.attribute_id).'),
    category_ids: ids("The agent's categories (runs.category_id)."),
    included_runbook_ids: ids('Runbooks the agent includes (runbooks.id).'),
    excluded_runbook_ids: ids('Runbooks the agent excludes (runbooks.id).'),
    included_workflow_ids: ids('Workflows the agent includes.'),
    excluded_workflow_ids: ids('Workflows the agent excludes.'),
  },
  // last_run_at moves with every run of the agent: updated in place, not a new version.
  { unversioned: ['last_run_at'] },
);

export const GUIDELINES = catalog(
  'guidelines',
  'guideline',
  { one: 'guideline', live: 'the published guidelines', id: "The guideline's id (a uuid)." },
  {
    title: ['text', "The guideline's title."],
    content: ['text', "The guideline's text."],
    section: {
      id: ['text', 'The section the guideline belongs to (a uuid).'],
      name: ['text', "The section's name."],
      description: ['text', "The section's description."],
      icon: ['text', "The section's icon."],
    },
  },
);

export const GUARDRAILS = catalog(
  'guardrails',
  'guardrail',
  { one: 'guardrail', live: "the organization's guardrails", id: "The guardrail's id (a uuid)." },
  {
    title: ['text', "The guardrail's title."],
    content: ['text', "The guardrail's text."],
    type: ['text', 'escalation or restriction, or a value the API adds later.'],
  },
);

export const RUNBOOKS = catalog(
  'runbooks',
  'runbook',
  { one: 'runbook', live: 'the published runbooks that are not deleted', id: "The runbook's id (a uuid)." },
  {
    name: ['text', "The runbook's name."],
    description: ['text', "The runbook's description."],
    content: ['text', "The runbook's text."],
    type: ['text', "The runbook's type, as the API names it."],
    used_by_agent_ids: ids('The agents that use the runbook (agents.id).'),
    folder_id: ['text', 'The folder the runbook lies in.'],
    inserts: ['json', "The runbook's inserts, `[{id, name, type, source}]`."],
    model_config: ['json', "The runbook's model configuration."],
  },
);

export const RUN_TOOL_OPTIONS: ResourceSpec = {
  table: 'run_tool_options',
  endpoint: { list: '/runs/tool-options' },
  scope: 'api:runs:read',
  schema: 'run-tool-option',
  key: 'tool_name',
  merge: 'whole-list',
  columns: columnsOf({
    tool_name: [
      'text!',
      'A recorded tool name: the value the `tool_name` run filter (and `backfill --tool-name`) accepts.',
    ],
    display_name: ['text', "The tool's label; not accepted as a filter value."],
    run_count: ['bigint', 'How many runs called the tool, as the API counts them.'],
  }),
  children: [],
  derived: [],
  newArrays: 'json',
  unversioned: [],
  ignored: ['object'],
  archive: 'tool-options',
  orderBy: 'tool_name',
  label: 'run tool options',
  about:
    'One row per tool option of the runs list, as the last snapshot listed them (the whole list replaces the table).',
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
