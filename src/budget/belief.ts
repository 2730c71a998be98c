import type { Bucket, BudgetPolicy, BudgetState, Figure } from './types.ts';

// What the budget believes of each bucket and how a figure changes it (docs/rate-budget.md). Pure
// functions of the stored state, so any store can apply them atomically.

/** The pace keeps this share below what the figures prove. */
export const MARGIN = 0.03;
/** The share of the key's rate left to its other users by default (RUNSYNC_RATE_RESERVE). */
export const DEFAULT_RESERVE = 0.05;
/** An explained 429 multiplies the factor by this; it grows back by FACTOR_GROWTH a second. */
const CUT = 0.5;
const FACTOR_GROWTH = 0.1;
/** A bucket that ran out again within this long, others seen on it, leaves us at most this share of it. */
const RUN_OUT_AGAIN_MS = 60_000;
const LEFT_AFTER_RUN_OUT = 0.9;
/** Others' use is believed this long after its highest reading. */
const OTHERS_MEMORY_MS = 5 * 60_000;
/** Others never leave us less than this share of a bucket's sustained rate. */
const LEAST_SHARE = 0.05;
/** A bucket not heard from for this long no longer paces anyone. */
const FORGET_MS = 15 * 60_000;

export function initialBudgetState(): BudgetState {
  return {
    seq: 0,
    seqByEndpoint: {},
    buckets: {},
    pausedUntilMs: 0,
    nextAt: 0,
    heard: false,
    rechecking: false,
    coldOutAt: 0,
    listAsked: false,
    recheckSeq: 0,
    probeAtMs: 0,
    limited: 0,
    starts: [],
  };
}

export function bucketKey(endpoint: string | null, burst: number): string {
  return `${endpoint ?? 'key'}:${burst}`;
}

export function newBucket(burst: number, endpoint: string | null, now: number): Bucket {
  return {
    burst,
    endpoint,
    windowMs: 1000,
    others: 0,
    othersAt: now,
    factor: 1,
    factorAt: now,
    cutAt: 0,
    ranOutAt: 0,
    heldWindowMs: 0,
    last: null,
    pausedUntilMs: 0,
    nextAt: 0,
    seenAt: now,
    starts: [],
  };
}

/** Grants drawing on `b` so far. */
export function seqOf(s: BudgetState, b: Bucket): number {
  return b.endpoint === null ? s.seq : (s.seqByEndpoint[b.endpoint] ?? 0);
}

export function isLive(b: Bucket, now: number): boolean {
  return now - b.seenAt < FORGET_MS;
}

/** The buckets a request to `endpoint` draws on: every `key` bucket and the endpoint's own. */
export function drawnOn(s: BudgetState, endpoint: string, now: number): [string, Bucket][] {
  return Object.entries(s.buckets).filter(
    ([, b]) => (b.endpoint === null || b.endpoint === endpoint) && isLive(b, now),
  );
}

export function sustained(b: Bucket): number {
  return (b.burst * 1000) / b.windowMs;
}

export function othersNow(b: Bucket, now: number): number {
  return now - b.othersAt > OTHERS_MEMORY_MS ? 0 : b.others;
}

export function factorNow(b: Bucket, now: number): number {
  return Math.min(1, b.factor + (FACTOR_GROWTH * Math.max(0, now - b.factorAt)) / 1000);
}

/** (sustained − others) × (1 − margin) × (1 − reserve). */
export function target(b: Bucket, policy: BudgetPolicy, now: number): number {
  const left = Math.max(LEAST_SHARE * sustained(b), sustained(b) - othersNow(b, now));
  return left * (1 - MARGIN) * (1 - policy.reserve);
}

export function pace(b: Bucket, policy: BudgetPolicy, now: number): number {
  return target(b, policy, now) * factorNow(b, now);
}

/** The pace every request keeps: the tightest `key` bucket's, and the ceiling's; null: none. */
export function keyPace(s: BudgetState, policy: BudgetPolicy, now: number): number | null {
  const rates = Object.values(s.buckets)
    .filter((b) => b.endpoint === null && isLive(b, now))
    .map((b) => pace(b, policy, now));
  if (policy.ceilingPerSecond !== null) rates.push(policy.ceilingPerSecond * (1 - policy.reserve));
  return rates.length === 0 ? null : Math.min(...rates);
}

/** Remaining at or below this is near zero: the bucket is running out. */
export function nearZero(b: Bucket): number {
  return Math.max(1, Math.ceil(b.burst / 10));
}

type Starts = Bucket['starts'];

/** `starts` with a turn at `at` counted (`by` −1: one given up) in slots of `windowMs` / 10. */
export function countStart(starts: Starts, windowMs: number, at: number, by: 1 | -1, now: number): Starts {
  const width = windowMs / 10;
  const slot = Math.floor(at / width) * width;
  const kept = starts.filter(([t]) => t >= now - 2 * windowMs);
  const i = kept.findIndex(([t]) => t === slot);
  if (i < 0) return by < 0 ? kept : [...kept, [slot, 1] as const].sort((x, y) => x[0] - y[0]);
  return kept.map((e, j) => (j === i ? ([e[0], Math.max(0, e[1] + by)] as const) : e));
}

