import type { BucketView, BudgetState } from './types.ts';

/** What the budget has learned, for status and /metrics. */
export function bucketViews(s: BudgetState): BucketView[] {
  return Object.values(s.buckets).map((b) => ({
    scope: b.endpoint ?? 'key',
    limit: b.limit,
    guess: b.guess,
    ratePerSecond: b.rate,
    measured: b.measured,
    windowSeconds: b.guess === 'window' && b.windowMs !== null ? b.windowMs / 1000 : null,
  }));
}

/** The key's bucket size as last reported. */
export function keyLimit(s: BudgetState): number | null {
  const shared = Object.values(s.buckets).filter((b) => b.endpoint === null);
  if (shared.length === 0) return null;
  return shared.reduce((a, b) => (b.seenAt > a.seenAt ? b : a)).limit;
}
