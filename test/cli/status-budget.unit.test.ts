import { describe, expect, it } from 'vitest';
import type { BucketView } from '../../src/budget/index.ts';
import { allowance, keyShare, rateBudgetLines } from '../../src/cli/commands/status-budget.ts';

// What `runsync status` says of the rate budget, in the words of docs/rate-budget.md: per bucket,
// its sustained rate, burst and window, others' use, and the pace.

const bucket = (o: Partial<BucketView> = {}): BucketView => ({
  scope: 'key',
  burst: 50,
  windowSeconds: 1,
  sustainedPerSecond: 50,
  othersPerSecond: 0,
  pacePerSecond: 46.1,
  ...o,
});

describe('the status lines on the rate budget', () => {
  it('names each bucket, its sustained rate, burst, window, others and pace, and what the pass used', () => {
    const lines = rateBudgetLines({
      passId: 'p1',
      ratePerSecond: 46.1,
      usedShare: 0.42,
      buckets: [
        bucket({ othersPerSecond: 5, pacePerSecond: 41.3 }),
        bucket({ scope: 'runs.get', burst: 600, windowSeconds: 60, sustainedPerSecond: 10, pacePerSecond: 9.2 }),
      ],
    });
    expect(lines[0]).toBe(
      'rate budget   paced to 46.1 requests/s; pass p1 used 42% of what the key allowed over its length',
    );
    expect(lines[1]).toMatch(
      /^ {2}key +sustained 50\.0 requests\/s \(burst 50 per 1 s window\), others 5\.0\/s; paced to 41\.3\/s$/,
    );
    expect(lines[2]).toMatch(/runs\.get +sustained 10\.0 requests\/s \(burst 600 per 60 s window\); paced to 9\.2\/s$/);
  });

  it("what the key allowed counts a full bucket's burst: a short pass at full speed is not over 100%", () => {
    // A backfill of 2 s sent a full bucket at once and then the rate: 150 requests, no 429.
    expect(150 / (2 * 50)).toBeGreaterThan(1);
    expect(keyShare([bucket()], 150, 2)).toBeCloseTo(1, 6);
    // Others' use is not ours to count on.
    expect(allowance(bucket({ othersPerSecond: 10 }), 2)).toBe(130);
    // The tightest of the key's buckets counts; an endpoint's own bucket does not.
    const org = bucket({ burst: 10, sustainedPerSecond: 10 });
    const endpoint = bucket({ scope: 'runs.get', burst: 1, sustainedPerSecond: 1 });
    expect(keyShare([bucket(), org, endpoint], 15, 1)).toBeCloseTo(15 / 20, 6);
    expect(keyShare([endpoint], 15, 10)).toBeNull();
    expect(keyShare([bucket()], 15, 0.5)).toBeNull();
  });
});
