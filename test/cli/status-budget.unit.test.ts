import { describe, expect, it } from 'vitest';
import { rateBudgetLines } from '../../src/cli/commands/status-budget.ts';

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
    expect(lines[0]).toBe("rate budget   paced to 47.5 requests/s; pass p1 used 42% of the key's rate");
    expect(lines[1]).toMatch(/^ {2}key +49\.4 requests\/s \(measured\), 50 at once; a sliding window/);
    expect(lines[2]).toMatch(/runs\.get +20\.0 requests\/s \(estimated\), 20 at once; refilled continuously/);
    expect(lines[3]).toMatch(/runs\.list +10\.0 requests\/s \(measured\), 600 at once per 60 s window; a fixed window/);
  });
});
