import type { ColumnKind, ColumnSpec } from './flatten-values.ts';

// Where each column of the run tables comes from in a run detail. Nested members become
// parent_member columns; members of `trigger` that already say trigger_ keep their name, and
// trigger.ticket_tags is `ticket_tags`, as the contract names it.

function col(name: string, kind: ColumnKind, path: string | readonly string[], required = false): ColumnSpec {
  return { name, kind, path: typeof path === 'string' ? path.split('.') : path, ...(required ? { required } : {}) };
}

export const RUN_COLUMNS: readonly ColumnSpec[] = [
  col('id', 'text', 'id', true),
  col('created_at', 'timestamptz', 'created_at', true),
  col('updated_at', 'timestamptz', 'updated_at', true),
  col('status', 'text', 'status'),
  col('source', 'text', 'source'),
  col('duration_seconds', 'double', 'duration_seconds'),
  col('ticket_id', 'text', 'ticket.id'),
  col('ticket_title', 'text', 'ticket.title'),
  col('ticket_url', 'text', 'ticket.url'),
  col('agent_id', 'text', 'agent.id'),
  col('agent_name', 'text', 'agent.name'),
  col('agent_description', 'text', 'agent.description'),
  col('category_id', 'text', 'category.id'),
  col('category_name', 'text', 'category.name'),
  col('resolution_type', 'text', 'resolution.type'),
  col('resolution_summary', 'text', 'resolution.summary'),
  col('trigger_event_type', 'text', 'trigger.event_type'),
  col('trigger_source', 'text', 'trigger.source'),
  // The spec gives trigger.timestamp as a plain string, not a date-time: kept as sent.
  col('trigger_timestamp', 'text', 'trigger.timestamp'),
  col('trigger_ticket_status', 'text', 'trigger.ticket_status'),
  col('trigger_ticket_priority', 'text', 'trigger.ticket_priority'),
  col('ticket_tags', 'text_list', 'trigger.ticket_tags'),
  col('trigger_message_type', 'text', 'trigger.trigger_message_type'),
  col('trigger_internal_notes_only', 'boolean', 'trigger.internal_notes_only'),
  col('trigger_is_messaging_ticket', 'boolean', 'trigger.is_messaging_ticket'),
  col('trigger_customer_name', 'text', 'trigger.customer_name'),
  col('trigger_message_text', 'text', 'trigger.message_text'),
  col('trigger_latest_comment', 'text', 'trigger.latest_comment'),
  col('approval_waiting_for_approval', 'boolean', 'approval.waiting_for_approval'),
  col('approval_pending_step_id', 'text', 'approval.pending.step_id'),
  col('approval_pending_tool_id', 'text', 'approval.pending.tool_id'),
  col('approval_pending_tool_name', 'text', 'approval.pending.tool_name'),
  col('approval_pending_tool_type', 'text', 'approval.pending.tool_type'),
  col('approval_pending_params', 'json', 'approval.pending.params'),
  col('approval_pending_redacted', 'boolean', 'approval.pending.redacted'),
  col('approval_pending_truncated', 'boolean', 'approval.pending.truncated'),
  col('scheduled_resume_at', 'timestamptz', 'scheduled_resume_at'),
];

export interface ChildTableSpec {
  readonly table: 'run_messages' | 'run_steps' | 'run_evaluations';
  /** The detail's array member that holds the rows. */
  readonly member: 'conversation' | 'steps' | 'evaluation_attributes';
  /** Columns from each item; every child row also gets run_id first and created_date last. */
  readonly columns: readonly ColumnSpec[];
}

export const RUN_CHILDREN: readonly ChildTableSpec[] = [
  {
    table: 'run_messages',
    member: 'conversation',
    columns: [
      col('id', 'text', 'id', true),
      col('ordinal', 'bigint', 'order'),
      col('role', 'text', 'role'),
      col('user_name', 'text', 'user_name'),
      col('message', 'text', 'message'),
      // A plain string in the spec (the simulator sends ISO times, epoch seconds and empty text).
      col('source_timestamp', 'text', 'source_timestamp'),
      col('recorded_at', 'timestamptz', 'recorded_at'),
    ],
  },
  {
    table: 'run_steps',
    member: 'steps',
    columns: [
      col('id', 'text', 'id', true),
      col('ordinal', 'bigint', 'order'),
      col('timestamp', 'timestamptz', 'timestamp'),
      col('type', 'text', 'type'),
      col('title', 'text', 'title'),
      col('content', 'text', 'content'),
      col('status', 'text', 'status'),
      col('duration_seconds', 'double', 'duration_seconds'),
      col('tool_name', 'text', 'tool.name'),
      col('tool_type', 'text', 'tool.type'),
      col('tool_input', 'json', 'tool.input'),
      col('tool_output', 'json', 'tool.output'),
      col('tool_redacted', 'boolean', 'tool.redacted'),
      col('tool_truncated', 'boolean', 'tool.truncated'),
      col('tool_error', 'text', 'tool.error'),
    ],
  },
  {
    table: 'run_evaluations',
    member: 'evaluation_attributes',
    columns: [
      col('id', 'text', 'id', true),
      col('attribute_id', 'text', 'attribute_id'),
      col('name', 'text', 'name'),
      col('description', 'text', 'description'),
      col('value', 'text', 'value'),
      col('recorded_at', 'timestamptz', 'recorded_at'),
    ],
  },
];

export { col as columnSpec };
