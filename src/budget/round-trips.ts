import type { BudgetState } from './types.ts';

// How long requests take from their turn to their response: the guard kept before a window's end
// follows the longest lately, and how much round trips vary (the longest less the shortest) is how
// far our start times may be off from the server's counts.

/** The guard before a window's end is at most this (see policy.ts). */
const MAX_GUARD_MS = 1_000;

/**
 * How much of the longest and shortest round trips lately each new one leaves standing, for how
 * much round trips vary: one round trip in a hundred taking the extreme keeps it about in view.
 */
const SPREAD_KEEP = 0.99;

/** Notes a round trip: its longest and shortest lately. */
export function tookMs(s: BudgetState, took: number): BudgetState {
  if (!(took >= 0)) return s;
  const low =
    s.latencyLowMs === undefined
      ? took
      : Math.max(0, Math.min(took, s.latencyLowMs * SPREAD_KEEP + took * (1 - SPREAD_KEEP)));
  const high =
    s.latencyHighMs === undefined ? took : Math.max(took, s.latencyHighMs * SPREAD_KEEP + took * (1 - SPREAD_KEEP));
  return {
    ...s,
    latencyMs: nextLatency(s.latencyMs, took),
    latencyLowMs: low,
    latencyHighMs: high,
    roundTrips: (s.roundTrips ?? 0) + 1,
  };
}

/** Follows a rise at once and a fall slowly: the guard before a window's end must cover most requests. */
export function nextLatency(old: number, sample: number): number {
  if (!(sample >= 0)) return old;
  return Math.min(MAX_GUARD_MS, Math.max(sample, old * 0.95 + sample * 0.05));
}
