import { afterEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { get } from '../support/sim-http.ts';

// Rate limits per key and per endpoint: X-RateLimit-* on 200s of the runs list, 429 with
// Retry-After, the headers and retry_after in the body; counters that tests and benches read.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

/** Waits for the start of a fresh aligned window, so a burst of requests falls inside one. */
async function freshWindow(seconds: number): Promise<void> {
  const size = seconds * 1000;
  await new Promise((r) => setTimeout(r, size - (Date.now() % size) + 5));
}

describe('rate limiting', () => {
  it('reports the budget on runs-list 200s and refuses past it with 429 and Retry-After', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 100,
      now: '2026-03-01T00:00:00Z',
      rateLimit: { perKey: { limit: 5, windowSeconds: 2 } },
    });
    await freshWindow(2);
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await get(sim, '/api/v1/runs', { limit: 1 }));
    const ok = replies.slice(0, 5);
    for (const [i, r] of ok.entries()) {
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('5');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(4 - i));
      const reset = Number(r.headers.get('x-ratelimit-reset'));
      expect(Number.isInteger(reset)).toBe(true);
      expect(reset * 1000).toBeGreaterThan(Date.now());
      expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 2000);
    }
    const refused = replies[5]!;
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.body.error.retry_after).toBe(retryAfter);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    await new Promise((r) => setTimeout(r, retryAfter * 1000));
    expect((await get(sim, '/api/v1/runs', { limit: 1 })).status).toBe(200);
  });

  it('does not send X-RateLimit headers on other endpoints', async () => {
    sim = await startSimulator({ seed: 1, size: 100, now: '2026-03-01T00:00:00Z' });
    const r = await get(sim, '/api/v1/agents');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('limits one endpoint on its own and each key on its own', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 100,
      now: '2026-03-01T00:00:00Z',
      rateLimit: {
        perKey: { limit: 100, windowSeconds: 1 },
        perEndpoint: { 'runs.get': { limit: 3, windowSeconds: 2 } },
      },
    });
    const id = (await get(sim, '/api/v1/runs', { limit: 1 })).body.data[0].id;
    await freshWindow(2);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(sim, `/api/v1/runs/${id}`)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await get(sim, '/api/v1/runs', { limit: 1 })).status).toBe(200);
    const other = sim.keys.add();
    expect((await get(sim, `/api/v1/runs/${id}`, {}, other)).status).toBe(200);
  });

  it('a per-organization limit is shared by the keys of one organization', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 100,
      now: '2026-03-01T00:00:00Z',
      keys: [
        { org: 'acme' },
        { key: 'svc_live_second_key_of_acme', org: 'acme' },
        { key: 'svc_live_other_org', org: 'other' },
      ],
      rateLimit: { perKey: null, perOrg: { limit: 4, windowSeconds: 2 } },
    });
    await freshWindow(2);
    const a = [];
    for (let i = 0; i < 2; i++) a.push((await get(sim, '/api/v1/agents')).status);
    for (let i = 0; i < 3; i++) a.push((await get(sim, '/api/v1/agents', {}, 'svc_live_second_key_of_acme')).status);
    expect(a).toEqual([200, 200, 200, 200, 429]);
    expect((await get(sim, '/api/v1/agents', {}, 'svc_live_other_org')).status).toBe(200);
  });

  it('counts requests per endpoint and status, with their times', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 100,
      now: '2026-03-01T00:00:00Z',
      rateLimit: { perKey: { limit: 3, windowSeconds: 2 } },
    });
    await freshWindow(2);
    for (let i = 0; i < 4; i++) await get(sim, '/api/v1/runs', { limit: 1 });
    await get(sim, '/api/v1/runs', {}, null);
    const snap = sim.counters.snapshot();
    expect(snap.byEndpoint['runs.list']).toEqual({ 200: 3, 429: 1, 401: 1 });
    expect(sim.counters.count('runs.list', 200)).toBe(3);
    expect(sim.counters.maxInAlignedWindow(2000, (r) => r.status === 200)).toBe(3);
    const log = sim.counters.log();
    expect(log).toHaveLength(5);
    expect(log.every((r) => Math.abs(r.t - Date.now()) < 5000)).toBe(true);
    sim.counters.reset();
    expect(sim.counters.snapshot().total).toBe(0);
  });
});
