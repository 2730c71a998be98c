import { describe, expect, it } from 'vitest';
import { AGENTS, GUARDRAILS, GUIDELINES, RUNBOOKS, RUNS, TOOLS } from '../../src/resources/registry.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { flattenCatalogObject, flattenToolOption } from '../../src/warehouse/flatten-catalog.ts';
import { checkRunDetail, flattenRunDetail } from '../../src/warehouse/flatten-run.ts';
import { PayloadError } from '../../src/warehouse/flatten-values.ts';
import { runDetail } from './run-fixture.ts';
import { simDetails, simWorld } from './wh-kit.ts';

describe('run detail flattening', () => {
  it('turns every simulator run into one runs row and its child rows, with a column for every spec member', () => {
    const details = simDetails(21, 150);
    expect(details.length).toBeGreaterThan(100);
    for (const d of details) {
      const rows = flattenRunDetail(d);
      expect(Object.keys(rows.run)).toEqual([...RUNS.columns.map((c) => c.name), 'created_date']);
      expect(rows.run.id).toBe(d.id);
      expect(rows.children.run_messages).toHaveLength((d.conversation as unknown[]).length);
      expect(rows.children.run_steps).toHaveLength((d.steps as unknown[]).length);
      expect(rows.children.run_evaluations).toHaveLength((d.evaluation_attributes as unknown[]).length);
      for (const child of RUNS.children) {
        for (const r of rows.children[child.table] ?? [])
          expect(Object.keys(r)).toEqual(['run_id', ...child.columns.map((c) => c.name), 'created_date']);
      }
      const trigger = d.trigger as Record<string, unknown>;
      expect(rows.run.ticket_tags).toEqual(trigger.ticket_tags ?? null);
      expect(rows.run.trigger_message_text).toBe(trigger.message_text ?? null);
    }
  });

  it('maps nested members to parent_member columns, order to ordinal, and keeps microseconds', () => {
    const rows = flattenRunDetail(
      runDetail({
        category: { id: null, name: 'Réclamations' },
        approval: {
          waiting_for_approval: true,
          pending: {
            step_id: 's2',
            tool_id: 'app:x',
            tool_name: 'shopify_refund',
            tool_type: 'app_tool',
            params: { amount: 12 },
            redacted: false,
            truncated: true,
          },
        },
        scheduled_resume_at: '2026-02-12T10:00:00.654321Z',
        trigger: {
          event_type: 'ticket.created',
          ticket_tags: ['vip', '返品'],
          trigger_message_type: 'chat',
          internal_notes_only: false,
          message_text: 'help',
        },
      }),
    );
    expect(rows.run).toMatchObject({
      ticket_id: 'T-1',
      ticket_title: 'Lieferung 📦 "kaputt"',
      agent_name: 'Aria',
      category_id: null,
      category_name: 'Réclamations',
      resolution_type: 'resolved',
      trigger_event_type: 'ticket.created',
      trigger_message_type: 'chat',
      trigger_internal_notes_only: false,
      trigger_message_text: 'help',
      ticket_tags: ['vip', '返品'],
      approval_waiting_for_approval: true,
      approval_pending_step_id: 's2',
      approval_pending_params: '{"amount":12}',
      approval_pending_truncated: true,
      created_at: parseTimestamp('2026-02-10T23:59:59.123456Z'),
      updated_at: 1770796800000001,
      scheduled_resume_at: parseTimestamp('2026-02-12T10:00:00.654321Z'),
      created_date: '2026-02-10',
    });
    expect(rows.children.run_messages![0]).toMatchObject({
      run_id: 'run-1',
      ordinal: 1,
      message: 'hi\u2028there',
      source_timestamp: '1700000000',
      recorded_at: parseTimestamp('2026-02-10T21:59:59.5Z'),
      created_date: '2026-02-10',
    });
    expect(rows.children.run_steps![1]).toMatchObject({
      ordinal: 2,
      tool_name: 'shopify_refund',
      tool_input: '{"amount":12}',
      tool_output: null,
      tool_redacted: true,
      tool_error: 'timeout',
    });
    expect(rows.children.run_steps![0]).toMatchObject({ tool_name: null, tool_input: null, tool_redacted: null });
  });

  it('gives null columns for null parents and for trigger members that are absent', () => {
    const rows = flattenRunDetail(
      runDetail({ agent: null, resolution: null, ticket: { id: 'x', title: 't', url: null }, trigger: {} }),
    );
    for (const c of RUNS.columns.filter(
      (c) => c.path[0] === 'trigger' || c.path[0] === 'agent' || c.path[0] === 'resolution',
    )) {
      expect(rows.run[c.name], c.name).toBeNull();
    }
    expect(rows.run.ticket_url).toBeNull();
  });

  it('keeps huge and deeply nested JSON whole, and integers beyond 2^53 with all their digits', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 2000; i++) deep = i % 2 ? [deep] : { next: deep };
    const huge = 'x'.repeat(5_000_000);
    const rows = flattenRunDetail(
      runDetail({
        steps: [
          {
            id: 's',
            order: 1,
            timestamp: '2026-02-11T00:00:00Z',
            type: 'tool_call',
            title: '',
            content: '',
            status: 'completed',
            duration_seconds: 1,
            tool: {
              name: 'n',
              type: 't',
              input: { big: 2n ** 64n + 1n, safe: 2 ** 53 + 2, neg: -(2n ** 63n) },
              output: { huge, deep },
              redacted: false,
              truncated: false,
              error: null,
            },
          },
        ],
      }),
    );
    const step = rows.children.run_steps![0] as Record<string, unknown>;
    expect(step.tool_input).toBe('{"big":18446744073709551617,"safe":9007199254740994,"neg":-9223372036854775808}');
    const output = JSON.parse(step.tool_output as string) as { huge: string; deep: unknown };
    expect(output.huge).toHaveLength(5_000_000);
    expect(JSON.stringify(output.deep)).toBe(JSON.stringify(deep));
  });

  it('accepts an ordinal beyond 2^53 given as a bigint, and refuses one beyond 64 bits', () => {
    const ok = flattenRunDetail(runDetail({ conversation: [{ id: 'm', order: 2n ** 60n, recorded_at: null }] }));
    expect(ok.children.run_messages![0]?.ordinal).toBe(2n ** 60n);
    expect(() => flattenRunDetail(runDetail({ conversation: [{ id: 'm', order: 2n ** 64n }] }))).toThrow(
      /conversation\[0\]\.order: integer out of the 64-bit range/,
    );
  });

  it('refuses a payload it cannot flatten, naming the member', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: 42 }, /^id: expected a string, got number 42/],
      [{ updated_at: '2026-02-11 08:00:00' }, /^updated_at: expected an RFC 3339 date-time/],
      [{ updated_at: '2026-02-11t08:00:00z' }, /^updated_at: expected an RFC 3339/],
      [{ created_at: null }, /^created_at: required/],
      [{ ticket: 'T-1' }, /^ticket: expected an object/],
      [{ duration_seconds: '12' }, /^duration_seconds: expected a number, got the string "12"/],
      [{ trigger: { ticket_tags: 'vip' } }, /^trigger\.ticket_tags: expected an array of strings/],
      [{ trigger: { ticket_tags: ['vip', 3] } }, /^trigger\.ticket_tags\[1\]: expected a string/],
      [{ steps: undefined }, /^steps: expected an array, got nothing/],
      [{ conversation: [{ id: 'm', order: 1.5 }] }, /^conversation\[0\]\.order: expected an integer/],
      [{ evaluation_attributes: [{ id: 'e' }, { id: 'e' }] }, /^evaluation_attributes\[1\]\.id: duplicate id "e"/],
      [{ steps: [{ id: 's', timestamp: '2026-02-30T00:00:00Z' }] }, /^steps\[0\]\.timestamp: expected an RFC 3339/],
    ];
    for (const [over, message] of cases) {
      const d = runDetail(over);
      expect(() => flattenRunDetail(d), JSON.stringify(over)).toThrow(PayloadError);
      expect(() => checkRunDetail(d), JSON.stringify(over)).toThrow(message);
    }
    expect(() => flattenRunDetail(null)).toThrow(/expected an object/);
  });

  it('refuses a run summary, whose missing arrays would wipe the run’s children', () => {
    const { conversation: _c, steps: _s, evaluation_attributes: _e, ...summary } = runDetail();
    expect(() => checkRunDetail(summary)).toThrow(/^conversation: expected an array/);
  });
});

