export { DEFAULT_RESERVE, initialBudgetState, keyPace, MARGIN } from './belief.ts';
export { systemClock } from './clock.ts';
export { header, readRateHeaders, resetToMs, retryAfterMs } from './headers.ts';
export { MemoryBudgetStore } from './memory-store.ts';
export { type RateBudgetOptions, SharedRateBudget } from './rate.ts';
export { learn, pauseUntil, takeTurn } from './turns.ts';
export type {
  Bucket,
  BucketView,
  BudgetClock,
  BudgetPolicy,
  BudgetSnapshot,
  BudgetState,
  BudgetStore,
  BudgetUse,
  Figure,
  Grant,
  HeaderMap,
  RateBudget,
  RateObservation,
} from './types.ts';
export { allowance, bucketViews, budgetUse, keyShare } from './views.ts';
