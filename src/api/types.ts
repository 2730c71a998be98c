// Generated from schemas/api/*.json by `npm run gen:types`; do not edit by hand.
/* eslint-disable */

/**
 * Items of GET /api/v1/runs.
 */

export interface RunSummary {
  id: string;
  /**
   * Always "run".
   */
  object: 'run';
  created_at: string;
  updated_at: string;
  /**
   * Filter values: completed, running, failed, cancelled, paused; not an enum, so new ones validate.
   */
  status: string | null;
  /**
   * Run source; allowed values not shown in the spec.
   */
  source: string;
  duration_seconds: number;
  ticket: Ticket;
  /**
   * Spec: "object or null; `id` string or null, `name` string or null".
   */
  agent: {
    id: string | null;
    name: string | null;
    [k: string]: unknown;
  } | null;
  /**
   * Object or null.
   */
  category: Category | null;
  /**
   * Object or null.
   */
  resolution: Resolution | null;
  trigger: TriggerSummary;
  approval: Approval;
  /**
   * Date-time or null.
   */
  scheduled_resume_at: string | null;
  [k: string]: unknown;
}
/**
 * Run ticket: `id` string, `title` string, `url` string (uri) or null.
 */

export interface Ticket {
  id: string;
  title: string;
  /**
   * Spec: "url string (uri) or null".
   */
  url: string | null;
  [k: string]: unknown;
}
/**
 * Spec: "`id` string or null, `name` string or null" (the category itself may be null).
 */

export interface Category {
  id: string | null;
  name: string | null;
  [k: string]: unknown;
}
/**
 * Run resolution (the resolution itself may be null).
 */

export interface Resolution {
  /**
   * Filter values: deflected, resolved, escalated, pending. Not an enum, so new values validate.
   */
  type: string;
  summary: string;
  [k: string]: unknown;
}
/**
 * Run trigger. Spec: "all members optional and nullable".
 */

export interface TriggerSummary {
  event_type?: string | null;
  source?: string | null;
  /**
   * Spec type: plain string (no date-time format documented).
   */
  timestamp?: string | null;
  ticket_status?: string | null;
  ticket_priority?: string | null;
  /**
   * Array of string.
   */
  ticket_tags?: string[] | null;
  trigger_message_type?: string | null;
  internal_notes_only?: boolean | null;
  is_messaging_ticket?: boolean | null;
  customer_name?: string | null;
  [k: string]: unknown;
}
/**
 * Spec: "`waiting_for_approval` boolean (required), `pending` object or null".
 */

export interface Approval {
  waiting_for_approval: boolean;
  /**
   * Object or null.
   */
  pending: PendingApproval | null;
  [k: string]: unknown;
}
/**
 * The tool call awaiting approval; members and types as the spec lists them.
 */

export interface PendingApproval {
  step_id: string | null;
  tool_id: string | null;
  tool_name: string | null;
  tool_type: string | null;
  /**
   * Any JSON, nullable; redacted and truncated.
   */
  params: {
    [k: string]: unknown;
  };
  redacted: boolean;
  truncated: boolean;
  [k: string]: unknown;
}

/**
 * `data` of GET /api/v1/runs/{run_id}: a summary with richer `agent` and `trigger`, plus three arrays.
 */

export interface RunDetail {
  id: string;
  /**
   * Always "run".
   */
  object: 'run';
  created_at: string;
  updated_at: string;
  /**
   * Filter values: completed, running, failed, cancelled, paused; not an enum, so new ones validate.
   */
  status: string | null;
  /**
   * Run source; allowed values not shown in the spec.
   */
  source: string;
  duration_seconds: number;
  ticket: Ticket;
  /**
   * Spec: "`id` uuid, `name`, `description` (strings)". Null by choice when the run has no agent.
   */
  agent: {
    id: string;
    name: string;
    description: string;
    [k: string]: unknown;
  } | null;
  /**
   * Object or null.
   */
  category: Category | null;
  /**
   * Object or null.
   */
  resolution: Resolution | null;
  trigger: TriggerDetail;
  approval: Approval;
  /**
   * Date-time or null.
   */
  scheduled_resume_at: string | null;
  /**
   * Conversation messages.
   */
  conversation: ConversationItem[];
  /**
   * Execution steps.
   */
  steps: Step[];
  /**
   * Evaluation attributes.
   */
  evaluation_attributes: EvaluationAttribute[];
  [k: string]: unknown;
}
/**
 * Run ticket: `id` string, `title` string, `url` string (uri) or null.
 */

