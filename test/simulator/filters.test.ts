import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { get, pageAll, type Query } from '../support/sim-http.ts';

// Every filter of the runs, tools and guardrails lists, compared with the answer computed here from
// the ground truth; and every bound of the spec's Limits table, each refused with a message naming
// the parameter.

let sim: Simulator;
let truth: { summary: any; detail: any; metadata: Record<string, string> }[];

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, size: 1200, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
  truth = [...sim.world.visibleRuns()].map(({ plan, version }) => ({
    summary: sim.world.runs.summary(plan, version),
    detail: sim.world.runs.detail(plan, version),
    metadata: plan.metadata,
  }));
});
afterAll(() => sim.close());

async function expectFilter(query: Query, keep: (t: (typeof truth)[number]) => boolean, atLeast = 1): Promise<void> {
  const got = (await pageAll(sim, '/api/v1/runs', { limit: 100, ...query })).map((r) => r.id).sort();
  const expected = truth
    .filter(keep)
    .map((t) => t.summary.id)
    .sort();
  expect(got).toEqual(expected);
  expect(got.length).toBeGreaterThanOrEqual(atLeast);
}

const micros = (t: string) => parseTimestamp(t) as number;

describe('runs filters', () => {
  it('created_after is inclusive and created_before exclusive, to the microsecond', async () => {
    const pick = truth[400]!.summary.created_at as string;
    await expectFilter({ created_after: pick }, (t) => micros(t.summary.created_at) >= micros(pick), 100);
    await expectFilter({ created_before: pick }, (t) => micros(t.summary.created_at) < micros(pick), 100);
    const r = await get(sim, '/api/v1/runs', { created_after: pick, created_before: pick });
    expect(r.body.data).toEqual([]);
    // Offsets and fewer fraction digits mean the same instant.
    const shifted = new Date(micros(pick) / 1000 - (micros(pick) % 1000) / 1000).toISOString().replace('Z', '+00:00');
    expect((await get(sim, '/api/v1/runs', { created_after: shifted, limit: 1 })).status).toBe(200);
  });

  it('status and resolution_type take repeated values with OR; a null status matches none', async () => {
    await expectFilter({ status: ['running', 'paused'] }, (t) => ['running', 'paused'].includes(t.summary.status));
    await expectFilter({ status: 'completed' }, (t) => t.summary.status === 'completed', 500);
    await expectFilter({ resolution_type: ['pending', 'escalated'] }, (t) =>
      ['pending', 'escalated'].includes(t.summary.resolution?.type),
    );
  });

  it('ticket_id matches exactly, all runs of a ticket, awkward ids included', async () => {
    const byTicket = new Map<string, string[]>();
    for (const t of truth)
      byTicket.set(t.summary.ticket.id, [...(byTicket.get(t.summary.ticket.id) ?? []), t.summary.id]);
    const multi = [...byTicket.keys()].find((k) => (byTicket.get(k) as string[]).length > 1) as string;
    const awkward = [...byTicket.keys()].filter((k) => /[/'"%\u3000-\u9fff]/.test(k)).slice(0, 5);
    expect(multi).toBeDefined();
    expect(awkward.length).toBeGreaterThan(2);
    const wanted = [multi, ...awkward, 'no-such-ticket'];
    await expectFilter({ ticket_id: wanted }, (t) => wanted.includes(t.summary.ticket.id), 3);
    await expectFilter({ ticket_id: `${multi.toUpperCase()}x` }, () => false, 0);
  });

  it('agent_id, source and tool_name take repeated values with OR', async () => {
    const agents = [...new Set(truth.map((t) => t.summary.agent?.id).filter(Boolean))].slice(0, 2) as string[];
    await expectFilter({ agent_id: agents }, (t) => agents.includes(t.summary.agent?.id));
    await expectFilter({ source: ['フォーム', 'messenger:whatsapp'] }, (t) =>
      ['フォーム', 'messenger:whatsapp'].includes(t.summary.source),
    );
    const toolNames = (t: (typeof truth)[number]) =>
      new Set((t.detail.steps as any[]).filter((s) => s.type === 'tool_call').map((s) => s.tool.name as string));
    const names = ['knowledge_search', 'legacy_lookup'];
    await expectFilter({ tool_name: names }, (t) => names.some((n) => toolNames(t).has(n)));
    const label = (await get(sim, '/api/v1/runs/tool-options')).body.data.find(
      (o: any) => o.tool_name === 'knowledge_search',
    ).display_name;
    await expectFilter({ tool_name: label }, () => false, 0);
  });

  it('duration operators compare duration_seconds', async () => {
    const d = (t: (typeof truth)[number]) => t.summary.duration_seconds as number;
    await expectFilter({ 'duration[gt]': 300 }, (t) => d(t) > 300);
    await expectFilter({ 'duration[gte]': 60, 'duration[lt]': 120 }, (t) => d(t) >= 60 && d(t) < 120);
    await expectFilter({ 'duration[lte]': 30 }, (t) => d(t) <= 30);
    const exact = truth.find((t) => Number.isInteger(d(t)) && d(t) > 0) as (typeof truth)[number];
    await expectFilter({ 'duration[eq]': d(exact) }, (t) => d(t) === d(exact));
  });

  it('search looks in ticket title, ticket id and agent name, ignoring case', async () => {
    const hit = (needle: string) => (t: (typeof truth)[number]) =>
      [t.summary.ticket.title, t.summary.ticket.id, t.summary.agent?.name ?? ''].some((h: string) =>
        h.toLowerCase().includes(needle.toLowerCase()),
      );
    await expectFilter({ search: 'REFUND' }, hit('REFUND'));
    await expectFilter({ search: 'conv_' }, hit('conv_'));
    await expectFilter({ search: 'サポート' }, hit('サポート'));
  });

  it('metadata.<key> filters on the run metadata, with dots and colons in the key', async () => {
    await expectFilter({ 'metadata.plan': 'enterprise' }, (t) => t.metadata.plan === 'enterprise');
    await expectFilter(
      { 'metadata.brand.id': 'b-3', 'metadata.channel:type': 'email' },
      (t) => t.metadata['brand.id'] === 'b-3' && t.metadata['channel:type'] === 'email',
    );
    await expectFilter({ 'metadata.nothing': 'x' }, () => false, 0);
  });

  it('different filters combine with AND', async () => {
    await expectFilter(
      {
        status: 'completed',
        resolution_type: 'deflected',
        'metadata.region': 'eu',
        created_after: '2026-02-15T00:00:00Z',
      },
      (t) =>
        t.summary.status === 'completed' &&
        t.summary.resolution?.type === 'deflected' &&
        t.metadata.region === 'eu' &&
        micros(t.summary.created_at) >= micros('2026-02-15T00:00:00Z'),
    );
  });
});

describe('runs filter bounds', () => {
  const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
  const cases: [string, Query, RegExp][] = [
    ['201 statuses', { status: many(201, () => 'completed') }, /status/],
    ['201 ticket ids', { ticket_id: many(201, (i) => `t${i}`) }, /ticket_id/],
    ['201 agent ids', { agent_id: many(201, () => '00000000-0000-4000-8000-000000000000') }, /agent_id/],
    ['201 sources', { source: many(201, () => 'email') }, /source/],
    ['201 resolution types', { resolution_type: many(201, () => 'resolved') }, /resolution_type/],
    ['201 tool names', { tool_name: many(201, () => 'x') }, /tool_name/],
    ['a 201-character ticket id', { ticket_id: 'x'.repeat(201) }, /ticket_id/],
    ['a 201-character tool name', { tool_name: 'é'.repeat(201) }, /tool_name/],
    ['a 121-character source', { source: 's'.repeat(121) }, /source/],
    ['a 301-character search', { search: 'q'.repeat(301) }, /search/],
    ['a 501-character metadata value', { 'metadata.plan': 'v'.repeat(501) }, /metadata\.plan/],
    ['a metadata key with a space', { 'metadata.bad key': 'v' }, /metadata/],
    ['an empty metadata key', { 'metadata.': 'v' }, /metadata/],
    ['an unknown status', { status: 'done' }, /status/],
    ['comma-joined statuses', { status: 'completed,failed' }, /status/],
    ['an unknown resolution type', { resolution_type: 'closed' }, /resolution_type/],
    ['an agent id that is not a uuid', { agent_id: 'agent-1' }, /agent_id/],
    ['a negative duration', { 'duration[gt]': -1 }, /duration\[gt\]/],
    ['a fractional duration', { 'duration[lte]': 1.5 }, /duration\[lte\]/],
    ['a duration given twice', { 'duration[eq]': [1, 2] }, /duration\[eq\]/],
    ['a date that is not a date-time', { created_after: '2026-02-01' }, /created_after/],
    ['an impossible date', { created_before: '2026-02-30T00:00:00Z' }, /created_before/],
    ['an unknown parameter', { updated_after: '2026-02-01T00:00:00Z' }, /updated_after/],
  ];
  it.each(cases)('refuses %s', async (_name, query, mentions) => {
    const r = await get(sim, '/api/v1/runs', query);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.message).toMatch(mentions);
  });

  it('accepts exactly 200 values, 200-character items and a 300-character search', async () => {
    for (const q of [
      { status: many(200, () => 'completed') },
      { ticket_id: many(200, (i) => `t${i}`) },
      { ticket_id: 'チ'.repeat(200) },
      { source: 's'.repeat(120) },
      { search: 'q'.repeat(300) },
      { 'metadata.plan': 'v'.repeat(500) },
      { 'duration[eq]': 0 },
    ] as Query[]) {
      expect((await get(sim, '/api/v1/runs', q)).status, JSON.stringify(q).slice(0, 80)).toBe(200);
    }
  });
});

describe('tools and guardrails filters', () => {
  let tools: any[];
  beforeAll(async () => {
    tools = await pageAll(sim, '/api/v1/tools', { limit: 200 });
  });

  async function expectTools(query: Query, keep: (t: any) => boolean): Promise<void> {
    const got = (await pageAll(sim, '/api/v1/tools', { limit: 200, ...query })).map((t) => t.id).sort();
    expect(got).toEqual(
      tools
        .filter(keep)
        .map((t) => t.id)
        .sort(),
    );
    expect(got.length).toBeGreaterThan(0);
  }

  it('type with OR, booleans, integration and MCP server', async () => {
    await expectTools({ type: ['app_tool', 'mcp_tool'] }, (t) => ['app_tool', 'mcp_tool'].includes(t.type));
    await expectTools({ is_write_action: true }, (t) => t.is_write_action === true);
    await expectTools(
      { requires_approval: false, is_write_action: false },
      (t) => !t.requires_approval && !t.is_write_action,
    );
    await expectTools({ integration_id: 'shopify' }, (t) => t.app?.integration_id === 'shopify');
    const server = tools.find((t) => t.mcp).mcp.server_id;
    await expectTools({ mcp_server_id: server }, (t) => t.mcp?.server_id === server);
  });

  it('search covers name, description, integration name and MCP server name', async () => {
    for (const needle of ['Shopify', 'crm-mcp', 'refund']) {
      await expectTools({ search: needle }, (t) =>
        [t.name, t.description, t.app?.integration_name, t.mcp?.server_name].some(
          (h) => typeof h === 'string' && h.toLowerCase().includes(needle.toLowerCase()),
        ),
      );
    }
  });

  it('refuses bad tool filters and filters on lists that take none', async () => {
    for (const [path, q, mention] of [
      ['/api/v1/tools', { type: 'web_tool' }, /type/],
      ['/api/v1/tools', { is_write_action: 'yes' }, /is_write_action/],
      ['/api/v1/tools', { requires_approval: '1' }, /requires_approval/],
      ['/api/v1/tools', { mcp_server_id: 'server-1' }, /mcp_server_id/],
      ['/api/v1/guardrails', { type: 'warning' }, /type/],
      ['/api/v1/agents', { search: 'x' }, /search/],
      ['/api/v1/guidelines', { type: 'x' }, /type/],
      ['/api/v1/runbooks', { status: 'x' }, /status/],
      ['/api/v1/runs/tool-options', { limit: 5 }, /limit/],
    ] as [string, Query, RegExp][]) {
      const r = await get(sim, path, q);
      expect(r.status, `${path} ${JSON.stringify(q)}`).toBe(400);
      expect(r.body.error.message).toMatch(mention);
    }
  });

  it('guardrails filter by type', async () => {
    const all = await pageAll(sim, '/api/v1/guardrails');
    for (const type of ['escalation', 'restriction']) {
      const got = await pageAll(sim, '/api/v1/guardrails', { type });
      expect(got.map((g) => g.id)).toEqual(all.filter((g) => g.type === type).map((g) => g.id));
      expect(got.length).toBeGreaterThan(0);
    }
  });
});
