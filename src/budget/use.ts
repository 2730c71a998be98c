import type { BudgetSnapshot, BudgetUse } from './types.ts';

/**
 * How much of the key's learned rate `requests` made over `durationMs` used. The key's rate is the
 * tightest bucket every request draws on; null until one is learned, or for too short a span.
 */
export function budgetUse(snapshot: BudgetSnapshot, requests: number, durationMs: number): BudgetUse {
  const shared = snapshot.buckets.filter((b) => b.scope === 'key' && b.ratePerSecond !== null);
  const keyRate = shared.length ? Math.min(...shared.map((b) => b.ratePerSecond as number)) : null;
  const usedShare = keyRate !== null && durationMs >= 1000 ? requests / ((durationMs / 1000) * keyRate) : null;
  return { buckets: snapshot.buckets, ratePerSecond: snapshot.ratePerSecond, usedShare };
}
