import { bucketKey, learnBucket, newBucket, placeFigure } from './learn.ts';
import { readNeighbour } from './neighbour.ts';
import {
  AGREE,
  bucketRoom,
  creditRate,
  logReading,
  neighbourOf,
  oursInWindow,
  rolled,
  room,
  roomAt,
  sentSince,
  seqOf,
  unsentOf,
} from './room.ts';
import { tookMs } from './round-trips.ts';
import {
  fittedSpan,
  heldAtMost,
  lagOf,
  logAnswered,
  logDrop,
  logLate,
  logSpanMs,
  logStart,
  oursAt,
  oursInFigure,
  quickest,
  slackMs,
  startedAlongside,
} from './sent-log.ts';
import type { BucketEstimate, BudgetPolicy, BudgetState, RateObservation } from './types.ts';

// The budget's decisions as pure functions of the stored state, so any store can apply them
// atomically (in memory, or in Redis by a transaction that re-runs them on conflict).
//
// A request may start when every bucket it draws on has room for it beyond the reserve. Room is the
// server's last figure less the requests granted since that figure's request, plus what came back
// since: for a window, the whole limit once Reset has passed; for a bucket, the learned rate times
// the time elapsed. So the first requests spend whatever the server says is left (a bucket's burst,
// the rest of a window) and then the rate paces them. RUNSYNC_RATE_LIMIT paces on top, evenly.
// A 429 holds the bucket's callers until Retry-After: every caller for a bucket everyone draws on,
// the one endpoint's callers for a bucket of its own.

/** Buckets not heard from for this long no longer hold anyone back. */
const FORGET_MS = 15 * 60_000;
/** Probes keep figures at most this old while requests flow, between these bounds. */
const PROBE_MIN_MS = 1_000;
const PROBE_MAX_MS = 10_000;
const PROBE_REQUESTS = 40;
/** How long requests wait for a first figure before going ahead without one. */
const FIRST_FIGURE_WAIT_MS = 2_000;

export function initialBudgetState(): BudgetState {
  return {
    seq: 0,
    seqByEndpoint: {},
    buckets: {},
    pausedUntilMs: 0,
    nextSlotMs: 0,
    probeAtMs: 0,
    firstGrantMs: 0,
    heard: false,
    latencyMs: 0,
    limited: 0,
    unsent: 0,
    unsentByEndpoint: {},
    unsentSeqs: [],
    unsentEndpointSeqs: {},
    refusedBy: {},
  };
}

function live(s: BudgetState, nowMs: number): BucketEstimate[] {
  return Object.values(s.buckets).filter((b) => nowMs - b.seenAt < FORGET_MS);
}

/** The buckets a request to `endpoint` draws on. */
function drawnOn(s: BudgetState, endpoint: string, nowMs: number): [string, BucketEstimate][] {
  return Object.entries(s.buckets).filter(
    ([, b]) => (b.endpoint === null || b.endpoint === endpoint) && nowMs - b.seenAt < FORGET_MS,
  );
}

/** Turns remembered as not sent; older ones answer figures long replaced. */
const UNSENT_KEPT = 256;

/**
 * Counts a grant that took nothing from the buckets: refused, or given up before it was sent.
 * `turn` is its number; absent, the newest grant's.
 */
export function unsent(
  s: BudgetState,
  endpoint: string,
  turn?: { seq: number; endpointSeq: number; at?: number },
): BudgetState {
  const seq = turn?.seq ?? s.seq;
  const endpointSeq = turn?.endpointSeq ?? s.seqByEndpoint[endpoint] ?? 0;
  const buckets = { ...s.buckets };
  // A start that was never counted leaves our log, so it does not hold the next ones back.
  if (turn?.at !== undefined) {
    for (const [key, b] of Object.entries(s.buckets)) {
      if (b.endpoint === null || b.endpoint === endpoint) buckets[key] = { ...b, sent: logDrop(b.sent, turn.at) };
    }
  }
  return {
    ...s,
    buckets,
    unsent: s.unsent + 1,
    unsentByEndpoint: { ...s.unsentByEndpoint, [endpoint]: (s.unsentByEndpoint[endpoint] ?? 0) + 1 },
    unsentSeqs: [...(s.unsentSeqs ?? []), seq].slice(-UNSENT_KEPT),
    unsentEndpointSeqs: {
      ...s.unsentEndpointSeqs,
      [endpoint]: [...(s.unsentEndpointSeqs?.[endpoint] ?? []), endpointSeq].slice(-UNSENT_KEPT),
    },
    // The runs-list page asked for the first figure did not go: the next one may.
    ...(endpoint === 'runs.list' && !s.heard ? { listAsked: false } : {}),
  };
}

