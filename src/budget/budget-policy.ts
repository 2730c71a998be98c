import type { BudgetPolicy, BudgetState, EndpointBucket, RateObservation } from './budget-types.ts';

// The budget's decisions as pure functions of the stored state, so any store can apply them
// atomically (in memory now; in Redis by a transaction that re-runs them on conflict).
//
// Two mechanisms work together:
// - pacing: requests start at least 1/rate apart, where rate is the smallest of the configured
//   ceiling and the learned limit per window, less the reserve. Even spacing keeps any fixed or
//   sliding window of the server under its limit whatever its phase, and needs no header at all
//   once the limit is known (the runs list is the only 200 that reports it);
// - a window counter: within a window whose end we know (observed, or projected one window
//   length on), no more than `remaining - reserve` requests start. It catches other users of the
//   key (their use lowers `remaining`) and a window length guessed too short.
// A 429 pauses everything until its Retry-After.
//
// X-RateLimit-Limit names the active bucket, the one with the least room, which may be the key's or
// an endpoint's own. A limit below the key's, reported on one endpoint, is taken for that endpoint's
// bucket: the endpoint is paced to it on its own, and the key's figures are left as they were, so
// the budget does not swing between the two every time the other endpoint answers.

/** Two resets closer than this are taken for the same window (reset has one-second resolution). */
const SAME_WINDOW_MS = 1000;

export function initialBudgetState(): BudgetState {
  return {
    limit: null,
    remaining: null,
    resetAtMs: null,
    windowMs: null,
    windowHintMs: null,
    grantedInWindow: 0,
    pausedUntilMs: 0,
    nextSlotMs: 0,
    endpoints: {},
  };
}

/** Requests of each window kept back for the key's other users; always leaves at least one. */
export function reserveCount(limit: number, reserve: number): number {
  return Math.min(Math.floor(limit * reserve), Math.max(0, limit - 1));
}

/** The window length to pace by: learned from successes if possible, else from 429s. */
export function windowLength(s: BudgetState): number | null {
  return s.windowMs ?? s.windowHintMs;
}

/** Requests per second to pace to, or null when nothing limits us yet. */
export function pacedRate(s: BudgetState, policy: BudgetPolicy): number | null {
  const window = windowLength(s);
  const rates: number[] = [];
  if (policy.ceilingPerSecond !== null) rates.push(policy.ceilingPerSecond);
  if (s.limit !== null && window !== null) rates.push((s.limit * 1000) / window);
  if (rates.length === 0) return null;
  return Math.min(...rates) * (1 - policy.reserve);
}

/** Moves a known window forward to the one containing `atMs`, with a fresh allowance. */
export function rollWindow(s: BudgetState, atMs: number): BudgetState {
  if (s.resetAtMs === null || atMs < s.resetAtMs) return s;
  const window = windowLength(s);
  if (window === null || s.limit === null) return { ...s, resetAtMs: null, remaining: null, grantedInWindow: 0 };
  const k = Math.floor((atMs - s.resetAtMs) / window) + 1;
  return { ...s, resetAtMs: s.resetAtMs + k * window, remaining: s.limit, grantedInWindow: 0 };
}

export interface Slot {
  /** When the request may start. */
  at: number;
  /** End of the window the start was counted in; a caller woken after it must ask again. */
  countedUntil: number | null;
}

/** Grants the next start time at or after `nowMs`; the caller waits until it. */
export function takeSlot(s: BudgetState, nowMs: number, policy: BudgetPolicy): { state: BudgetState; result: Slot } {
  let slot = Math.max(nowMs, s.nextSlotMs, s.pausedUntilMs);
  let st = rollWindow(s, slot);
  // At most two turns: after a roll the window has a fresh allowance of at least one request.
  for (let turn = 0; turn < 2; turn++) {
    if (st.limit === null || st.remaining === null || st.resetAtMs === null || slot >= st.resetAtMs) break;
    const allowed = st.remaining - reserveCount(st.limit, policy.reserve);
    if (st.grantedInWindow < allowed) break;
    slot = st.resetAtMs;
    st = rollWindow(st, slot);
  }
  const rate = pacedRate(st, policy);
  const interval = rate === null ? 0 : 1000 / rate;
  const countedUntil = st.resetAtMs !== null && st.remaining !== null && slot < st.resetAtMs ? st.resetAtMs : null;
  return {
    state: { ...st, grantedInWindow: st.grantedInWindow + 1, nextSlotMs: slot + interval },
    result: { at: slot, countedUntil },
  };
}

export interface EndpointSlot {
  /** When the request may start, by its endpoint's pacing. */
  at: number;
  /** The pause in force when the turn was taken; a later pause means taking another. */
  pausedUntilMs: number;
}

