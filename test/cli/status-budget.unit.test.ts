import { describe, expect, it } from 'vitest';
import type { BucketView } from '../../src/budget/index.ts';
import { allowance, keyShare, rateBudgetLines } from '../../src/cli/commands/status-budget.ts';

// What `runsync status` says of the rate budget: per bucket, the rate learned, its burst and which
// limiter it was told to be.

describe('the status lines on the rate budget', () => {
  it('names each bucket, its rate, burst and limiter, and what the pass used', () => {
    const lines = rateBudgetLines({
      passId: 'p1',
      ratePerSecond: 47.5,
      usedShare: 0.42,
      buckets: [
        { scope: 'key', limit: 50, guess: 'sliding', ratePerSecond: 49.4, measured: true, windowSeconds: null },
        { scope: 'runs.get', limit: 20, guess: 'bucket', ratePerSecond: 20, measured: false, windowSeconds: null },
        { scope: 'runs.list', limit: 600, guess: 'window', ratePerSecond: 10, measured: true, windowSeconds: 60 },
      ],
    });
    expect(lines[0]).toBe(
      'rate budget   paced to 47.5 requests/s; pass p1 used 42% of what the key allowed over its length',
    );
    expect(lines[1]).toMatch(/^ {2}key +49\.4 requests\/s \(measured\), 50 at once; a sliding window/);
    expect(lines[2]).toMatch(/runs\.get +20\.0 requests\/s \(estimated\), 20 at once; refilled continuously/);
    expect(lines[3]).toMatch(/runs\.list +10\.0 requests\/s \(measured\), 600 at once per 60 s window; a fixed window/);
  });

  const key = (guess: BucketView['guess'], windowSeconds: number | null = null): BucketView => ({
    scope: 'key',
    limit: 50,
    guess,
    ratePerSecond: 50,
    measured: true,
    windowSeconds,
  });

  it("what the key allowed counts a full bucket's burst: a short pass at full speed is not over 100%", () => {
    // A backfill of 2 s sent a full bucket at once and then the rate: 150 requests, no 429.
    expect(150 / (2 * 50)).toBeGreaterThan(1);
    expect(keyShare([key('bucket')], 150, 2)).toBeCloseTo(1, 6);
    expect(keyShare([key('sliding')], 100, 2)).toBeCloseTo(100 / 150, 6);
    // A fixed window of 1 s lets 50 through in each window the span touches: 3 for 2 s.
    expect(allowance(key('window', 1), 2)).toBe(150);
    expect(allowance(key('unknown', 1), 2)).toBe(150);
    // The tightest of the key's buckets counts; an endpoint's own bucket does not.
    const org = { ...key('bucket'), limit: 10, ratePerSecond: 10 };
    const endpoint = { ...key('bucket'), scope: 'runs.get', limit: 1, ratePerSecond: 1 };
    expect(keyShare([key('bucket'), org, endpoint], 15, 1)).toBeCloseTo(15 / 20, 6);
    expect(keyShare([{ ...key('bucket'), ratePerSecond: null }], 15, 10)).toBeNull();
    expect(keyShare([key('bucket')], 15, 0.5)).toBeNull();
  });
});