/** Requests per second currently paced to, or null when nothing limits us yet. */
export function pacedRate(s: BudgetState, policy: BudgetPolicy, nowMs = Number.POSITIVE_INFINITY): number | null {
  const rates: number[] = [];
  if (policy.ceilingPerSecond !== null) rates.push(policy.ceilingPerSecond);
  for (const b of Object.values(s.buckets)) {
    if (b.endpoint === null && b.rate !== null && (nowMs === Number.POSITIVE_INFINITY || nowMs - b.seenAt < FORGET_MS))
      rates.push(b.rate);
  }
  if (rates.length === 0) return null;
  return Math.min(...rates) * (1 - policy.reserve);
}

export interface Slot {
  /** When the request may start. */
  at: number;
  seq: number;
  endpointSeq: number;
  /** Whether the caller should send a probe alongside: the figures are getting old. */
  probe: boolean;
  /** The rate paced to when the turn was granted: a turn granted at a higher pace is checked again. */
  paced?: number | null;
  /**
   * The shortest window the turn was placed in by projection (past the newest figure's Reset, at a
   * length guessed, not yet learned): a longer one learned since has it checked again.
   */
  projectedMs?: number;
}

/** Nothing granted: ask again at `wait`. */
export interface Wait {
  wait: number;
}

/**
 * Until a runs-list page has told the limits (or shown it will not), one request goes out alone,
 * for up to a couple of seconds: a small bucket must not be overrun by a first volley. A first
 * request whose answer cannot tell them (a catalog list's) lets one runs-list page go beside it,
 * or every other request would wait the whole couple of seconds.
 */
function awaitingFirstFigure(s: BudgetState, endpoint: string, nowMs: number): boolean {
  if (!(s.seq > 0 && !s.heard && nowMs < s.firstGrantMs + FIRST_FIGURE_WAIT_MS)) return false;
  return endpoint !== 'runs.list' || s.listAsked === true;
}

/** Grants the next start time at or after `nowMs` to a request to `endpoint`; the caller waits until it. */
export function takeSlot(
  s: BudgetState,
  endpoint: string,
  nowMs: number,
  policy: BudgetPolicy,
): { state: BudgetState; result: Slot | Wait } {
  if (awaitingFirstFigure(s, endpoint, nowMs)) {
    return { state: s, result: { wait: Math.min(s.firstGrantMs + FIRST_FIGURE_WAIT_MS, nowMs + 50) } };
  }
  let at = Math.max(nowMs, s.nextSlotMs, s.pausedUntilMs);
  const buckets = { ...s.buckets };
  const mine = drawnOn(s, endpoint, nowMs);
  // A few turns: waiting for one bucket can roll another into a new window.
  for (let turn = 0; turn < 4; turn++) {
    let moved = false;
    for (const [key, b0] of mine) {
      const cur = buckets[key] as BucketEstimate;
      // Rolled at the bucket's own floor, never before it: a window already projected for a later
      // grant must not be projected afresh, with its grants forgotten, by a caller asking earlier.
      const from = Math.max(at, cur.pausedUntilMs, cur.floorMs);
      const b = rolled(cur, from, seqOf(s, b0), unsentOf(s, b0));
      buckets[key] = b;
      const next = Math.max(from, roomAt(s, b, from, policy));
      if (next > at) {
        at = next;
        moved = true;
      }
    }
    if (!moved) break;
  }
  let projectedMs: number | undefined;
  for (const [key] of mine) {
    const b = buckets[key] as BucketEstimate;
    if (b.next !== null && at >= b.next.at && b.next.resetAtMs !== null)
      projectedMs = Math.min(projectedMs ?? Number.POSITIVE_INFINITY, b.next.resetAtMs - b.next.at);
    const level = b.level === null ? null : bucketRoom(s, b, at, policy) - 1;
    const sent = logStart(b.sent, at, logSpanMs(b, b.rate), nowMs);
    buckets[key] = { ...b, floorMs: at, level, levelAt: Math.max(at, b.levelAt), sent };
  }
  // Starts before any bucket is known are kept, to be the log of the first buckets learned.
  const firstSent =
    mine.length === 0 && Object.keys(s.buckets).length === 0 ? logStart(s.firstSent, at, null, nowMs) : undefined;
  const interval = policy.ceilingPerSecond === null ? 0 : 1000 / (policy.ceilingPerSecond * (1 - policy.reserve));
  const seq = s.seq + 1;
  const endpointSeq = (s.seqByEndpoint[endpoint] ?? 0) + 1;
  const probe = endpoint !== 'runs.list' && probeDue(s, nowMs);
  return {
    state: {
      ...s,
      firstGrantMs: s.seq === 0 ? nowMs : s.firstGrantMs,
      ...(endpoint === 'runs.list' && s.listAsked !== true ? { listAsked: true } : {}),
      buckets,
      seq,
      seqByEndpoint: { ...s.seqByEndpoint, [endpoint]: endpointSeq },
      nextSlotMs: interval > 0 ? at + interval : s.nextSlotMs,
      probeAtMs: probe ? nowMs : s.probeAtMs,
      ...(firstSent === undefined ? {} : { firstSent }),
    },
    result: {
      at,
      seq,
      endpointSeq,
      probe,
      paced: pacedRate(s, policy),
      ...(projectedMs === undefined ? {} : { projectedMs }),
    },
  };
}