describe('catalog flattening', () => {
  const world = simWorld(5, 10);

  it('flattens every simulator tool, with sub-objects as parent_member columns and parameters as rows', () => {
    const tools = world.catalogObjects('tool');
    for (const t of tools) {
      const { row, children: parameters } = flattenCatalogObject(TOOLS, t);
      expect(row.id).toBe(t.id);
      const params = t.parameters as { name: string }[];
      expect(parameters.map((p) => p.name)).toEqual([...new Set(params.map((p) => p.name))]);
      for (const p of parameters) expect(p.tool_id).toBe(t.id);
      if (t.type === 'app_tool')
        expect(row.app_integration_name).toBe((t.app as Record<string, unknown>).integration_name);
      if (t.type === 'mcp_tool')
        expect(JSON.parse(row.mcp_input_schema as string)).toEqual((t.mcp as Record<string, unknown>).input_schema);
      if (t.type === 'service_tool') expect(row.custom_headers).toBeNull();
    }
    expect(new Set(tools.map((t) => t.type))).toEqual(new Set(['service_tool', 'app_tool', 'custom_tool', 'mcp_tool']));
  });

  it('keeps the first of two parameters with the same name and reports the other', () => {
    const t = {
      ...world.catalogObjects('tool')[0],
      parameters: [
        { name: 'id', type: 'string' },
        { name: 'q', type: 'string' },
        { name: 'id', type: 'integer' },
      ],
    };
    const r = flattenCatalogObject(TOOLS, t);
    expect(r.children.map((p) => [p.name, p.type, p.ordinal])).toEqual([
      ['id', 'string', 0],
      ['q', 'string', 1],
    ]);
    expect(r.duplicateChildren).toEqual(['id']);
  });

  it('flattens agents with id arrays as lists and model_config as JSON', () => {
    for (const a of world.catalogObjects('agent')) {
      const row = flattenCatalogObject(AGENTS, a).row;
      expect(row.tool_ids).toEqual(a.tool_ids);
      expect(row.excluded_workflow_ids).toEqual(a.excluded_workflow_ids);
      expect(JSON.parse(row.model_config as string)).toEqual(a.model_config);
      expect(row.start_with_name).toBe((a.start_with as Record<string, unknown>).name);
      expect(row.last_run_at).toBe(parseTimestamp(a.last_run_at as string));
    }
  });

  it('flattens guidelines (section_*), guardrails and runbooks (inserts as JSON)', () => {
    for (const g of world.catalogObjects('guideline')) {
      const row = flattenCatalogObject(GUIDELINES, g).row;
      expect(row.section_icon).toBe((g.section as Record<string, unknown>).icon);
    }
    for (const g of world.catalogObjects('guardrail'))
      expect(flattenCatalogObject(GUARDRAILS, g).row.type).toBe(g.type);
    for (const r of world.catalogObjects('runbook')) {
      const row = flattenCatalogObject(RUNBOOKS, r).row;
      expect(JSON.parse(row.inserts as string)).toEqual(r.inserts);
      expect(row.used_by_agent_ids).toEqual(r.used_by_agent_ids);
    }
  });

  it('flattens tool options and refuses bad ones', () => {
    for (const o of world.toolOptions())
      expect(flattenToolOption(o)).toEqual({
        tool_name: o.tool_name,
        display_name: o.display_name,
        run_count: o.run_count,
      });
    expect(() => flattenToolOption({ display_name: 'x', run_count: 1 })).toThrow(/^tool_name: required/);
    expect(() => flattenToolOption({ tool_name: 'x', run_count: 1.5 })).toThrow(/^run_count: expected an integer/);
  });

  it('gives nulls for absent optional members and refuses the wrong types', () => {
    const row = flattenCatalogObject(GUARDRAILS, { id: 'g', object: 'guardrail' }).row;
    expect(row).toEqual({ id: 'g', title: null, content: null, type: null, created_at: null, updated_at: null });
    expect(() => flattenCatalogObject(AGENTS, { id: 'a', tool_ids: 'x' })).toThrow(
      /^tool_ids: expected an array of strings/,
    );
    expect(() => flattenCatalogObject(TOOLS, { id: 't', custom: { http_timeout_sec: '30' } })).toThrow(
      /^custom\.http_timeout_sec: expected an integer/,
    );
  });
});
