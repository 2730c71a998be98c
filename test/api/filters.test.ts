import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FilterError, MAX_FILTER_VALUES, type RunSummary, runListQueries } from '../../src/api/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { collect, failure, makeClient, startSim, type TestClient } from './test-kit.ts';

// Filters are checked against the spec's limits before anything is sent, and a value list longer
// than one request takes is split and merged without the caller noticing.

let sim: Simulator;
let t: TestClient;
let all: RunSummary[];

beforeAll(async () => {
  sim = await startSim({ size: 400, rateLimit: { perKey: null } });
  t = makeClient(sim.url, sim.key);
  all = await collect(t.client.iterateRuns({}, { pageSize: 100 }));
});
afterAll(async () => {
  await t.client.close();
  await sim.close();
});

const ids = (runs: RunSummary[]) => runs.map((r) => r.id).sort();
const many = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('checked before sending', () => {
  const cases: [string, () => Promise<unknown>][] = [
    ['ticket_id', () => t.client.listRuns({ ticketId: many(201, 't') })],
    ['ticket_id', () => t.client.listRuns({ ticketId: ['x'.repeat(201)] })],
    ['tool_name', () => t.client.listRuns({ toolName: ['ü'.repeat(201)] })],
    ['source', () => t.client.listRuns({ source: ['s'.repeat(121)] })],
    ['agent_id', () => t.client.listRuns({ agentId: ['not-a-uuid'] })],
    ['status', () => t.client.listRuns({ status: ['done'] })],
    ['resolution_type', () => t.client.listRuns({ resolutionType: ['abandoned'] })],
    ['search', () => t.client.listRuns({ search: 'q'.repeat(301) })],
    ['metadata.plan tier', () => t.client.listRuns({ metadata: { 'plan tier': 'pro' } })],
    ['metadata.a/b', () => t.client.listRuns({ metadata: { 'a/b': 'x' } })],
    ['metadata.region', () => t.client.listRuns({ metadata: { region: 'e'.repeat(501) } })],
    ['duration[gte]', () => t.client.listRuns({ duration: { gte: -1 } })],
    ['duration[lt]', () => t.client.listRuns({ duration: { lt: 1.5 } })],
    ['created_after', () => t.client.listRuns({ createdAfter: 'yesterday' })],
    ['limit', () => t.client.listRuns({}, { limit: 101 })],
    ['limit', () => t.client.catalogPage('tools', {}, { limit: 0 })],
    ['type', () => t.client.catalogPage('tools', { type: ['magic_tool'] })],
    ['mcp_server_id', () => t.client.catalogPage('tools', { mcpServerId: 'srv-1' })],
    ['type', () => t.client.catalogPage('guardrails', { type: 'advisory' })],
    ['ticket_id', () => collect(t.client.iterateRuns({ ticketId: many(MAX_FILTER_VALUES * 501, 't') }))],
  ];

  it.each(cases)('refuses a bad %s with an error naming it, and sends nothing', async (param, call) => {
    sim.counters.reset();
    const e = await failure(call());
    expect(e).toBeInstanceOf(FilterError);
    expect((e as FilterError).parameter).toBe(param);
    expect(e.message).toContain(param);
    expect(sim.counters.count()).toBe(0);
  });

  it('counts characters as code points, as the API does', async () => {
    const emoji = '😀'.repeat(120); // 240 UTF-16 units, 120 characters
    await expect(t.client.listRuns({ source: [emoji], ticketId: ['€'.repeat(200)] })).resolves.toBeDefined();
    await expect(t.client.listRuns({ source: [`${emoji}😀`] })).rejects.toBeInstanceOf(FilterError);
  });
});

describe('sent to the API', () => {
  it('filters by status, duration, metadata, search and created time', async () => {
    const open = await collect(t.client.iterateRuns({ status: ['running', 'paused', 'running'] }));
    expect(open.length).toBeGreaterThan(0);
    expect(open.every((r) => r.status === 'running' || r.status === 'paused')).toBe(true);

    const long = await collect(t.client.iterateRuns({ duration: { gte: 600 } }));
    expect(long.length).toBeGreaterThan(0);
    expect(long.every((r) => r.duration_seconds >= 600)).toBe(true);

    const meta = await collect(t.client.iterateRuns({ metadata: { 'brand.id': 'b-1', 'channel:type': 'web' } }));
    expect(meta.length).toBeGreaterThan(0);
    expect(meta.length).toBeLessThan(all.length / 5);

    const title = all[0]!.ticket.title;
    const found = await collect(t.client.iterateRuns({ search: title }));
    expect(found.map((r) => r.id)).toContain(all[0]!.id);

    const times = all.map((r) => parseTimestamp(r.created_at)!).sort((a, b) => a - b);
    const from = times[100]!;
    const to = times[200]!;
    const window = await collect(t.client.iterateRuns({ createdAfter: from, createdBefore: to }));
    expect(window).toHaveLength(100);
    expect(window.every((r) => parseTimestamp(r.created_at)! >= from && parseTimestamp(r.created_at)! < to)).toBe(true);
  });

  it('splits 500 ticket ids into requests of at most 200 and returns what the whole list matches', async () => {
    const tickets = [...new Set(all.map((r) => r.ticket.id))];
    const asked = [...tickets, ...many(500 - tickets.length, 'no-such-ticket-')];
    expect(asked).toHaveLength(500);
    const queries = runListQueries({ ticketId: asked }, { split: true });
    expect(queries.map((q) => q.filter(([k]) => k === 'ticket_id').length)).toEqual([200, 200, 100]);

    sim.counters.reset();
    const got = await collect(t.client.iterateRuns({ ticketId: asked }, { pageSize: 100 }));
    expect(ids(got)).toEqual(ids(all));
    expect(sim.counters.count('runs.list', 400)).toBe(0);
    expect(sim.counters.count('runs.list', 200)).toBeGreaterThanOrEqual(3);
  });

  it('merges the pieces of a split list by id, so a run matching two pieces comes once', async () => {
    const names = (await t.client.getRunToolOptions()).items.map((o) => o.tool_name);
    const whole = await collect(t.client.iterateRuns({ toolName: names }, { pageSize: 100 }));
    // Real names spread over both pieces, padded past the per-request limit with names nobody used.
    const half = Math.ceil(names.length / 2);
    const asked = [...names.slice(0, half), ...many(MAX_FILTER_VALUES - half, 'unused-'), ...names.slice(half)];
    expect(runListQueries({ toolName: asked }, { split: true })).toHaveLength(2);
    const split = await collect(t.client.iterateRuns({ toolName: asked }, { pageSize: 100 }));
    expect(new Set(split.map((r) => r.id)).size).toBe(split.length);
    expect(ids(split)).toEqual(ids(whole));
  });

  it('refuses the same long list on a single-page call, which cannot split', async () => {
    const e = await failure(t.client.listRuns({ ticketId: many(250, 'x') }));
    expect(e).toBeInstanceOf(FilterError);
    expect(e.message).toMatch(/ticket_id: at most 200 values per request; got 250/);
  });
});
