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
export { SharedRateBudget, DEFAULT_RESERVE, type RateBudgetOptions } from './budget-rate.ts';
export { MemoryBudgetStore } from './budget-memory-store.ts';
export { systemClock } from './budget-clock.ts';
export { readRateHeaders, retryAfterMs, resetToMs } from './budget-headers.ts';
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