/** How old the figures may grow, at `rate` a second, before a probe is asked for. */
function probeEveryMs(rate: number): number {
  return Math.min(PROBE_MAX_MS, Math.max(PROBE_MIN_MS, (PROBE_REQUESTS * 1000) / rate));
}

/** Whether the shared buckets' figures are old enough to ask a runs-list page for fresh ones. */
function probeDue(s: BudgetState, nowMs: number): boolean {
  const shared = live(s, nowMs).filter((b) => b.endpoint === null);
  if (shared.length === 0) return false;
  const every = probeEveryMs(Math.min(...shared.map((b) => b.rate ?? 1)));
  const newest = Math.max(...shared.map((b) => b.seenAt));
  return nowMs - newest >= every && nowMs - s.probeAtMs >= every;
}

/**
 * Learns from one response's headers. `limited` is true for a 429; `grant` numbers the request it
 * answered (absent: the figure counts as answering the newest grant).
 */
export function learn(
  s: BudgetState,
  obs: RateObservation,
  limited: boolean,
  endpoint: string,
  grant: { seq: number; endpointSeq: number; at?: number } | undefined,
  policy: BudgetPolicy,
): BudgetState {
  if (!s.heard) s = { ...s, heard: true };
  if (grant?.at !== undefined) s = tookMs(s, obs.atMs - grant.at);
  if (obs.limit === null) return s;
  const key = placeFigure(s, endpoint, obs.limit, limited);
  const owner = key.startsWith('*:') ? null : endpoint;
  // A bucket's log must hold every start since it began: the first buckets have the starts made
  // before any was known; one found later (an endpoint's own, from its 429) starts empty.
  const first = Object.keys(s.buckets).length === 0;
  const b0 = s.buckets[key] ?? { ...newBucket(obs.limit, owner, obs.atMs), sent: first ? (s.firstSent ?? []) : [] };
  const at = owner === null ? (grant?.seq ?? s.seq) : (grant?.endpointSeq ?? s.seqByEndpoint[endpoint] ?? 0);
  // A refused request took nothing: its own figure already counts it as unsent.
  const refused = (owner === null ? s.unsent : (s.unsentByEndpoint[endpoint] ?? 0)) + (limited ? 1 : 0);
  // A 429 where the estimate saw room means room does not come back the way it was thought to.
  const surprised = limited && b0.last !== null && room(s, rolled(b0, obs.atMs, at, refused), obs.atMs, policy) >= 1;
  const fig = limited ? { ...obs, remaining: 0 } : obs;
  const started = grant?.at !== undefined ? { atMs: grant.at, tolMs: slackMs(s), latencyMs: s.latencyMs } : null;
  // A refused request was never counted: its start leaves our log before the figure is read.
  const dropped = limited && grant?.at !== undefined ? { ...b0, sent: logDrop(b0.sent, grant.at) } : b0;
  // The figures go on being read at their own rate, whatever others' use of a window took off it.
  const kept = dropped.readRate === undefined ? dropped : { ...dropped, rate: dropped.readRate };
  let b = learnBucket(kept, fig, at, refused, surprised, started);
  const span = b.shared?.span ?? fittedSpan(b.fit) ?? logSpanMs(b, b.rate);
  if (span !== null && grant?.at !== undefined && b.last !== null && b.last !== b0.last) {
    // Ours are counted within the span back from the figure's own start: ours near the span's far
    // end may have been counted or have left, either way as round trips vary. Counting them short
    // on purpose (to count others high) feeds on itself: others read high hold ours back, which
    // shortens what is counted of ours again, and a log alone is then paced well below its rate.
    const ours = oursInFigure(b.sent, grant.at, grant.at, span);
    b = { ...b, others: Math.max(0, b.limit - b.last.remaining - ours) };
  }
  const next = limited ? unsent(s, endpoint, grant) : s;
  // A refusal says the window held its limit: what ours counted in it leave is others'.
  if (grant?.at !== undefined && b.windowMs !== null && b.last !== null && b.last !== b0.last) {
    b = {
      ...b,
      neighbour: readNeighbour(
        b,
        b.windowMs,
        grant.at,
        (grant.at + obs.atMs) / 2,
        oursInWindow(next, b),
        s.latencyHighMs ?? s.latencyMs,
      ),
    };
  }
  // Others' use only takes from what the figures read: a window's less theirs above that is a
  // limiter read as a window that is none (a log whose Reset stepped by a second). So is a window
  // whose whole rate lies far below what the figures read: its length came from a Reset step or
  // two with few of ours between (3 s, across a pause after a 429), and a one-second log
  // another consumer shares, round trips of 60 ms, was paced at 0.3 of what is left for 16 s.
  const n = neighbourOf(b);
  const whole = b.windowMs === null ? null : (b.limit * 1000) / b.windowMs;
  const left = n === null || whole === null ? null : whole - n;
  b =
    left === null || whole === null || b.rate === null || left > b.rate * AGREE || whole * AGREE < b.rate
      ? { ...b, readRate: undefined }
      : { ...b, readRate: b.rate, rate: left };
  if (b.last !== null && b.last !== b0.last && b.rate !== null) {
    // The newest figure says what the bucket holds; the turns granted after its request draw on
    // that, and on what comes back until the latest of them starts: turns already handed out reach
    // past the figure (a queue of callers), and counting them all against its moment alone would
    // hold the next caller back by the whole queue's worth of refill.
    // Unless the bucket is known to refill as it goes, nothing is counted back before the
    // figure's Reset: a sliding log gives room back only as its oldest requests leave.
    const levelAt = Math.max(b.last.at, b.levelAt);
    // Reset comes rounded up to a whole second, and room comes back no later than a span of the
    // rate after the figure under any of those limiters (the window it lay in ends, the bucket is
    // full again, the log's oldest leaves): counted from a second-rounded Reset up to a second
    // later than that, turns queued past it read the bucket short by up to the rate's second.
    const span = logSpanMs(b, b.rate);
    const reset = Math.min(b.last.resetAtMs ?? b.last.at, b.last.at + (span ?? Number.POSITIVE_INFINITY));
    const from = b.guess === 'bucket' ? b.last.at : Math.max(b.last.at, reset);
    const refill = (creditRate(b, policy) * Math.max(0, levelAt - from)) / 1000;
    // Ours that started with the figure's own, as close as round trips vary, may have been counted
    // after it although granted before: the figure need not show them taken, so they are taken
    // here. That holds the bucket a few requests fuller, which costs nothing of its rate. A limiter
    // paced by the log reading (see logReading) is read by its log instead.
    // No more of them can have been counted after it than it showed left; others were refused.
    const since = sentSince(next, b, b.last);
    const logLike = logReading(next, b, b.last.at) !== null;
    const alongside =
      grant?.at === undefined || logLike
        ? 0
        : Math.min(b.last.remaining, startedAlongside(b.sent, grant.at, slackMs(s), since));
    // Counted back from the figure itself (a bucket that refills as it goes), refill that came
    // while the bucket sat full (ours held back a while, then sent on) would be read as room: our
    // starts since bound what it can hold. Counted from Reset, the reading is short of that already.
    const held =
      b.guess === 'bucket' ? heldAtMost(b.sent, levelAt, b.limit, creditRate(b, policy), slackMs(next)) : b.limit;
    const level = Math.max(
      Math.min(b.limit, b.last.remaining + refill - since - alongside, held),
      spanOn(next, b, levelAt, span, policy),
    );
    b = { ...b, level, levelAt };
  }
  return {
    ...next,
    buckets: { ...next.buckets, [key]: b },
    limited: s.limited + (limited ? 1 : 0),
    refusedBy: limited ? { ...s.refusedBy, [endpoint]: key } : s.refusedBy,
  };
}

