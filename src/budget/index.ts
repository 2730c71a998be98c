export { systemClock } from './budget-clock.ts';
export { readRateHeaders, resetToMs, retryAfterMs } from './budget-headers.ts';
export { MemoryBudgetStore } from './budget-memory-store.ts';
export type { EndpointSlot, Slot } from './budget-policy.ts';
export {
  initialBudgetState,
  learn,
  pacedRate,
  pauseUntil,
  reserveCount,
  rollWindow,
  takeEndpointSlot,
  takeSlot,
} from './budget-policy.ts';
export { DEFAULT_RESERVE, type RateBudgetOptions, SharedRateBudget } from './budget-rate.ts';
export type {
  BudgetClock,
  BudgetPolicy,
  BudgetSnapshot,
  BudgetState,
  BudgetStore,
  EndpointBucket,
  HeaderMap,
  RateBudget,
  RateObservation,
} from './budget-types.ts';
