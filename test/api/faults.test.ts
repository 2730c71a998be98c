import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiError,
  AuthError,
  InvalidRequestError,
  MalformedResponseError,
  NetworkError,
  PermissionError,
  type RunDetail,
  ServerError,
  TimeoutError,
} from '../../src/api/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { collect, failure, makeClient, startSim } from './test-kit.ts';

// The client against a simulator that misbehaves: the same data comes out with faults on as with
// faults off, failures that cannot heal fail fast with the right class, and no error shows the key.

let sim: Simulator;
let reference: { ids: string[]; details: Map<string, RunDetail> };

beforeAll(async () => {
  sim = await startSim({ size: 250, rateLimit: { perKey: null } });
  const { client } = makeClient(sim.url, sim.key);
  const ids = (await collect(client.iterateRuns({}, { pageSize: 40 }))).map((r) => r.id);
  const details = new Map<string, RunDetail>();
  for await (const r of client.fetchRunDetails(ids.slice(0, 60))) if (r.ok) details.set(r.id, r.value);
  await client.close();
  reference = { ids, details };
});
afterEach(() => sim.faults.off());
afterAll(() => sim.close());

function expectNoKey(e: unknown, key: string): void {
  expect(String((e as Error).message)).not.toContain(key);
  expect(JSON.stringify(e)).not.toContain(key);
  expect(inspect(e, { depth: 6 })).not.toContain(key);
}

describe('with faults on', () => {
  it('returns exactly the fault-free data through 5xx, resets, malformed and truncated bodies', async () => {
    sim.faults.set({ serverErrorRate: 0.12, resetRate: 0.06, malformedRate: 0.06, truncatedRate: 0.06, seed: 5 });
    sim.counters.reset();
    const t = makeClient(sim.url, sim.key, { retry: { maxAttempts: 12, baseDelayMs: 1, maxDelayMs: 5 } });
    const ids = (await collect(t.client.iterateRuns({}, { pageSize: 40 }))).map((r) => r.id);
    expect(ids).toEqual(reference.ids);
    const got = new Map<string, RunDetail>();
    for await (const r of t.client.fetchRunDetails(ids.slice(0, 60), { concurrency: 6 })) {
      expect(r.ok).toBe(true);
      if (r.ok) got.set(r.id, r.value);
    }
    expect(got).toEqual(reference.details);
    const seen = sim.counters.snapshot().byStatus;
    expect((seen['500'] ?? 0) + (seen['502'] ?? 0) + (seen['503'] ?? 0)).toBeGreaterThan(0);
    expect(seen['0']).toBeGreaterThan(0);
    expect(t.client.stats().retries).toBeGreaterThan(5);
    expect(t.client.stats().invalidRecords).toBe(0);
    await t.client.close();
  });

  it('gives up on a server that keeps failing after the bounded number of attempts', async () => {
    sim.faults.set({ serverErrorRate: 1 });
    sim.counters.reset();
    const t = makeClient(sim.url, sim.key, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    const e = (await failure(t.client.getRun(reference.ids[0]!))) as ApiError;
    expect(e).toBeInstanceOf(ServerError);
    expect(e.attempts).toBe(3);
    expect(e.endpoint).toBe('runs.get');
    expect(e.requestId).toMatch(/^req_/);
    expect(sim.counters.count('runs.get')).toBe(3);
    await t.client.close();
  });

  it('retries a body that is not JSON, then reports it as malformed', async () => {
    sim.faults.set({ malformedRate: 1 });
    const t = makeClient(sim.url, sim.key, { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 } });
    expect(await failure(t.client.listRuns())).toBeInstanceOf(MalformedResponseError);
    sim.faults.set({ malformedRate: 0, truncatedRate: 1 });
    const cut = await failure(t.client.getRun(reference.ids[0]!));
    expect(cut).toBeInstanceOf(NetworkError);
    expectNoKey(cut, sim.key);
    await t.client.close();
  });

  it('times out a response that is too slow, and retries it', async () => {
    sim.faults.set({ latencyRate: 1, latencyMinMs: 400, latencyMaxMs: 400 });
    sim.counters.reset();
    const t = makeClient(sim.url, sim.key, {
      timeouts: { requestMs: 80 },
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
    });
    const e = (await failure(t.client.getRun(reference.ids[0]!))) as ApiError;
    expect(e).toBeInstanceOf(TimeoutError);
    expect(e.attempts).toBe(2);
    expectNoKey(e, sim.key);
    // The server finishes the abandoned responses later; wait for them so the next test counts only its own.
    while (sim.counters.count('runs.get') < 2) await new Promise((r) => setTimeout(r, 20));
    expect(sim.counters.count('runs.get')).toBe(2);
    await t.client.close();
  });
});

describe('fatal answers', () => {
  it('stops at once on a revoked key: AuthError, no retry, and the key is nowhere in it', async () => {
    const key = sim.keys.add({});
    const t = makeClient(sim.url, key);
    await t.client.listRuns({}, { limit: 1 });
    sim.keys.revoke(key);
    sim.counters.reset();
    const e = await failure(t.client.listRuns({}, { limit: 1 }));
    expect(e).toBeInstanceOf(AuthError);
    expect(sim.counters.count()).toBe(1);
    expectNoKey(e, key);
    // A detail fetch over many ids ends on the first 401 instead of failing each id in turn.
    const run = collect(t.client.fetchRunDetails(reference.ids.slice(0, 40), { concurrency: 2 }));
    expect(await failure(run)).toBeInstanceOf(AuthError);
    expect(sim.counters.count('runs.get')).toBeLessThanOrEqual(3);
    await t.client.close();
  });

  it('reports a missing scope for that resource only; the others still answer', async () => {
    const key = sim.keys.add({ scopes: ['api:runs:read', 'api:agents:read'] });
    const t = makeClient(sim.url, key);
    sim.counters.reset();
    const e = (await failure(t.client.getCatalogObject('tools', 'service:web_search'))) as PermissionError;
    expect(e).toBeInstanceOf(PermissionError);
    expect(e.scope).toBe('api:tools:read');
    expect(e.message).toContain('api:tools:read');
    expect(e.requestId).toMatch(/^req_/);
    expect(sim.counters.count('tools.get')).toBe(1);
    expect(await failure(collect(t.client.iterateCatalog('guidelines')))).toBeInstanceOf(PermissionError);
    expect((await t.client.listRuns({}, { limit: 2 })).items).toHaveLength(2);
    expect((await collect(t.client.iterateCatalog('agents'))).length).toBeGreaterThan(0);
    expectNoKey(e, key);
    await t.client.close();
  });

  it('makes a 400 fatal: a cursor the API did not issue', async () => {
    const t = makeClient(sim.url, sim.key);
    sim.counters.reset();
    const e = (await failure(t.client.listRuns({}, { cursor: 'not-a-cursor' }))) as ApiError;
    expect(e).toBeInstanceOf(InvalidRequestError);
    expect(e.status).toBe(400);
    expect(sim.counters.count()).toBe(1);
    await t.client.close();
  });
});
