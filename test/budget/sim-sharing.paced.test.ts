import { afterEach, describe, expect, it } from 'vitest';
import { MARGIN, SharedRateBudget } from '../../src/budget/index.ts';
import type { RequestRecord, Simulator } from '../../src/simulator/index.ts';
import { collect, makeClient, startSim } from '../api/test-kit.ts';

// The budget sharing the key: a configured ceiling, a reserve left for other users, one 429 holding
// every caller. Asserts what the server saw (counts per window), not speed.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const gets = (r: RequestRecord) => r.endpoint === 'runs.get';

describe('sharing the key', () => {
  it('keeps under the configured ceiling when the server sets no limit', async () => {
    sim = await startSim({ size: 40, rateLimit: { perKey: null } });
    const t = makeClient(sim.url, sim.key, { budgetOptions: { ceilingPerSecond: 8, reserve: 0.2 } });
    const ids = (await collect(t.client.iterateRuns())).map((r) => r.id).slice(0, 16);
    sim.counters.reset();
    await collect(t.client.fetchRunDetails(ids, { concurrency: 8 }));
    expect(sim.counters.count('runs.get', 200)).toBe(16);
    expect(sim.counters.maxInAlignedWindow(1000)).toBeLessThanOrEqual(8);
    await t.client.close();
  });

  it("leaves the reserve of each window to the key's other users", async () => {
    sim = await startSim({ size: 80, rateLimit: { perKey: { limit: 20, windowSeconds: 1 } } });
    const t = makeClient(sim.url, sim.key, { budgetOptions: { reserve: 0.25 } });
    const ids = (await collect(t.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id).slice(0, 40);
    await collect(t.client.fetchRunDetails(ids, { concurrency: 8 }));
    expect(sim.counters.count(undefined, 429)).toBe(0);
    // 20 a second, the margin and a quarter kept back: 14.55, and one more when a request crosses
    // a window's edge.
    expect(sim.counters.maxInAlignedWindow(1000, gets)).toBeLessThanOrEqual(16);
    expect((await t.budget.snapshot()).ratePerSecond).toBeCloseTo(20 * (1 - MARGIN) * 0.75);
    await t.client.close();
  });

  it('holds every caller sharing the budget for the Retry-After of one 429', async () => {
    sim = await startSim({ size: 40, rateLimit: { perKey: null } });
    const lister = makeClient(sim.url, sim.key);
    const ids = (await collect(lister.client.iterateRuns())).map((r) => r.id);
    await lister.client.close();
    // Two clients of one process, one budget between them.
    const budget = new SharedRateBudget();
    const shared = [0, 1].map(() => makeClient(sim!.url, sim!.key, { budget }));
    sim.faults.set({ burst429Rate: 1, burst429Seconds: 2 });
    sim.counters.reset();
    const first = shared[0]!.client.getRun(ids[0]!);
    while (sim.counters.count(undefined, 429) === 0) await new Promise((r) => setTimeout(r, 5));
    // The server now refuses this key for two seconds; anyone who calls before then gets a 429.
    sim.faults.set({ burst429Rate: 0 });
    await new Promise((r) => setTimeout(r, 50));
    const others = [
      shared[1]!.client.getRun(ids[1]!),
      shared[0]!.client.getRun(ids[2]!),
      shared[1]!.client.getCatalogObject('tools', 'service:web_search'),
    ];
    await Promise.all([first, ...others]);
    expect(sim.counters.count(undefined, 429)).toBe(1);
    expect(sim.counters.count(undefined, 200)).toBe(4);
    expect((await budget.snapshot()).pauses).toBe(1);
    for (const t of shared) await t.client.close();
  });
});
