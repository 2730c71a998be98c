import { isLive, keyPace, othersNow, pace, sustained } from './belief.ts';
import type { BucketView, BudgetPolicy, BudgetSnapshot, BudgetState, BudgetUse } from './types.ts';

// What the budget believes, in the words of docs/rate-budget.md, for status and /metrics.

export function bucketViews(s: BudgetState, policy: BudgetPolicy, now: number): BucketView[] {
  return Object.values(s.buckets)
    .filter((b) => isLive(b, now))
    .map((b) => ({
      scope: b.endpoint ?? 'key',
      burst: b.burst,
      windowSeconds: b.windowMs / 1000,
      sustainedPerSecond: sustained(b),
      othersPerSecond: othersNow(b, now),
      pacePerSecond: Math.min(pace(b, policy, now), keyPace(s, policy, now) ?? Number.POSITIVE_INFINITY),
    }));
}

/** The burst of the `key` bucket last heard from. */
export function keyBurst(s: BudgetState): number | null {
  const keys = Object.values(s.buckets).filter((b) => b.endpoint === null);
  if (keys.length === 0) return null;
  return keys.reduce((a, b) => (b.seenAt > a.seenAt ? b : a)).burst;
}

/**
 * The most requests a bucket let us send over `seconds` without a 429: its burst at once, then
 * what others left of its sustained rate.
 */
export function allowance(b: BucketView, seconds: number): number {
  return b.burst + Math.max(0, b.sustainedPerSecond - b.othersPerSecond) * seconds;
}

/** The share of what the tightest `key` bucket allowed over `seconds` that `requests` used; null: not known. */
export function keyShare(buckets: readonly BucketView[], requests: number, seconds: number): number | null {
  const allowed = buckets.filter((b) => b.scope === 'key').map((b) => allowance(b, seconds));
  if (allowed.length === 0 || seconds < 1) return null;
  return requests / Math.min(...allowed);
}

/** What the budget believed when an operation of `requests` over `durationMs` ended. */
export function budgetUse(snapshot: BudgetSnapshot, requests: number, durationMs: number): BudgetUse {
  return {
    buckets: snapshot.buckets,
    ratePerSecond: snapshot.ratePerSecond,
    usedShare: keyShare(snapshot.buckets, requests, durationMs / 1000),
  };
}
