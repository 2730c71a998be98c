import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { buildUrl } from '../support/sim-http.ts';

// Faults are off by default and each can be switched on at a rate: 5xx (500 with the error
// envelope, 502/503 with a proxy's HTML), 429 bursts, connection resets, malformed and truncated
// bodies, and latency. Their draws are seeded, so a run can be replayed.

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ seed: 2, size: 200, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
});
afterAll(() => sim.close());
beforeEach(() => sim.faults.off());

type Outcome = { status: number; json: boolean; headers: Headers } | { error: string };

async function call(path = '/api/v1/runs'): Promise<Outcome> {
  try {
    const res = await fetch(buildUrl(sim.url, path), { headers: { authorization: `Bearer ${sim.key}` } });
    const text = await res.text();
    let json = true;
    try {
      JSON.parse(text);
    } catch {
      json = false;
    }
    return { status: res.status, json, headers: res.headers };
  } catch (e) {
    return { error: String((e as Error).cause ?? e) };
  }
}

describe('faults', () => {
  it('are off by default', async () => {
    for (let i = 0; i < 100; i++) {
      const o = await call(i % 2 ? '/api/v1/runs' : '/api/v1/tools');
      expect(o).toMatchObject({ status: 200, json: true });
    }
  });

  it('server errors: 500 with the envelope, 502 and 503 with HTML', async () => {
    sim.faults.set({ serverErrorRate: 1 });
    const seen = new Map<number, boolean>();
    for (let i = 0; i < 40; i++) {
      const o = (await call()) as { status: number; json: boolean };
      seen.set(o.status, o.json);
    }
    expect(seen.get(500)).toBe(true);
    expect(seen.get(502)).toBe(false);
    expect(seen.get(503)).toBe(false);
  });

  it('429 bursts refuse every request of the key for a while, with Retry-After', async () => {
    sim.faults.set({ burst429Rate: 1, burst429Seconds: 1 });
    const o = (await call()) as { status: number; headers: Headers };
    expect(o.status).toBe(429);
    expect(Number(o.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    sim.faults.set({ burst429Rate: 0 });
    expect(((await call('/api/v1/agents')) as { status: number }).status).toBe(429);
    await new Promise((r) => setTimeout(r, 1100));
    expect(((await call()) as { status: number }).status).toBe(200);
  });

  it('resets close the connection without a response', async () => {
    sim.faults.set({ resetRate: 1 });
    expect(await call()).toHaveProperty('error');
  });

  it('malformed bodies are 200s that are not JSON', async () => {
    sim.faults.set({ malformedRate: 1 });
    expect(await call()).toMatchObject({ status: 200, json: false });
  });

  it('truncated bodies stop half-way', async () => {
    sim.faults.set({ truncatedRate: 1 });
    const o = await call();
    if ('error' in o) expect(o.error).toMatch(/terminated|closed|socket|aborted/i);
    else expect(o.json).toBe(false);
  });

  it('latency delays the answer', async () => {
    sim.faults.set({ latencyRate: 1, latencyMinMs: 150, latencyMaxMs: 200 });
    const t0 = Date.now();
    expect(await call()).toMatchObject({ status: 200 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('can be limited to some endpoints', async () => {
    sim.faults.set({ serverErrorRate: 1, endpoints: ['runs.get'] });
    expect(await call('/api/v1/runs')).toMatchObject({ status: 200 });
    const id = sim.world.runs.plan(5).id;
    expect(((await call(`/api/v1/runs/${id}`)) as { status: number }).status).toBeGreaterThanOrEqual(500);
  });

  it('the same fault seed replays the same sequence', async () => {
    const sequence = async () => {
      sim.faults.off();
      sim.faults.set({ seed: 77, serverErrorRate: 0.3, malformedRate: 0.2 });
      const out = [];
      for (let i = 0; i < 30; i++) {
        const o = (await call()) as { status: number; json: boolean };
        out.push(`${o.status}${o.json ? '' : '!'}`);
      }
      return out.join(' ');
    };
    const first = await sequence();
    expect(first).toMatch(/50\d/);
    expect(await sequence()).toBe(first);
  });

  it('are counted like any other answer', async () => {
    sim.counters.reset();
    sim.faults.set({ resetRate: 1 });
    await call();
    expect(sim.counters.count('runs.list', 0)).toBe(1);
  });
});
