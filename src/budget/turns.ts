import {
  bucketKey,
  counted,
  countStart,
  cut,
  drawnOn,
  holdWindow,
  isLive,
  keyPace,
  learnFigure,
  MARGIN,
  nearZero,
  newBucket,
  othersShown,
  pace,
  ranOut,
  settleWindow,
} from './belief.ts';
import type { Bucket, BudgetPolicy, BudgetState, Figure, RateObservation } from './types.ts';

// Turns and answers as pure steps over the stored state (docs/rate-budget.md): when a request may
// start, and what each response changes.

/** While waiting for a figure, the one request out holds the others this long at most. */
const COLD_WAIT_MS = 2_000;
/** Key-wide figures older than this, while requests flow, ask for a probe. */
const PROBE_EVERY_MS = 10_000;
/** The state's own `starts` are counted as a bucket of this window counts them: 100 ms slots. */
const FLEET_WINDOW_MS = 1000;

/**
 * How far behind its schedule the pace may catch up, as a share of the shortest window: a turn
 * taken late (every caller busy, a slow event loop) starts the next from where the schedule was,
 * not from the late start. Starts in any window stay below the pace's by half the margin.
 */
const CATCH_UP = MARGIN / 2;

export interface Slot {
  at: number;
  seq: number;
  endpointSeq: number;
  probe: boolean;
  paced: number | null;
}

/** Nothing granted yet: ask again at `wait`. */
export interface Wait {
  wait: number;
}

/** A grant's numbers, as the answer to it brings them back. */
export interface Turn {
  seq: number;
  endpointSeq: number;
  at?: number;
}

function figuresOld(s: BudgetState, now: number): boolean {
  const keys = Object.values(s.buckets).filter((b) => b.endpoint === null && isLive(b, now));
  if (keys.length === 0) return false;
  const newest = Math.max(...keys.map((b) => b.seenAt));
  return now - newest >= PROBE_EVERY_MS && now - s.probeAtMs >= PROBE_EVERY_MS;
}

/**
 * Waiting for a figure (cold, or after a 429): one request goes and the others wait for its answer;
 * a runs-list page may go beside it, as the probe, since only its answer carries one.
 */
function waitForFigure(s: BudgetState, endpoint: string, now: number): Wait | null {
  if (s.heard || s.coldOutAt === 0 || now >= s.coldOutAt + COLD_WAIT_MS || endpoint === 'runs.list') return null;
  return { wait: Math.min(s.coldOutAt + COLD_WAIT_MS, now + 50) };
}

/** The next start for a request to `endpoint` at or after `now`; the caller waits until it. */
export function takeTurn(
  s: BudgetState,
  endpoint: string,
  now: number,
  policy: BudgetPolicy,
): { state: BudgetState; result: Slot | Wait } {
  const wait = waitForFigure(s, endpoint, now);
  if (wait !== null) return { state: s, result: wait };
  const waiting = !s.heard && (s.coldOutAt === 0 || now < s.coldOutAt + COLD_WAIT_MS);
  // A turn that finds a probe due is the probe's: its caller sends a runs-list page on it first.
  const probe = endpoint !== 'runs.list' && (waiting ? s.rechecking && !s.listAsked : figuresOld(s, now));
  const ep = probe ? 'runs.list' : endpoint;
  const mine = drawnOn(s, ep, now);
  let at = Math.max(now, s.pausedUntilMs, s.nextAt);
  for (const [, b] of mine) at = Math.max(at, b.pausedUntilMs, b.endpoint === null ? 0 : b.nextAt);
  const seq = s.seq + 1;
  const endpointSeq = (s.seqByEndpoint[ep] ?? 0) + 1;
  const buckets = { ...s.buckets };
  for (const [key, b] of mine) {
    const next = b.endpoint === null ? b.nextAt : at + 1000 / pace(b, policy, at);
    buckets[key] = { ...counted(b, at, 1, now), nextAt: next };
  }
  const paced = keyPace(s, policy, at);
  const from = Math.max(at - catchUpMs(mine), s.nextAt, s.pausedUntilMs);
  return {
    state: {
      ...s,
      seq,
      seqByEndpoint: { ...s.seqByEndpoint, [ep]: endpointSeq },
      buckets,
      starts: countStart(s.starts ?? [], FLEET_WINDOW_MS, at, 1, now),
      nextAt: paced === null ? s.nextAt : from + 1000 / paced,
      probeAtMs: ep === 'runs.list' ? now : s.probeAtMs,
      // Waiting, and the wait over: the budget goes on without a figure.
      heard: s.heard || !waiting,
      coldOutAt: waiting && s.coldOutAt === 0 ? at : s.coldOutAt,
      listAsked: s.listAsked || (waiting && ep === 'runs.list'),
    },
    result: { at, seq, endpointSeq, probe, paced },
  };
}

