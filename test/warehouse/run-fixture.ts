// A hand-made run detail with every kind of member, for edge cases; `over` replaces members.

export function runDetail(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'run-1',
    object: 'run',
    created_at: '2026-02-10T23:59:59.123456Z',
    updated_at: '2026-02-11T08:00:00.000001Z',
    status: 'completed',
    source: 'email',
    duration_seconds: 12.5,
    ticket: { id: 'T-1', title: 'Lieferung 📦 "kaputt"', url: null },
    agent: { id: 'agent-1', name: 'Aria', description: 'd' },
    category: null,
    resolution: { type: 'resolved', summary: 's' },
    trigger: {},
    approval: { waiting_for_approval: false, pending: null },
    scheduled_resume_at: null,
    conversation: [
      {
        id: 'm1',
        order: 1,
        role: 'customer',
        user_name: 'Zoë',
        message: 'hi\u2028there',
        source_timestamp: '1700000000',
        recorded_at: '2026-02-10T23:59:59.5+02:00',
      },
    ],
    steps: [
      {
        id: 's1',
        order: 1,
        timestamp: '2026-02-11T00:00:00Z',
        type: 'reasoning',
        title: 't',
        content: 'c',
        status: 'completed',
        duration_seconds: 0.01,
        tool: null,
      },
      {
        id: 's2',
        order: 2,
        timestamp: '2026-02-11T00:00:01.999999Z',
        type: 'tool_call',
        title: 't',
        content: 'c',
        status: 'failed',
        duration_seconds: 3,
        tool: {
          name: 'shopify_refund',
          type: 'app_tool',
          input: { amount: 12 },
          output: null,
          redacted: true,
          truncated: false,
          error: 'timeout',
        },
      },
    ],
    evaluation_attributes: [
      { id: 'e1', attribute_id: 'a1', name: 'CSAT', description: 'x', value: '5', recorded_at: '2026-02-11T08:00:00Z' },
    ],
    ...over,
  };
}
