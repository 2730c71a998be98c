import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { schemaValidator } from '../support/schema-check.ts';
import { get, pageAll } from '../support/sim-http.ts';

// Every endpoint answers with the spec's envelopes and resource shapes, checked against the JSON
// Schemas with unknown members refused, over enough data to meet every variant the generator makes.

const validate = schemaValidator('closed');
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, size: 1500, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
});
afterAll(() => sim.close());

function expectValid(file: string, data: unknown): void {
  expect(validate(file, data), `${file}: ${JSON.stringify(data).slice(0, 300)}`).toEqual([]);
}

// The JSON Schemas are the client's and accept a null in a few places the spec types as plain
// objects or strings, so a client survives a looser server. The simulator itself keeps to the spec.
const TOOL_SUB = { service_tool: 'service', app_tool: 'app', custom_tool: 'custom', mcp_tool: 'mcp' } as const;
const STEP_TOOL_KEYS = ['error', 'input', 'name', 'output', 'redacted', 'truncated', 'type'];

function strictRunDetail(run: any): string[] {
  const out: string[] = [];
  const a = run.agent;
  if (
    a === null ||
    typeof a !== 'object' ||
    typeof a.id !== 'string' ||
    typeof a.name !== 'string' ||
    typeof a.description !== 'string'
  ) {
    out.push(`${run.id}: detail agent must be an object of strings, got ${JSON.stringify(a)}`);
  }
  for (const s of run.steps) {
    const t = s.tool;
    if (t === null || typeof t !== 'object') {
      out.push(`${run.id} step ${s.order}: tool must be an object, got ${JSON.stringify(t)}`);
      continue;
    }
    if (Object.keys(t).sort().join() !== STEP_TOOL_KEYS.join())
      out.push(`${run.id} step ${s.order}: tool members ${Object.keys(t)}`);
    for (const k of ['name', 'type', 'error'])
      if (typeof t[k] !== 'string') out.push(`${run.id} step ${s.order}: tool.${k} must be a string`);
  }
  return out;
}

function strictTool(tool: any): string[] {
  const out: string[] = [];
  const own = TOOL_SUB[tool.type as keyof typeof TOOL_SUB];
  for (const sub of Object.values(TOOL_SUB)) {
    if (!(sub in tool)) continue;
    if (tool[sub] === null || typeof tool[sub] !== 'object')
      out.push(`${tool.id}: ${sub} must be an object when present`);
    if (sub !== own) out.push(`${tool.id}: a ${tool.type} carries ${sub}`);
  }
  if (!tool[own]) out.push(`${tool.id}: ${own} is missing`);
  if (tool.type === 'custom_tool' && (tool.custom?.auth === null || typeof tool.custom?.auth !== 'object')) {
    out.push(`${tool.id}: custom.auth must be an object`);
  }
  return out;
}