/** The catch-up a turn's key buckets allow: CATCH_UP of the shortest window. */
function catchUpMs(mine: [string, Bucket][]): number {
  const windows = mine.filter(([, b]) => b.endpoint === null).map(([, b]) => b.windowMs);
  return windows.length === 0 ? 0 : CATCH_UP * Math.min(...windows);
}

/** The bucket a figure of `endpoint` belongs to, and whether its Limit is new to us. */
function placeFigure(s: BudgetState, endpoint: string, burst: number, refused: boolean): [string, boolean] {
  for (const key of [bucketKey(null, burst), bucketKey(endpoint, burst)]) if (s.buckets[key]) return [key, false];
  // A Limit first heard on a 429 is the endpoint's own; on a page, one every request draws on.
  return [bucketKey(refused ? endpoint : null, burst), true];
}

/**
 * The figure after a 429's pause judges it. A longer window the 429 showed, confirmed: the window
 * was misread, and that explains it. Still near zero: the bucket ran out at our pace, and the
 * factor halves. Others seen on it: the bucket is shared. Neither: the 429 was not the bucket's.
 */
function judged(b0: Bucket, fig: Figure, others: number, policy: BudgetPolicy, now: number): Bucket {
  const b = settleWindow(b0, fig);
  if (b.windowMs > b0.windowMs) return b;
  if (fig.remaining <= nearZero(b)) return cut(b, now);
  return others > 0 ? ranOut(b, policy, now) : b;
}

/** A 429 of every request's bucket, or one without figures: wait for a figure after the pause. */
function recheck(s: BudgetState): BudgetState {
  return {
    ...s,
    // Turns handed out before it wait again; the first after the pause is the probe's.
    recheckSeq: s.seq,
    nextAt: 0,
    heard: false,
    rechecking: true,
    coldOutAt: 0,
    listAsked: false,
  };
}

/** What a response without figures changes. */
function learnNothing(s: BudgetState, endpoint: string, status: number, turn: Turn | undefined): BudgetState {
  if (status === 429) return recheck(s);
  // The one request out while waiting for a figure failed: the next turn goes out in its place.
  if ((status === 0 || status >= 500) && !s.heard && s.coldOutAt > 0 && turn?.at === s.coldOutAt)
    return { ...s, coldOutAt: 0, listAsked: false };
  // A runs-list page without figures: the server reports none. Other answers never carry any.
  return endpoint === 'runs.list' && status < 400 ? { ...s, heard: true } : s;
}

/**
 * A bucket first heard of: a `key` bucket counts every turn of ours that went before (several may
 * have gone before the first figure came back), an endpoint's own the request that told it.
 */
function firstHeard(s: BudgetState, key: string, burst: number, endpoint: string, startedAt: number, now: number) {
  if (!key.startsWith('key:')) return counted(newBucket(burst, endpoint, now), startedAt, 1, now);
  const b = newBucket(burst, null, now);
  const starts = (s.starts ?? []).filter(([t]) => t >= now - 2 * b.windowMs);
  return starts.length > 0 ? { ...b, starts } : counted(b, startedAt, 1, now);
}