/**
 * When a request to an endpoint with a bucket of its own may start, by that bucket's pacing alone
 * (the key's budget is asked next); null for an endpoint without one.
 */
export function takeEndpointSlot(
  s: BudgetState,
  endpoint: string,
  nowMs: number,
  policy: BudgetPolicy,
): { state: BudgetState; result: EndpointSlot | null } {
  const own = s.endpoints[endpoint];
  if (own === undefined) return { state: s, result: null };
  const at = Math.max(nowMs, own.nextSlotMs, s.pausedUntilMs);
  const interval = own.windowMs / (own.limit * (1 - policy.reserve));
  return {
    state: { ...s, endpoints: { ...s.endpoints, [endpoint]: { ...own, nextSlotMs: at + interval } } },
    result: { at, pausedUntilMs: s.pausedUntilMs },
  };
}

/** Whether an observation on `endpoint` reports that endpoint's own bucket rather than the key's. */
function ownBucket(s: BudgetState, endpoint: string | undefined, limit: number | null): endpoint is string {
  if (endpoint === undefined || limit === null) return false;
  const own = s.endpoints[endpoint];
  return (own !== undefined && limit <= own.limit) || (s.limit !== null && limit < s.limit);
}

function learnEndpoint(s: BudgetState, endpoint: string, obs: RateObservation & { limit: number }): BudgetState {
  const own = s.endpoints[endpoint];
  const toReset = obs.resetAtMs === null ? 0 : obs.resetAtMs - obs.atMs;
  const seen = toReset > 0 ? Math.ceil(toReset / 1000) * 1000 : 1000;
  const bucket: EndpointBucket = {
    limit: obs.limit,
    windowMs: Math.max(own?.windowMs ?? 0, seen),
    nextSlotMs: own?.nextSlotMs ?? 0,
  };
  return { ...s, endpoints: { ...s.endpoints, [endpoint]: bucket } };
}

/**
 * Learns from one response's headers. `limited` is true for a 429, whose reset may be a penalty
 * rather than a window's end, so it only hints at the window length until a success tells better.
 * `endpoint` is the endpoint that answered, so a bucket of its own can be told from the key's.
 */
export function learn(s: BudgetState, obs: RateObservation, limited: boolean, endpoint?: string): BudgetState {
  if (ownBucket(s, endpoint, obs.limit)) return learnEndpoint(s, endpoint, obs as RateObservation & { limit: number });
  const newBucket = obs.limit !== null && s.limit !== null && obs.limit !== s.limit;
  const next: BudgetState = newBucket
    ? {
        ...s,
        limit: obs.limit,
        windowMs: null,
        windowHintMs: null,
        resetAtMs: null,
        remaining: null,
        grantedInWindow: 0,
      }
    : { ...s, limit: obs.limit ?? s.limit };

  if (obs.resetAtMs !== null) {
    const toReset = obs.resetAtMs - obs.atMs;
    if (toReset > 0) {
      const seconds = Math.ceil(toReset / 1000) * 1000;
      if (limited) next.windowHintMs = Math.max(next.windowHintMs ?? 0, seconds);
      else next.windowMs = Math.max(next.windowMs ?? 0, seconds);
    }
  }

  const remaining = obs.remaining;
  if (obs.resetAtMs === null) {
    if (remaining !== null && next.resetAtMs !== null) return lower(next, remaining);
    return next;
  }
  if (next.resetAtMs === null || obs.resetAtMs >= next.resetAtMs + SAME_WINDOW_MS) {
    // A window we had not seen: take the server's figures as they are.
    return { ...next, resetAtMs: obs.resetAtMs, remaining: remaining ?? next.limit, grantedInWindow: 0 };
  }
  if (obs.resetAtMs > next.resetAtMs - SAME_WINDOW_MS) {
    // The window we are in (perhaps projected): the server's end wins, and a lower remaining too.
    const same = { ...next, resetAtMs: obs.resetAtMs };
    return remaining === null ? same : lower(same, remaining);
  }
  return next; // from an earlier window: stale
}

/** Adopts the server's remaining when it is below what we count, e.g. because others use the key. */
function lower(s: BudgetState, remaining: number): BudgetState {
  const ours = s.remaining === null ? Infinity : s.remaining - s.grantedInWindow;
  return remaining < ours ? { ...s, remaining, grantedInWindow: 0 } : s;
}

export function pauseUntil(s: BudgetState, untilMs: number): BudgetState {
  return untilMs > s.pausedUntilMs ? { ...s, pausedUntilMs: untilMs } : s;
}
