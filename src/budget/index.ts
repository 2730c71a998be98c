export { systemClock } from './clock.ts';
export { readRateHeaders, resetToMs, retryAfterMs } from './headers.ts';
export { measure } from './measure.ts';
export { MemoryBudgetStore } from './memory-store.ts';
export type { Slot, Wait } from './policy.ts';
export { initialBudgetState, learn, pacedRate, pauseUntil, takeSlot } from './policy.ts';
export { DEFAULT_RESERVE, type RateBudgetOptions, SharedRateBudget } from './rate.ts';
export { reserveCount, room } from './room.ts';
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
} from './types.ts';
export { budgetUse } from './use.ts';
export { bucketViews } from './views.ts';