/** Learns from one response: `status`, its figure (null: none), and the turn it answered. */
export function learn(
  s0: BudgetState,
  endpoint: string,
  status: number,
  obs: RateObservation | null,
  turn: Turn | undefined,
  now: number,
  policy: BudgetPolicy,
): BudgetState {
  const refused = status === 429;
  const s = refused ? { ...s0, limited: s0.limited + 1 } : s0;
  if (obs === null || obs.limit === null) return learnNothing(s, endpoint, status, turn);
  const [key, fresh] = placeFigure(s, endpoint, obs.limit, refused);
  const startedAt = turn?.at ?? now;
  const b0 = s.buckets[key] ?? firstHeard(s, key, obs.limit, endpoint, startedAt, now);
  const fig: Figure = {
    at: obs.atMs,
    remaining: refused ? 0 : (obs.remaining ?? b0.burst),
    resetAtMs: obs.resetAtMs,
    seq: turn === undefined ? s.seq : b0.endpoint === null ? turn.seq : turn.endpointSeq,
  };
  if (refused) {
    // An endpoint's own limit is told by its 429s alone: a new one is learned, a known one ran out.
    if (b0.endpoint !== null) {
      const b = fresh || b0.last === null ? learnFigure(b0, fig, startedAt, now) : cut(b0, now);
      return { ...s, buckets: { ...s.buckets, [key]: b } };
    }
    // A 429's own figures may be a gateway's, not the bucket's: the figure after the pause tells.
    // A known bucket reported empty holds the window its Reset shows, for that figure to settle.
    const empty = !fresh && obs.remaining !== null && obs.remaining <= nearZero(b0);
    return recheck(empty ? { ...s, buckets: { ...s.buckets, [key]: holdWindow(b0, fig) } } : s);
  }
  const probe = s.rechecking && !s.heard;
  const learned = learnFigure(b0, fig, startedAt, now, probe);
  const b = probe ? judged(learned, fig, othersShown(b0, fig, startedAt), policy, now) : learned;
  const next: BudgetState = {
    ...s,
    heard: true,
    rechecking: false,
    coldOutAt: 0,
    listAsked: false,
    buckets: { ...s.buckets, [key]: b },
  };
  return s.buckets[key] === undefined && b.endpoint === null ? pacedFromFirst(next, b, policy, now) : next;
}

/**
 * A `key` bucket first heard of: the turns that went before its figure are paced as if it had
 * been known, so the next starts no earlier than the end of the first one's slot (the fleet's, a
 * tenth of a second) plus their number
 * at the pace (a sliding log counts every one of them in the window the pace begins in).
 */
function pacedFromFirst(s: BudgetState, b: Bucket, policy: BudgetPolicy, now: number): BudgetState {
  const paced = keyPace(s, policy, now);
  const first = b.starts[0];
  if (paced === null || first === undefined) return s;
  const n = b.starts.reduce((sum, [, c]) => sum + c, 0);
  // The starts were counted in the fleet's slots, before the bucket's window was known.
  return { ...s, nextAt: Math.max(s.nextAt, first[0] + FLEET_WINDOW_MS / 10 + (n * 1000) / paced) };
}

/**
 * Whether a turn granted, on waking, must ask again: a 429 came since it was granted (the turns
 * after it are paced afresh from the probe's figure), or a pause holds it.
 */
export function stale(s: BudgetState, endpoint: string, seq: number, now: number): boolean {
  if (seq <= s.recheckSeq) return true;
  let until = s.pausedUntilMs;
  for (const b of Object.values(s.buckets)) if (b.endpoint === endpoint) until = Math.max(until, b.pausedUntilMs);
  return until > now;
}

/** A turn given up before it was sent: it took nothing from any bucket. */
export function givenUp(s: BudgetState, endpoint: string, turn: Turn, now: number): BudgetState {
  const buckets = { ...s.buckets };
  for (const [key, b] of drawnOn(s, endpoint, now)) buckets[key] = counted(b, turn.at ?? now, -1, now);
  return { ...s, buckets, starts: countStart(s.starts ?? [], FLEET_WINDOW_MS, turn.at ?? now, -1, now) };
}

/**
 * Holds the callers of the bucket a 429 of `endpoint` with `limit` came from until `untilMs`: its
 * own callers for an endpoint's own bucket (one first heard of now included), else every caller.
 * While no bucket every request draws on is known, a 429 may be the key's own: every caller waits.
 */
export function pauseUntil(
  s: BudgetState,
  untilMs: number,
  endpoint?: string,
  limit: number | null = null,
  now = untilMs,
): BudgetState {
  const key = endpoint === undefined || limit === null ? undefined : placeFigure(s, endpoint, limit, true)[0];
  const holdAll = (t: BudgetState) => (untilMs > t.pausedUntilMs ? { ...t, pausedUntilMs: untilMs } : t);
  if (key === undefined || endpoint === undefined || key.startsWith('key:')) return holdAll(s);
  const b = s.buckets[key] ?? counted(newBucket(limit as number, endpoint, now), now, 1, now);
  const held = { ...s, buckets: { ...s.buckets, [key]: { ...b, pausedUntilMs: Math.max(b.pausedUntilMs, untilMs) } } };
  return Object.values(s.buckets).some((k) => k.endpoint === null) ? held : holdAll(held);
}