/**
 * What the bucket holds at least at `levelAt`, two spans of its rate (`span`) past the newest figure's
 * Reset, whatever limiter runs it: a fixed window or sliding log that long, a bucket full again at
 * Reset, or a token bucket refilled at that rate each holds the limit less ours counted within the
 * span before. Refill is counted back from Reset alone while the limiter is not known to refill as
 * it goes, and Reset comes rounded up to a whole second: turns queued seconds ahead (callers at a
 * few requests a second hold them) then read the bucket short by well over its limit, and every
 * caller was held back until that debt, which the bucket never had, was paid. The bound does not
 * see others' use since the figure: within two spans of Reset, a neighbour on an organization
 * bucket that no figure had shown yet took what it left, and reading from Reset loses less there.
 * No bound (-Infinity) before then, for a bucket read as refilling as it goes (counted from the
 * figure already), or with others seen drawing on it.
 */
function spanOn(s: BudgetState, b: BucketEstimate, levelAt: number, span: number | null, policy: BudgetPolicy): number {
  const fig = b.last;
  if (span === null || fig === null || b.guess === 'bucket') return Number.NEGATIVE_INFINITY;
  if (levelAt < Math.max(fig.at, fig.resetAtMs ?? fig.at) + 2 * span) return Number.NEGATIVE_INFINITY;
  if ((b.others ?? 0) > 0 || neighbourOf(b) !== null || b.shared !== undefined) return Number.NEGATIVE_INFINITY;
  // Credit explored above the rate draws the bucket down unseen until a figure shows it: the bound
  // keeps back what that takes before the next probe is due, as the shortfall of reading from
  // Reset alone did.
  const explored = Math.max(0, creditRate(b, policy) - (b.rate ?? 0) * (1 - policy.reserve));
  return b.limit - oursAt(b.sent, levelAt, span, lagOf(s)) - (explored * probeEveryMs(b.rate ?? 1)) / 1000;
}