export interface TriggerDetail {
  event_type?: string | null;
  source?: string | null;
  /**
   * Spec type: plain string (no date-time format documented).
   */
  timestamp?: string | null;
  ticket_status?: string | null;
  ticket_priority?: string | null;
  /**
   * Array of string.
   */
  ticket_tags?: string[] | null;
  trigger_message_type?: string | null;
  internal_notes_only?: boolean | null;
  is_messaging_ticket?: boolean | null;
  customer_name?: string | null;
  /**
   * Run detail only.
   */
  message_text?: string | null;
  /**
   * Run detail only.
   */
  latest_comment?: string | null;
  [k: string]: unknown;
}
/**
 * Spec: "`waiting_for_approval` boolean (required), `pending` object or null".
 */

export interface ConversationItem {
  id: string;
  order: number;
  /**
   * Allowed values: not shown in the spec.
   */
  role: string;
  user_name: string;
  message: string;
  /**
   * Spec type: plain string (no date-time format documented).
   */
  source_timestamp: string;
  recorded_at: string;
  [k: string]: unknown;
}
/**
 * One execution step of a run (run detail only).
 */

export interface Step {
  id: string;
  order: number;
  timestamp: string;
  /**
   * Spec: "value `tool_call` is used for tool-call steps"; other values not shown.
   */
  type: string;
  title: string;
  content: string;
  /**
   * Allowed values: not shown in the spec.
   */
  status: string;
  duration_seconds: number;
  /**
   * Spec says object; nullable by deliberate choice: null for steps that are not tool calls.
   */
  tool: StepTool | null;
  [k: string]: unknown;
}
/**
 * Tool call of a step. Spec: "Input and output are redacted and truncated."
 */

export interface StepTool {
  name: string;
  /**
   * Allowed values: not shown in the spec.
   */
  type: string;
  /**
   * Any JSON; redacted and truncated.
   */
  input: {
    [k: string]: unknown;
  };
  /**
   * Any JSON; redacted and truncated.
   */
  output: {
    [k: string]: unknown;
  };
  redacted: boolean;
  truncated: boolean;
  /**
   * Spec says string; nullable by deliberate choice: null when the call did not fail.
   */
  error: string | null;
  [k: string]: unknown;
}
/**
 * One evaluation attribute of a run (run detail only).
 */

export interface EvaluationAttribute {
  id: string;
  attribute_id: string;
  name: string;
  description: string;
  value: string;
  recorded_at: string;
  [k: string]: unknown;
}

/**
 * Items of GET /api/v1/runs/tool-options.
 */

export interface RunToolOption {
  /**
   * Recorded tool name; the value accepted by the `tool_name` run filter.
   */
  tool_name: string;
  /**
   * Label, not accepted as a filter value.
   */
  display_name: string;
  run_count: number;
  [k: string]: unknown;
}

/**
 * Catalog tool (GET /api/v1/tools, /api/v1/tools/{tool_id}); each sub-object optional and nullable.
 */