describe('runs', () => {
  it('lists summaries in the list envelope, without conversation or steps', async () => {
    const r = await get(sim, '/api/v1/runs');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expectValid('list-envelope.json', r.body);
    expect(r.body.pagination.limit).toBe(50);
    expect(r.body.data).toHaveLength(50);
    for (const run of r.body.data) {
      expectValid('run-summary.json', run);
      expect(run.object).toBe('run');
      expect(run).not.toHaveProperty('conversation');
      expect(run).not.toHaveProperty('steps');
    }
  });

  it('serves a valid detail for every run, agreeing with its summary', async () => {
    const summaries = await pageAll(sim, '/api/v1/runs', { limit: 100 });
    expect(summaries.length).toBeGreaterThan(1400);
    const violations: string[] = [];
    for (const s of summaries) {
      expectValid('run-summary.json', s);
      const d = await get(sim, `/api/v1/runs/${s.id}`);
      expect(d.status).toBe(200);
      expectValid('detail-envelope.json', d.body);
      expectValid('run-detail.json', d.body.data);
      violations.push(...strictRunDetail(d.body.data));
      for (const k of [
        'id',
        'created_at',
        'updated_at',
        'status',
        'source',
        'duration_seconds',
        'ticket',
        'category',
        'resolution',
        'approval',
        'scheduled_resume_at',
      ]) {
        expect(d.body.data[k]).toEqual(s[k]);
      }
    }
    expect(violations).toEqual([]);
  });

  it('accepts an upper-case run id and answers not_found for ids it does not know', async () => {
    const [first] = (await get(sim, '/api/v1/runs', { limit: 1 })).body.data;
    expect((await get(sim, `/api/v1/runs/${first.id.toUpperCase()}`)).status).toBe(200);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '..', "x'; drop table runs"]) {
      const r = await get(sim, `/api/v1/runs/${encodeURIComponent(id)}`);
      expect(r.status).toBe(404);
      expectValid('error.json', r.body);
      expect(r.body.error.code).toBe('not_found');
    }
  });

  it('lists tool options as data only, without pagination', async () => {
    const r = await get(sim, '/api/v1/runs/tool-options');
    expect(r.status).toBe(200);
    expectValid('tool-options-envelope.json', r.body);
    expect(Object.keys(r.body)).toEqual(['data']);
    expect(r.body.data.length).toBeGreaterThan(10);
    for (const o of r.body.data) expectValid('run-tool-option.json', o);
  });

  it('tool options count the runs whose tool-call steps used each recorded name', async () => {
    const options = (await get(sim, '/api/v1/runs/tool-options')).body.data as {
      tool_name: string;
      run_count: number;
    }[];
    const counts = new Map<string, number>();
    for (const run of sim.world.truthRunDetails()) {
      const names = new Set((run.steps as any[]).filter((s) => s.type === 'tool_call').map((s) => s.tool.name));
      for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    expect(new Map(options.map((o) => [o.tool_name, o.run_count]))).toEqual(counts);
  });
});

describe('catalog', () => {
  const kinds = [
    ['tools', 'tool.json', 'tool'],
    ['agents', 'agent.json', 'agent'],
    ['guidelines', 'guideline.json', 'guideline'],
    ['guardrails', 'guardrail.json', 'guardrail'],
    ['runbooks', 'runbook.json', 'runbook'],
  ] as const;

  for (const [path, schema, object] of kinds) {
    it(`${path}: list and detail agree, with the ${object} literal`, async () => {
      const first = await get(sim, `/api/v1/${path}`);
      expect(first.status).toBe(200);
      expectValid('list-envelope.json', first.body);
      expect(first.body.pagination.limit).toBe(100);
      const all = await pageAll(sim, `/api/v1/${path}`, { limit: 200 });
      expect(all.length).toBeGreaterThan(5);
      for (const item of all) {
        expectValid(schema, item);
        if (object === 'tool') expect(strictTool(item)).toEqual([]);
        expect(item.object).toBe(object);
        const d = await get(sim, `/api/v1/${path}/${encodeURIComponent(item.id)}`);
        expect(d.status, item.id).toBe(200);
        expect(d.body.data).toEqual(item);
      }
      const missing = await get(
        sim,
        `/api/v1/${path}/${path === 'tools' ? 'service%3Anope' : '00000000-0000-4000-8000-000000000000'}`,
      );
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    });
  }

  it('tool ids follow the id format and resolve URL-encoded, including awkward characters', async () => {
    const tools = await pageAll(sim, '/api/v1/tools', { limit: 200 });
    for (const t of tools) {
      const [prefix, rest] = [t.id.slice(0, t.id.indexOf(':')), t.id.slice(t.id.indexOf(':') + 1)];
      expect(
        { service_tool: 'service', app_tool: 'app', custom_tool: 'custom', mcp_tool: 'mcp' }[t.type as string],
      ).toBe(prefix);
      if (prefix === 'custom' || prefix === 'mcp') expect(rest).toMatch(/^[0-9a-f-]{36}$/);
    }
    const awkward = tools.map((t) => t.id as string).filter((id) => /[/% \u0080-\uffff]/.test(id));
    expect(awkward.length).toBeGreaterThanOrEqual(3);
    for (const id of awkward) expect((await get(sim, `/api/v1/tools/${encodeURIComponent(id)}`)).status).toBe(200);
    // An unencoded ':' is accepted too; an unencoded '/' is a different path.
    const plain = tools.find((t) => /^service:[a-z_]+$/.test(t.id));
    expect((await get(sim, `/api/v1/tools/${plain.id}`)).status).toBe(200);
    const slashed = awkward.find((id) => id.includes('/')) as string;
    expect((await get(sim, `/api/v1/tools/${slashed}`)).status).toBe(404);
  });
});