/** A start planned for `plannedMs` that was late: it happened at `atMs`. */
export function startedLate(s: BudgetState, endpoint: string, plannedMs: number, atMs: number): BudgetState {
  const buckets = { ...s.buckets };
  for (const [key, b] of drawnOn(s, endpoint, atMs)) buckets[key] = { ...b, sent: logLate(b.sent, plannedMs, atMs) };
  return { ...s, buckets };
}

/** A request's answer: when its start was logged, and how long after that the answer came. */
export interface Answer {
  endpoint: string;
  loggedMs: number;
  took: number;
}

/** Notes answers in the starts' log of every bucket they drew on (see sent-log.ts's Lag). */
export function answered(s: BudgetState, answers: readonly Answer[]): BudgetState {
  if (answers.length === 0) return s;
  const buckets = { ...s.buckets };
  // Starts made before any bucket was known are the first buckets' log once one is.
  let firstSent = Object.keys(s.buckets).length === 0 ? s.firstSent : undefined;
  let quickestMs = s.quickestMs;
  for (const a of answers) {
    if (!(a.took >= 0)) continue;
    const q = quickest(quickestMs, a.took);
    quickestMs = q;
    const lag = lagOf({ ...s, quickestMs: q });
    for (const [key, b] of Object.entries(buckets)) {
      if (b.endpoint === null || b.endpoint === a.endpoint)
        buckets[key] = { ...b, sent: logAnswered(b.sent, a.loggedMs, a.took, q, lag) };
    }
    if (firstSent !== undefined) firstSent = logAnswered(firstSent, a.loggedMs, a.took, q, lag);
  }
  return {
    ...s,
    buckets,
    ...(firstSent === undefined ? {} : { firstSent }),
    ...(quickestMs === undefined ? {} : { quickestMs }),
  };
}

/** Holds the callers of `endpoint`'s refusing bucket, or every caller, until `untilMs`. */
export function pauseUntil(s: BudgetState, untilMs: number, endpoint?: string): BudgetState {
  const key = endpoint === undefined ? undefined : s.refusedBy[endpoint];
  const b = key === undefined ? undefined : s.buckets[key];
  if (key !== undefined && b !== undefined && b.endpoint !== null) {
    return { ...s, buckets: { ...s.buckets, [key]: { ...b, pausedUntilMs: Math.max(b.pausedUntilMs, untilMs) } } };
  }
  return untilMs > s.pausedUntilMs ? { ...s, pausedUntilMs: untilMs } : s;
}

export { bucketKey };