export interface Tool {
  /**
   * Public tool id: `service:<id>`, `app:<id>`, `custom:<uuid>` or `mcp:<uuid>`.
   */
  id: string;
  /**
   * Always "tool".
   */
  object: 'tool';
  type: 'service_tool' | 'app_tool' | 'custom_tool' | 'mcp_tool';
  name: string;
  description: string;
  is_write_action: boolean;
  requires_approval: boolean;
  enabled: boolean;
  parameters: {
    name: string;
    type: string;
    required: boolean;
    description: string;
    has_preset_value: boolean;
    [k: string]: unknown;
  }[];
  /**
   * Service tool details.
   */
  service?: {
    category: string;
    availability: string;
    [k: string]: unknown;
  } | null;
  /**
   * App tool details.
   */
  app?: {
    integration_id: string;
    integration_name: string;
    /**
     * Allowed values: not shown in the spec.
     */
    connection_mode: string;
    /**
     * Allowed values: not shown in the spec.
     */
    connection_status: string;
    [k: string]: unknown;
  } | null;
  /**
   * Custom (HTTP) tool details.
   */
  custom?: {
    endpoint: string;
    method: string;
    body_format: string;
    headers: {
      name: string;
      value: string;
      [k: string]: unknown;
    }[];
    http_timeout_sec: number;
    /**
     * Spec says object; nullable by deliberate choice. Shape not shown.
     */
    auth: {
      [k: string]: unknown;
    } | null;
    [k: string]: unknown;
  } | null;
  /**
   * MCP tool details.
   */
  mcp?: {
    server_id: string;
    server_name: string;
    mcp_tool_name: string;
    /**
     * Free-form object.
     */
    input_schema: {
      [k: string]: unknown;
    };
    [k: string]: unknown;
  } | null;
  created_at: string;
  updated_at: string;
  [k: string]: unknown;
}

/**
 * Agent configuration (GET /api/v1/agents, /api/v1/agents/{agent_id}).
 */

export interface Agent {
  id: string;
  /**
   * Always "agent".
   */
  object: 'agent';
  name: string;
  description: string;
  /**
   * Allowed values: not shown in the spec.
   */
  status: string;
  instructions: string;
  last_run_at: string;
  start_with: {
    /**
     * Allowed values: not shown in the spec.
     */
    type: string;
    id: string;
    name: string;
    [k: string]: unknown;
  };
  /**
   * Free-form object.
   */
  model_config: {
    [k: string]: unknown;
  };
  tool_ids: string[];
  resolution_tracking: boolean;
  resolution_rule_ids: string[];
  knowledge_tags: string[];
  guideline_ids: string[];
  guardrail_ids: string[];
  attribute_ids: string[];
  category_ids: string[];
  included_runbook_ids: string[];
  excluded_runbook_ids: string[];
  included_workflow_ids: string[];
  excluded_workflow_ids: string[];
  created_at: string;
  updated_at: string;
  [k: string]: unknown;
}

/**
 * Guideline (GET /api/v1/guidelines, /api/v1/guidelines/{guideline_id}). Spec: "published only".
 */

export interface Guideline {
  id: string;
  /**
   * Always "guideline".
   */
  object: 'guideline';
  title: string;
  content: string;
  section: {
    id: string;
    name: string;
    description: string;
    icon: string;
    [k: string]: unknown;
  };
  created_at: string;
  updated_at: string;
  [k: string]: unknown;
}

/**
 * Guardrail (GET /api/v1/guardrails, /api/v1/guardrails/{guardrail_id}).
 */

export interface Guardrail {
  id: string;
  /**
   * Always "guardrail".
   */
  object: 'guardrail';
  title: string;
  content: string;
  type: 'escalation' | 'restriction';
  created_at: string;
  updated_at: string;
  [k: string]: unknown;
}

/**
 * Runbook (GET /api/v1/runbooks, /api/v1/runbooks/{runbook_id}).
 */

export interface Runbook {
  id: string;
  /**
   * Always "runbook".
   */
  object: 'runbook';
  name: string;
  description: string;
  content: string;
  type: string;
  used_by_agent_ids: string[];
  folder_id: string;
  inserts: {
    id: string;
    name: string;
    type: string;
    source: string;
    [k: string]: unknown;
  }[];
  /**
   * Free-form object.
   */
  model_config: {
    [k: string]: unknown;
  };
  created_at: string;
  updated_at: string;
  [k: string]: unknown;
}

/**
 * Error body of all error statuses.
 */

export interface ErrorBody {
  error: {
    /**
     * Not an enum; `examples` holds the known codes (statuses 400, 401, 403, 429, 500, not shown).
     */
    code: string;
    message: string;
    request_id: string;
    /**
     * Wait in seconds (rate_limited); optional.
     */
    retry_after?: number;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}