describe('data realism', () => {
  it('has every tool type with its sub-object, and custom tools with secrets in headers and auth', async () => {
    const tools = await pageAll(sim, '/api/v1/tools', { limit: 200 });
    const sub = { service_tool: 'service', app_tool: 'app', custom_tool: 'custom', mcp_tool: 'mcp' } as const;
    for (const [type, key] of Object.entries(sub)) {
      const ofType = tools.filter((t) => t.type === type);
      expect(ofType.length, type).toBeGreaterThan(5);
      for (const t of ofType) expect(t[key], `${t.id}.${key}`).not.toBeNull();
    }
    const custom = tools.filter((t) => t.type === 'custom_tool');
    const secretHeaders = custom
      .flatMap((t) => t.custom.headers)
      .filter((h: any) => /authorization|key|cookie/i.test(h.name));
    expect(secretHeaders.length).toBeGreaterThan(0);
    const auths = custom.map((t) => t.custom.auth).filter(Boolean);
    expect(auths.some((a: any) => a.token || a.password || a.client_secret || a.value)).toBe(true);
    expect(tools.some((t) => t.parameters.length > 0)).toBe(true);
  });

  it('has guardrails of both types, guidelines with sections, runbooks with inserts', async () => {
    const guardrails = await pageAll(sim, '/api/v1/guardrails');
    expect(new Set(guardrails.map((g) => g.type))).toEqual(new Set(['escalation', 'restriction']));
    const guidelines = await pageAll(sim, '/api/v1/guidelines');
    expect(guidelines.every((g) => typeof g.section.id === 'string')).toBe(true);
    const runbooks = await pageAll(sim, '/api/v1/runbooks');
    expect(runbooks.some((r) => r.inserts.length > 0)).toBe(true);
  });

  it('run details have conversations, about half tool calls, redactions, truncations, errors and evaluations', () => {
    let steps = 0;
    let toolCalls = 0;
    let redacted = 0;
    let truncated = 0;
    let errors = 0;
    let messages = 0;
    let evaluations = 0;
    let namedNonCalls = 0;
    for (const d of sim.world.truthRunDetails()) {
      steps += (d.steps as unknown[]).length;
      messages += (d.conversation as unknown[]).length;
      evaluations += (d.evaluation_attributes as unknown[]).length;
      for (const s of d.steps as any[]) {
        if (s.type !== 'tool_call' && s.tool.name !== '') namedNonCalls++;
        if (s.type !== 'tool_call') continue;
        toolCalls++;
        if (s.tool.redacted) redacted++;
        if (s.tool.truncated) truncated++;
        if (s.tool.error) errors++;
      }
    }
    expect(toolCalls / steps).toBeGreaterThan(0.4);
    expect(toolCalls / steps).toBeLessThan(0.6);
    expect(redacted).toBeGreaterThan(0);
    expect(truncated).toBeGreaterThan(0);
    expect(errors).toBeGreaterThan(0);
    expect(messages).toBeGreaterThan(0);
    expect(evaluations).toBeGreaterThan(0);
    // Steps that are not tool calls but name a tool: tool options and the tool_name filter skip them.
    expect(namedNonCalls).toBeGreaterThan(0);
  });

  it('uses null wherever the spec allows it, omits optional trigger members, and writes unicode', async () => {
    const runs = await pageAll(sim, '/api/v1/runs', { limit: 100 });
    const seen = (f: (r: any) => boolean) => runs.some(f);
    expect(seen((r) => r.status === null)).toBe(true);
    expect(seen((r) => r.agent === null)).toBe(true);
    expect(seen((r) => r.agent !== null && r.agent.name === null)).toBe(true);
    expect(seen((r) => r.agent !== null && r.agent.id === null)).toBe(true);
    expect(seen((r) => r.category === null)).toBe(true);
    expect(seen((r) => r.category !== null && r.category.id === null)).toBe(true);
    expect(seen((r) => r.category !== null && r.category.name === null)).toBe(true);
    expect(seen((r) => r.resolution === null)).toBe(true);
    expect(seen((r) => r.ticket.url === null)).toBe(true);
    expect(seen((r) => r.scheduled_resume_at !== null)).toBe(true);
    expect(seen((r) => r.approval.pending !== null)).toBe(true);
    for (const m of ['event_type', 'ticket_tags', 'customer_name']) {
      expect(
        seen((r) => r.trigger[m] === null),
        `${m} null`,
      ).toBe(true);
      expect(
        seen((r) => !(m in r.trigger)),
        `${m} absent`,
      ).toBe(true);
    }
    const text = JSON.stringify(runs);
    expect(text).toMatch(/[\u3040-\u30ff]/); // Japanese
    expect(text).toMatch(/[\u0400-\u04ff]/); // Cyrillic
    expect(/\p{Extended_Pictographic}/u.test(text)).toBe(true);
    expect(seen((r) => /[/'"%]/.test(r.ticket.id))).toBe(true);
  });

  it('pending approvals: every nullable member null now and then, params redacted or cut short', async () => {
    const big = await startSimulator({
      seed: 11,
      size: 40_000,
      now: '2026-03-01T00:00:00Z',
      rateLimit: { perKey: null },
    });
    try {
      const paused = await pageAll(big, '/api/v1/runs', {
        status: 'paused',
        created_after: '2026-02-22T00:00:00Z',
        limit: 100,
      });
      const pending = paused.map((r) => r.approval.pending).filter(Boolean);
      expect(pending.length).toBeGreaterThan(50);
      for (const m of ['step_id', 'tool_id', 'tool_name', 'tool_type', 'params']) {
        expect(
          pending.some((p) => p[m] === null),
          `${m} null`,
        ).toBe(true);
        expect(
          pending.some((p) => p[m] !== null),
          `${m} set`,
        ).toBe(true);
      }
      expect(pending.some((p) => p.redacted)).toBe(true);
      expect(pending.some((p) => p.truncated)).toBe(true);
    } finally {
      await big.close();
    }
  });

  it('keeps microseconds in timestamps and ties some created_at values exactly', async () => {
    const runs = await pageAll(sim, '/api/v1/runs', { limit: 100 });
    expect(runs.some((r) => /\.\d{6}Z$/.test(r.updated_at))).toBe(true);
    const created = runs.map((r) => r.created_at);
    expect(new Set(created).size).toBeLessThan(created.length);
  });
});

describe('errors', () => {
  it('every error carries the envelope with a request id, also in the X-Request-Id header', async () => {
    const cases = [
      await get(sim, '/api/v1/runs', {}, null),
      await get(sim, '/api/v1/runs', { limit: 0 }),
      await get(sim, '/api/v1/nothing-here'),
      await get(sim, '/api/v1/runs/00000000-0000-4000-8000-000000000000'),
    ];
    for (const r of cases) {
      expectValid('error.json', r.body);
      expect(r.body.error.request_id).toMatch(/^req_/);
      expect(r.headers.get('x-request-id')).toBe(r.body.error.request_id);
    }
    expect(cases.map((c) => c.status)).toEqual([401, 400, 404, 404]);
  });

  it('refuses other methods on REST endpoints', async () => {
    const res = await fetch(`${sim.url}/api/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.key}` },
    });
    expect(res.status).toBe(405);
    expect(((await res.json()) as any).error.code).toBe('invalid_request');
  });
});