/** Counts a turn starting at `at` (`by` −1: one given up), in its slot; slots two windows old go. */
export function counted(b: Bucket, at: number, by: 1 | -1, now: number): Bucket {
  return { ...b, starts: countStart(b.starts, b.windowMs, at, by, now) };
}

/** Our turns starting from `from` to `to`, at most (whole slots counted). */
function oursBetween(b: Bucket, from: number, to: number): number {
  const width = b.windowMs / 10;
  return b.starts.filter(([t]) => t + width > from && t <= to).reduce((n, [, c]) => n + c, 0);
}

/** The longest whole seconds a figure's Reset lay ahead, as a window (never shorter than before). */
function windowOf(b: Bucket, fig: Figure): number {
  const span = fig.resetAtMs === null ? 0 : fig.resetAtMs - fig.at;
  return Math.max(b.windowMs, Math.floor(span / 1000) * 1000);
}

/**
 * A known bucket's own 429 that reports it empty: its `Reset` may lie further ahead than any page's
 * did (a bucket whose burst exceeds a second's rate is full again only a window after it emptied).
 * That window is held, not learned: a gateway shedding load may send a 429 that reads the same.
 */
export function holdWindow(b: Bucket, fig: Figure): Bucket {
  const windowMs = windowOf(b, fig);
  return windowMs > b.windowMs ? { ...b, heldWindowMs: windowMs } : b;
}

/**
 * The probe after the pause (a second at least, a believed window or more): a bucket not near full
 * again does not give its burst back as fast as believed, so the held window is learned; a bucket
 * full again drops it.
 */
export function settleWindow(b: Bucket, fig: Figure): Bucket {
  // A state stored before held windows existed has none.
  const held = b.heldWindowMs ?? 0;
  if (held <= b.windowMs) return held === 0 ? b : { ...b, heldWindowMs: 0 };
  if (fig.remaining > b.burst - nearZero(b)) return { ...b, heldWindowMs: 0 };
  return { ...b, windowMs: held, heldWindowMs: 0, cutAt: 0, ranOutAt: 0 };
}

/**
 * Others' use a figure shows, per second. The bucket gives its burst back over a window whatever
 * its limiter, so it holds at least burst − everything counted in the last window: others took at
 * least burst − Remaining − ours started in that window.
 */
export function othersShown(b: Bucket, fig: Figure, startedAt: number): number {
  const windowMs = windowOf(b, fig);
  const ours = oursBetween(b, startedAt - windowMs, startedAt);
  const reading = (Math.max(0, b.burst - fig.remaining - ours) * 1000) / windowMs;
  return Math.min(reading, (1 - LEAST_SHARE) * ((b.burst * 1000) / windowMs));
}

/**
 * Learns a figure whose request started at `startedAt`: a longer window, others' use, the newest
 * figure. A probe's figure, read just after a 429, is the moment a neighbour's burst most likely
 * drew on the bucket: it judges the 429 but does not raise others' use.
 */
export function learnFigure(b: Bucket, fig: Figure, startedAt: number, now: number, probe = false): Bucket {
  const windowMs = windowOf(b, fig);
  const others = othersShown(b, fig, startedAt);
  // Others read, and run-outs met, against a shorter window were its own refill misread.
  const longer = windowMs > b.windowMs;
  const raise = (!probe && others >= othersNow(b, now)) || longer;
  const newer = b.last === null || fig.seq >= b.last.seq;
  return {
    ...b,
    windowMs,
    ...(raise ? { others, othersAt: now } : {}),
    ...(longer ? { cutAt: 0, ranOutAt: 0 } : {}),
    last: newer ? fig : b.last,
    seenAt: now,
  };
}

/**
 * The bucket ran out again within a minute with others seen on it: less than what it ran out at is
 * left to us. Others are believed to take the rest.
 */
export function ranOut(b: Bucket, policy: BudgetPolicy, now: number): Bucket {
  const again = b.ranOutAt > 0 && now - b.ranOutAt < RUN_OUT_AGAIN_MS;
  const drawn = target(b, policy, now) / ((1 - MARGIN) * (1 - policy.reserve));
  const others = Math.min((1 - LEAST_SHARE) * sustained(b), sustained(b) - LEFT_AFTER_RUN_OUT * drawn);
  const raise = again && others > othersNow(b, now);
  return { ...b, ranOutAt: now, ...(raise ? { others, othersAt: now } : {}) };
}

/** An explained 429: the factor halves, once a window at most. */
export function cut(b: Bucket, now: number): Bucket {
  if (now - b.cutAt < b.windowMs) return b;
  return { ...b, factor: factorNow(b, now) * CUT, factorAt: now, cutAt: now };
}
