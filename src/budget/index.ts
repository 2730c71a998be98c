export { systemClock } from './budget-clock.ts';
export { readRateHeaders, resetToMs, retryAfterMs } from './budget-headers.ts';
export { measure } from './budget-learn.ts';
export { MemoryBudgetStore } from './budget-memory-store.ts';
export type { Slot, Wait } from './budget-policy.ts';
export {
  bucketViews,
  initialBudgetState,
  learn,
  pacedRate,
  pauseUntil,
  reserveCount,
  room,
  takeSlot,
} from './budget-policy.ts';
export { DEFAULT_RESERVE, type RateBudgetOptions, SharedRateBudget } from './budget-rate.ts';
export type {
  BucketEstimate,
  BucketView,
  BudgetClock,
  BudgetPolicy,
  BudgetSnapshot,
  BudgetState,
  BudgetStore,
  BudgetUse,
  Grant,
  HeaderMap,
  LimiterGuess,
  RateBudget,
  RateObservation,
  Sample,
} from './budget-types.ts';
export { budgetUse } from './budget-use.ts';
