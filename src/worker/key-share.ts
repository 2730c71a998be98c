import type { BucketView } from '../budget/index.ts';

// How much of what the key allowed an operation used, for status and /metrics. The budget's own
// figure divides by the key's rate alone, which a short operation at full speed exceeds with no
// 429: a full bucket lets its size through at once before its rate applies.

/**
 * The most requests a bucket lets through over `seconds` without a 429. A full bucket lets its
 * size through at once, then its rate: an operation of a few seconds may send far more than its
 * rate times its length, and a share of the rate alone reads over 100 % with no 429. A fixed
 * window lets a whole window's worth through in each window the span touches.
 */
export function allowance(b: BucketView, seconds: number): number | null {
  if (b.ratePerSecond === null) return null;
  const refilled = b.limit + b.ratePerSecond * seconds;
  const windows = b.windowSeconds ? b.limit * (Math.ceil(seconds / b.windowSeconds) + 1) : 0;
  if (b.guess === 'window' && windows) return windows;
  return b.guess === 'unknown' ? Math.max(refilled, windows) : refilled;
}

/** The share of what the key's tightest bucket allowed over the span that `requests` used; null: not known. */
export function keyShare(buckets: readonly BucketView[], requests: number, seconds: number): number | null {
  const allowed = buckets
    .filter((b) => b.scope === 'key')
    .map((b) => allowance(b, seconds))
    .filter((a): a is number => a !== null && a > 0);
  if (allowed.length === 0 || seconds < 1) return null;
  return requests / Math.min(...allowed);
}
