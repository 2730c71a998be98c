import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { get, pageAll } from '../support/sim-http.ts';

// A million runs are generated on demand: any page, window, ticket or run is answered without
// enumerating the others. (Memory is measured in bench/simulator.bench.ts.)

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({
    seed: 4,
    size: 1_000_000,
    days: 365,
    now: '2026-03-01T00:00:00Z',
    rateLimit: { perKey: null },
  });
});
afterAll(() => sim.close());

describe('a million runs', () => {
  it('serves the newest page, a window in the middle, and a run from the middle', async () => {
    const first = await get(sim, '/api/v1/runs', { limit: 100 });
    expect(first.body.data).toHaveLength(100);
    const from = '2025-09-01T00:00:00Z';
    const to = '2025-09-01T01:00:00Z';
    const window = await pageAll(sim, '/api/v1/runs', { created_after: from, created_before: to, limit: 100 });
    expect(window.length).toBeGreaterThan(60);
    for (const r of window) {
      const c = parseTimestamp(r.created_at) as number;
      expect(c).toBeGreaterThanOrEqual(parseTimestamp(from) as number);
      expect(c).toBeLessThan(parseTimestamp(to) as number);
    }
    const middle = window[Math.floor(window.length / 2)];
    const d = await get(sim, `/api/v1/runs/${middle.id}`);
    expect(d.status).toBe(200);
    expect(d.body.data.created_at).toBe(middle.created_at);
  });

  it('finds runs by ticket id anywhere in the range', async () => {
    const [run] = (
      await get(sim, '/api/v1/runs', {
        created_after: '2025-05-05T00:00:00Z',
        limit: 1,
        created_before: '2025-05-06T00:00:00Z',
      })
    ).body.data;
    const r = await get(sim, '/api/v1/runs', { ticket_id: run.ticket.id });
    expect(r.body.data.map((x: any) => x.id)).toContain(run.id);
  });
});
