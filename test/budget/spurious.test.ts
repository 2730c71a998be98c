import { describe, expect, it } from 'vitest';
import { type Gateway, runSync } from './limiter-harness.ts';

// A gateway in front of the key's limiter refuses 3% of requests with a 429 of its own (a
// Retry-After of 1 or 2 s, unrelated to the key's rate) and fails 5% with a 500. Each such 429
// costs its Retry-After, not a lower rate: the wall stays within 1.3x of what the rate allows plus
// the waits served, whether the gateway's 429 reads the bucket as empty or carries no figures.

const RUNS = 1500;
const BOUND = 1.3;

const gateway = (figures: Gateway['figures']): Gateway => ({
  spurious: 0.03,
  retryAfterSeconds: [1, 2],
  errors: 0.05,
  figures,
});

describe.each(['zero', 'none'] as const)("a gateway's own 429s (figures: %s) and 500s", (figures) => {
  it.each([
    [20, 1],
    [50, 1],
    [50, 3],
    [200, 3],
  ])('at %i/s from %i worker(s): the wall within 1.3x of the rate plus the waits served', async (rate, workers) => {
    const r = await runSync({
      limits: { model: 'bucket-full-at', perKey: { limit: rate, windowSeconds: 1 } },
      runs: RUNS,
      workers,
      jitterMs: 10,
      gateway: gateway(figures),
    });
    expect(r.spurious).toBeGreaterThan(RUNS * 0.02);
    expect(r.wallMs).toBeLessThanOrEqual(BOUND * ((r.requests / rate) * 1000 + r.waitedMs));
    // The rate believed is the key's, not lowered by refusals that were not its bucket's.
    const key = (await r.budget.snapshot()).buckets.find((b) => b.scope === 'key');
    expect(key?.sustainedPerSecond).toBe(rate);
    expect(key?.othersPerSecond).toBeLessThan(rate * 0.05);
  });
});
