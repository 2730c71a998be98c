import { afterEach, describe, expect, it } from 'vitest';
import type { RequestRecord, Simulator } from '../../src/simulator/index.ts';
import { collect, makeClient, startSim } from '../api/test-kit.ts';

// The budget learning the simulator's rate limits: from the runs list's headers, from a 429, from
// an endpoint's own bucket. Asserts what the server saw (counts per window), not speed.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const gets = (r: RequestRecord) => r.endpoint === 'runs.get';

describe('limits learned from the simulator', () => {
  it('learns the limit from the runs list and stays under it in every window, with no 429', async () => {
    sim = await startSim({ size: 80, rateLimit: { perKey: { limit: 10, windowSeconds: 1 } } });
    const t = makeClient(sim.url, sim.key);
    const ids = (await collect(t.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id).slice(0, 28);
    const results = await collect(t.client.fetchRunDetails(ids, { concurrency: 8 }));
    expect(results.filter((r) => r.ok)).toHaveLength(28);
    expect(sim.counters.count(undefined, 429)).toBe(0);
    expect(sim.counters.maxInAlignedWindow(1000)).toBeLessThanOrEqual(10);
    const snap = await t.budget.snapshot();
    expect(snap.limit).toBe(10);
    expect(snap.buckets).toContainEqual(expect.objectContaining({ scope: 'key', burst: 10 }));
    await t.client.close();
  });

  it('learns from the first 429s when nothing told it the limit, then stops hitting it', async () => {
    sim = await startSim({ size: 80, rateLimit: { perKey: { limit: 10, windowSeconds: 1 } } });
    const lister = makeClient(sim.url, sim.key);
    const ids = (await collect(lister.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id).slice(0, 30);
    await lister.client.close();
    await new Promise((r) => setTimeout(r, 1000));
    sim.counters.reset();
    const t = makeClient(sim.url, sim.key);
    const results = await collect(t.client.fetchRunDetails(ids, { concurrency: 6, primeBudget: false }));
    expect(results.filter((r) => r.ok)).toHaveLength(30);
    const log = sim.counters.log();
    const limited = log.filter((r) => r.status === 429);
    // Only requests already in flight when the first 429 came back can meet one.
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.length).toBeLessThanOrEqual(6);
    const firstLimited = limited[0]!.t;
    expect(limited.every((r) => r.t - firstLimited < 1000)).toBe(true);
    expect(sim.counters.maxInAlignedWindow(1000, (r) => r.status === 200)).toBeLessThanOrEqual(10);
    await t.client.close();
  });

  it('learns the limit before a cold burst of detail fetches from one list page, and meets no 429', async () => {
    sim = await startSim({ size: 80, rateLimit: { perKey: { limit: 10, windowSeconds: 1 } } });
    const lister = makeClient(sim.url, sim.key);
    const ids = (await collect(lister.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id).slice(0, 24);
    await lister.client.close();
    await new Promise((r) => setTimeout(r, 1000));
    sim.counters.reset();
    const t = makeClient(sim.url, sim.key);
    const results = await collect(t.client.fetchRunDetails(ids, { concurrency: 6 }));
    expect(results.filter((r) => r.ok)).toHaveLength(24);
    expect(sim.counters.count(undefined, 429)).toBe(0);
    expect(sim.counters.count('runs.list')).toBe(1);
    expect(sim.counters.maxInAlignedWindow(1000)).toBeLessThanOrEqual(10);
    // Once is enough: a second batch does not list again.
    await collect(t.client.fetchRunDetails(ids.slice(0, 2)));
    expect(sim.counters.count('runs.list')).toBe(1);
    await t.client.close();
  });

  it("keeps an endpoint's own limit apart from the key's while list pages and detail fetches take turns", async () => {
    sim = await startSim({
      size: 80,
      rateLimit: {
        perKey: { limit: 50, windowSeconds: 1 },
        perEndpoint: { 'runs.get': { limit: 10, windowSeconds: 1 } },
      },
    });
    const t = makeClient(sim.url, sim.key);
    let fetched = 0;
    // As a sync does it: a page of summaries (whose headers report the key's bucket), then its details.
    for await (const page of t.client.runPages({}, { pageSize: 8 })) {
      const results = await collect(
        t.client.fetchRunDetails(
          page.items.map((r) => r.id),
          { concurrency: 4 },
        ),
      );
      fetched += results.filter((r) => r.ok).length;
      if (fetched >= 32) break;
    }
    expect(fetched).toBe(32);
    // Only the requests in flight when the endpoint's first 429 came back meet one.
    const limited = sim.counters.log().filter((r) => r.status === 429);
    expect(limited.length).toBeLessThanOrEqual(4);
    expect(limited.every((r) => r.t - limited[0]!.t < 1000)).toBe(true);
    expect(sim.counters.maxInAlignedWindow(1000, (r) => gets(r) && r.status === 200)).toBeLessThanOrEqual(10);
    const snap = await t.budget.snapshot();
    expect(snap.limit).toBe(50);
    expect(snap.buckets).toContainEqual(expect.objectContaining({ scope: 'runs.get', burst: 10 }));
    await t.client.close();
  });

  it("paces to an endpoint limit tighter than the key's, learned from its 429", async () => {
    sim = await startSim({
      size: 40,
      rateLimit: {
        perKey: { limit: 50, windowSeconds: 1 },
        perEndpoint: { 'runs.get': { limit: 4, windowSeconds: 1 } },
      },
    });
    const t = makeClient(sim.url, sim.key);
    const ids = (await collect(t.client.iterateRuns())).map((r) => r.id).slice(0, 14);
    const results = await collect(t.client.fetchRunDetails(ids, { concurrency: 4 }));
    expect(results.filter((r) => r.ok)).toHaveLength(14);
    expect(sim.counters.count('runs.get', 429)).toBeLessThanOrEqual(4);
    expect(sim.counters.maxInAlignedWindow(1000, (r) => gets(r) && r.status === 200)).toBeLessThanOrEqual(4);
    await t.client.close();
  });

  it('keeps as many requests in flight as the pace needs over a slow link', async () => {
    // 120 ms to answer: eight in flight would send some 65 a second, under the key's 100. (The
    // simulator's latency comes before the limiter counts a request, so a fixed window would count
    // ours a whole round trip after they started; a sliding log is the case this link makes.)
    sim = await startSim({
      size: 400,
      rateLimit: { perKey: { limit: 100, windowSeconds: 1, model: 'sliding' } },
      faults: { baseLatencyMs: 120 },
    });
    const t = makeClient(sim.url, sim.key);
    const ids = (await collect(t.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id);
    sim.counters.reset();
    const results = await collect(t.client.fetchRunDetails(ids));
    expect(results.filter((r) => r.ok)).toHaveLength(400);
    expect(sim.counters.count(undefined, 429)).toBe(0);
    expect(sim.counters.maxInAlignedWindow(1000, gets)).toBeLessThanOrEqual(100);
    // Each request is held 120 ms before it is answered, so a caller with eight in flight never
    // has more than eight arrive within 120 ms, however fast or slow the machine; at the pace of
    // some 97 a second, about eleven do.
    const arrived = sim.counters
      .log()
      .filter(gets)
      .map((r) => r.t)
      .sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; i < arrived.length; i++) {
      while ((arrived[i] as number) - (arrived[j] as number) >= 120) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeGreaterThanOrEqual(10);
    await t.client.close();
  });
});
