import { NEIGHBOUR_MAX, neighbourFloor, neighbourRate, neighbourSoFar } from './neighbour.ts';
import { fittedSpan, lagOf, logFreeAt, logSpanMs, oursAt, slackMs, tentativeSpan } from './sent-log.ts';
import type { BucketEstimate, BudgetPolicy, BudgetState, Sample } from './types.ts';

// How much room a server bucket has for our requests at a given time, read from what is known of
// it (see policy.ts): the lesser of a window's and a token bucket's readings of its figures, or,
// for a sliding log, our own starts within its span.

/** How far above a rate not yet measured room is credited, to find out whether it is more. */
const EXPLORE = 1.05;
/**
 * Figures a rate must rest on before it counts as a lower bound worth exploring above, and how
 * long they must span: workers starting together each send a runs-list page first, and three
 * figures within a tenth of a second prove no refill. Explored above from them, a bucket drained
 * by a burst of details (whose answers carry no figures) was credited 5% more than came back
 * before any probe could show it empty, and refused the request that took the last of it.
 */
const BOUND_FIGURES = 3;
const BOUND_SPAN_MS = 1_000;
/** How many recent figures, and how far back, bound a window's room (see windowRoom). */
const REORDER_FIGURES = 6;
const REORDER_MS = 1_000;
/**
 * Requests are not started closer to a window's end than they take to come back (at least this,
 * at most round-trips.ts's cap), in case they arrive after it: a busy process may send late.
 */
const MIN_GUARD_MS = 100;

/** How close to a window's end requests are not started (see MIN_GUARD_MS). */
function guardMs(s: BudgetState): number {
  return Math.max(MIN_GUARD_MS, s.latencyMs);
}

/** Requests of a bucket kept back for the key's other users; always leaves at least one. */
export function reserveCount(limit: number, reserve: number): number {
  return Math.min(Math.floor(limit * reserve), Math.max(0, limit - 1));
}

export function seqOf(s: BudgetState, b: BucketEstimate): number {
  return b.endpoint === null ? s.seq : (s.seqByEndpoint[b.endpoint] ?? 0);
}

/** Ours granted after turn `from` up to turn `to` of the bucket's count, less those never sent. */
function grantedBetween(s: BudgetState, b: BucketEstimate, from: number, to: number): number {
  const given = b.endpoint === null ? s.unsentSeqs : s.unsentEndpointSeqs?.[b.endpoint];
  let back = 0;
  for (const u of given ?? []) if (u > from && u <= to) back++;
  return to - from - back;
}

export function unsentOf(s: BudgetState, b: BucketEstimate): number {
  return b.endpoint === null ? s.unsent : (s.unsentByEndpoint[b.endpoint] ?? 0);
}

/** The figure that holds at `atMs` for the window view: the last one, or the projected window once begun. */
function figureAt(b: BucketEstimate, atMs: number) {
  return b.next !== null && atMs >= b.next.at ? b.next : b.last;
}

/** The window a limiter would run if it ran one: learned from Reset's steps, else limit ÷ rate. */
function windowOf(b: BucketEstimate): number | null {
  // Reset's steps teach a window only once the figures say the limiter runs windows: a sliding
  // log's or a bucket's Reset steps as far apart as the figures lie. Others' use read through
  // windows says so too: the rate is then the window's less theirs, and no longer gives its length.
  if (b.windowMs !== null && (b.guess === 'window' || windowNeighbour(b) !== null)) return b.windowMs;
  return b.rate === null || b.rate <= 0 ? null : Math.max(1000, (b.limit * 1000) / b.rate);
}

/** Projects a window, whole again, for `atMs` when that lies past the figure's Reset. */
export function rolled(b: BucketEstimate, atMs: number, seq: number, unsent: number): BucketEstimate {
  const base = figureAt(b, atMs);
  if (base === null || base.resetAtMs === null || atMs < base.resetAtMs) return b;
  const w = windowOf(b);
  if (w === null) return b.next === null ? b : { ...b, next: null };
  const start = base.resetAtMs + Math.floor((atMs - base.resetAtMs) / w) * w;
  const next = { at: start, remaining: b.limit, resetAtMs: start + w, seq, unsent };
  // Where the window began among our turns outlasts the projection: its figures count ours from it.
  return { ...b, next, ...(b.next?.at === start ? {} : { edge: next }) };
}

/**
 * Others' requests per second through a fixed window, when the figures read as one with others
 * drawing on it (see neighbour.ts); null otherwise.
 */
function windowNeighbour(b: BucketEstimate): number | null {
  return b.readRate === undefined ? null : neighbourOf(b);
}

/**
 * Others' use through a window as the figures read it, before it is checked against the rate: their
 * pace through it, or while too few of theirs were counted to read one, what windows held.
 */
export function neighbourOf(b: BucketEstimate): number | null {
  if (b.windowMs === null || b.notWindow === true || (b.guess !== 'window' && b.guess !== 'unknown')) return null;
  const most = (NEIGHBOUR_MAX * b.limit * 1000) / b.windowMs;
  const n = neighbourRate(b.neighbour);
  if (n !== null && n < most) return n;
  const floor = neighbourFloor(b.neighbour);
  return floor === null || floor >= most ? null : floor;
}

/**
 * Others' pace so far through the window ending at `resetAtMs`, kept for them through the rest of
 * it: before their pace is read over windows, their use of the current one is all that tells, and
 * ours took the rest of its room at once while theirs went on drawing on it.
 */
function soFar(b: BucketEstimate, resetAtMs: number): number {
  if (b.windowMs === null || b.notWindow === true || (b.guess !== 'window' && b.guess !== 'unknown')) return 0;
  const n = neighbourSoFar(b.neighbour, resetAtMs);
  const most = (NEIGHBOUR_MAX * b.limit * 1000) / b.windowMs;
  return n === null || n >= most ? 0 : n;
}

/**
 * How far above the rate the figures read a window's, less others' use of it, may lie and be
 * believed: spent at a window's start, a shared window measures well below what is left to us when
 * round trips vary, while a log misread as one-second windows lies many times above its rate.
 */
export const AGREE = 1.5;

/** Our requests per second through a window others draw on too; 0 when nobody else is seen. */
function windowShare(b: BucketEstimate): number {
  const n = windowNeighbour(b);
  return n === null || !(n > 0) ? 0 : (b.limit * 1000) / (b.windowMs as number) - n;
}

/**
 * Ours counted in the newest figure's window, by our turns since the window began, when the turn
 * it began at is known; else null (the log then tells, less closely).
 */
export function oursInWindow(s: BudgetState, b: BucketEstimate): number | null {
  const fig = b.last;
  const edge = b.edge;
  if (fig === null || edge === undefined || b.windowMs === null || fig.resetAtMs === null) return null;
  if (edge.at !== fig.resetAtMs - b.windowMs || fig.seq < edge.seq) return null;
  return grantedBetween(s, b, edge.seq, fig.seq);
}

export function sentSince(s: BudgetState, b: BucketEstimate, fig: Sample): number {
  return grantedBetween(s, b, fig.seq, seqOf(s, b));
}

// Room is the lesser of two readings of the same figures, so neither limiter family is overrun:
// - as a window: what the figure said is left, until its Reset; then the whole limit for a window;
// - as a bucket: what the figure said is left, plus the rate times the time since, up to the limit.
// A fixed window then never gets more than its limit, and a bucket never more than its refill; a
// bucket whose Reset means "full again at" is spent at Reset, when it is full, which is its rate.

function windowRoom(s: BudgetState, b: BucketEstimate, atMs: number, projected = true): number {
  const fig = projected ? figureAt(b, atMs) : b.last;
  // Room seen coming back before Reset: the bucket reading alone holds.
  if (!projected) {
    if (fig === null || fig.resetAtMs === null || atMs >= fig.resetAtMs) return Number.NEGATIVE_INFINITY;
  } else if (fig === null || b.guess === 'bucket') return Number.POSITIVE_INFINITY;
  // Others drawing on the window take their share through it: what they will take by its end is
  // kept for them, and ours go out through the window at our share, not all at its start, where
  // they would take theirs and leave ours refused when theirs had come first.
  const n = windowNeighbour(b) ?? 0;
  const share = windowShare(b);
  const theirs = (fig: Sample) =>
    fig.resetAtMs === null
      ? 0
      : ((n > 0 ? n : soFar(b, fig.resetAtMs)) * Math.max(0, fig.resetAtMs - fig.at)) / 1000 +
        oursAhead(s, b, share, fig.resetAtMs, atMs);
  let room = fig.remaining - sentSince(s, b, fig) - uncounted(b, fig) - theirs(fig);
  if (fig !== b.last) return room;
  // A figure made while ours granted before it were still on their way need not count them yet:
  // counted after it, they would be sent again at the window's end, and a 429 there costs the next
  // window too (Retry-After is whole seconds). Where the window began among our turns is known,
  // ours since then bound its room as well.
  const edge = b.edge;
  if (edge !== undefined && edge.resetAtMs === fig.resetAtMs && fig.seq >= edge.seq) {
    room = Math.min(room, b.limit - sentSince(s, b, edge) - theirs(edge));
  }
  // Responses overtake each other: a figure may not yet count requests granted before its own that
  // were still on their way, so the figures just before it bound the room too.
  for (const f of b.samples.slice(-REORDER_FIGURES)) {
    if (f.at >= fig.at - REORDER_MS && (f.resetAtMs === null || atMs < f.resetAtMs)) {
      room = Math.min(room, f.remaining - sentSince(s, b, f) - uncounted(b, f) - theirs(f));
    }
  }
  return room;
}

/**
 * Our pace through a window others draw on, `share` a second spread over the part of the window
 * before the guard, the first at its start: spread to the guard's edge itself, the last of ours
 * fell on it and was moved to the next window, at a few requests a window one in four of ours lost
 * every window. Null when the guard leaves no part of the window open.
 */
function spreadPace(s: BudgetState, b: BucketEstimate, share: number): number | null {
  const w = b.windowMs ?? 0;
  const open = w - guardMs(s);
  return open > 0 ? (share * w) / open : null;
}

/** Our share of a window others draw on still to go out after `atMs`, besides the turn asked for. */
function oursAhead(s: BudgetState, b: BucketEstimate, share: number, resetAtMs: number, atMs: number): number {
  const pace = spreadPace(s, b, share);
  if (!(share > 0) || pace === null) return 0;
  return Math.max(0, (pace * Math.max(0, resetAtMs - guardMs(s) - atMs)) / 1000 - 1);
}

/**
 * Ours that started with a figure's own and may have been counted after it (Sample.alongside),
 * for a sliding log: it is paced to its edge by our own starts, so a figure that overstates its
 * room by a few turns a few requests away. A window's room is spent whole before its end, where
 * keeping a few back would cost each window a few requests.
 */
function uncounted(b: BucketEstimate, f: Sample): number {
  return b.guess === 'sliding' ? (f.alongside ?? 0) : 0;
}

/**
 * The log reading (see sent-log.ts), for a limiter told to be a sliding log: at most the limit,
 * less others' use at the newest figure, within the span the figures agree on. Others' use is
 * counted until it has surely left, a span after the figure. While the limiter is not told yet,
 * the tentative span its figures fit so far, when they rule out a window of it. Null otherwise.
 */
export function logReading(s: BudgetState, b: BucketEstimate, atMs: number) {
  const tentative = b.guess === 'unknown' ? (tentativeSpan(b.fit, b.samples) ?? refusedSpan(b)) : null;
  const shared = b.guess === 'sliding' ? b.shared : undefined;
  const span = shared?.span ?? (b.guess === 'sliding' ? fittedSpan(b.fit) : (tentative?.span ?? null));
  if (span === null) return null;
  // A neighbour read as steady goes on drawing on the log after the figure that showed it.
  const othersUntil = shared !== undefined ? Number.POSITIVE_INFINITY : (b.last?.at ?? 0) + span;
  const held = shared !== undefined ? shared.others : (b.others ?? 0);
  const others = atMs < othersUntil ? Math.min(held, b.limit - 1) : 0;
  const lag = lagOf(s);
  // A log its figures do not tell from a window yet is read as both: each must have room.
  const alone = tentative === null || tentative.notWindow;
  const room = b.limit - others - oursAt(b.sent, atMs, span, lag);
  return { span, lag, others, othersUntil, alone, shared: shared !== undefined, room };
}

/**
 * A bucket known only from its refusals (an endpoint whose answers carry no headers) cannot be
 * told apart: its figures all say it is empty. Paced as a window or a token bucket alone, it is
 * sent a whole limit at once each time room comes back, and a sliding log counts part of it
 * before the last volley has left. No more than the limit of ours within the span of the rate
 * keeps to every one of them; the window and bucket readings still hold beside it.
 */
function refusedSpan(b: BucketEstimate): { span: number; notWindow: boolean } | null {
  const span = logSpanMs(b, b.rate);
  if (span === null || b.samples.length === 0 || b.samples.some((x) => x.remaining > 0)) return null;
  return { span, notWindow: false };
}

/** The bucket's content at `atMs` read as a token bucket refilled at the credited rate. */
export function bucketRoom(s: BudgetState, b: BucketEstimate, atMs: number, policy: BudgetPolicy): number {
  if (b.level === null || b.rate === null) return Number.POSITIVE_INFINITY;
  const credit = (creditRate(b, policy) * Math.max(0, atMs - b.levelAt)) / 1000;
  return Math.min(b.limit - fullMargin(s, b, policy), b.level + credit);
}

/**
 * How far short of full the bucket is read at most: the server counts our requests as much earlier
 * or later after their starts as round trips vary, so a volley sent the moment the bucket read
 * full again, a second after the last one emptied it, was refused its last request when counted
 * a millisecond early. Below full nothing is cut, so pacing by the refill loses nothing.
 */
function fullMargin(s: BudgetState, b: BucketEstimate, policy: BudgetPolicy): number {
  return Math.min((creditRate(b, policy) * slackMs(s)) / 1000, Math.max(0, b.limit - 1));
}

/**
 * The rate room is credited at, less the reserve. A rate not measured is only a lower bound (the
 * bucket never ran low), so it is credited a little above, to find out: the bucket either runs low
 * and the rate is measured, or it does not and the bound rises.
 */
export function creditRate(b: BucketEstimate, policy: BudgetPolicy): number {
  // A rate read from the first figures alone is a guess, not a bound: crediting above it would
  // only find the bucket's edge with a 429. So is one read from Reset however many figures came
  // since, while none of them spanned enough to show room to spare: detail answers carry no
  // figures, so a bucket drained by them is seen empty only by the 429 that found the edge. Only a
  // bucket is drained unseen that way: a window's or a log's room is also read from our own starts,
  // which keep to what it lets through, and withholding the credit there only moved our starts
  // against a sliding log's edge.
  const first = b.samples[0];
  const bound =
    !b.measured &&
    !(b.guessed === true && b.guess === 'bucket') &&
    b.samples.length >= BOUND_FIGURES &&
    first !== undefined &&
    (b.last?.at ?? first.at) - first.at >= BOUND_SPAN_MS;
  return (b.rate ?? 0) * (1 - policy.reserve) * (bound ? EXPLORE : 1);
}

/** Requests the bucket has room for at `atMs`, beyond the reserve. */
export function room(s: BudgetState, b: BucketEstimate, atMs: number, policy: BudgetPolicy): number {
  const keep = reserveCount(b.limit, policy.reserve);
  const log = logReading(s, b, atMs);
  const windowed = log?.alone
    ? Number.POSITIVE_INFINITY
    : Math.min(windowRoom(s, b, atMs), bucketRoom(s, b, atMs, policy));
  if (log === null) return windowed - keep;
  // Before the figure's Reset what it said is left holds under every limiter; past it, the log. A
  // bucket that refills as it goes is not sent more than its refill either. Others drawing on the
  // log take from what the figure said is left as time goes: the log reading alone counts them.
  const early = log.shared ? log.room : Math.max(log.room, windowRoom(s, b, atMs, false));
  return Math.min(early, b.guess === 'bucket' ? bucketRoom(s, b, atMs, policy) : early, windowed) - keep;
}

/** When the bucket will have room for one more request, from `atMs` on (a bound; the caller re-checks). */
export function roomAt(s: BudgetState, b: BucketEstimate, atMs: number, policy: BudgetPolicy): number {
  const keep = reserveCount(b.limit, policy.reserve);
  const log = logReading(s, b, atMs);
  const windowed = log?.alone ? atMs : windowRoomAt(s, b, atMs, policy, keep);
  let at = atMs;
  if (log !== null) {
    if ((log.shared ? log.room : Math.max(log.room, windowRoom(s, b, atMs, false))) - keep < 1) {
      const free = logFreeAt(b.sent, atMs, log.span, log.lag, b.limit - log.others - keep - 1);
      at = free ?? (atMs < log.othersUntil && Number.isFinite(log.othersUntil) ? log.othersUntil : atMs + 1000);
    }
    return Math.max(b.guess === 'bucket' ? refilledAt(s, b, at, keep, policy) : at, windowed);
  }
  return windowed;
}

/** When the window and bucket readings have room for one more request, from `atMs` on. */
function windowRoomAt(s: BudgetState, b: BucketEstimate, atMs: number, policy: BudgetPolicy, keep: number): number {
  let at = atMs;
  const reset = b.guess === 'bucket' ? null : (figureAt(b, atMs)?.resetAtMs ?? null);
  const short = 1 + keep - windowRoom(s, b, atMs);
  const share = windowShare(b);
  const pace = spreadPace(s, b, share) ?? share;
  if (short > 0 && pace > 0 && reset !== null && atMs + (short * 1000) / pace < reset) {
    // Paced through a window others draw on: room comes as our share of it goes by.
    at = atMs + (short * 1000) / pace;
  } else if (short > 0) {
    // Nothing says when room comes back: try again a second on, when the next figure will tell.
    at = Math.max(at, reset !== null && reset > atMs ? reset : atMs + 1000);
  }
  at = refilledAt(s, b, at, keep, policy);
  // Started this close to the window's end, a request may be counted in the next window: it waits
  // for that window and is counted there. Checked last, so no wait for refill or for our share
  // of a shared window moves a start into it.
  return reset !== null && at < reset && at >= reset - guardMs(s) ? reset : at;
}

/** From `atMs` on, when the bucket read as a token bucket has one request's room beyond `keep`. */
function refilledAt(s: BudgetState, b: BucketEstimate, atMs: number, keep: number, policy: BudgetPolicy): number {
  const short = 1 + keep - bucketRoom(s, b, atMs, policy);
  if (short <= 0) return atMs;
  const rate = creditRate(b, policy);
  return atMs + (rate > 0 ? (short * 1000) / rate : 1000);
}

/**
 * Whether a turn granted for `atMs` no longer fits a log its bucket is now read as, counting
 * ours started up to it: at a few requests a second turns are handed out seconds ahead, and one
 * granted before a figure taught the log, or others' share of it, would go out over it.
 */
export function overdrawn(s: BudgetState, endpoint: string, atMs: number, policy: BudgetPolicy): boolean {
  for (const b of Object.values(s.buckets)) {
    if ((b.endpoint !== null && b.endpoint !== endpoint) || b.guess !== 'sliding') continue;
    const log = logReading(s, b, atMs);
    if (log === null || !log.shared) continue;
    const upTo = (b.sent ?? []).filter((e) => (e[2] ?? e[0]) <= atMs);
    if (b.limit - log.others - oursAt(upTo, atMs, log.span, log.lag) < reserveCount(b.limit, policy.reserve))
      return true;
  }
  return false;
}

/**
 * Whether a turn granted for `turn.at` in a projected window no longer fits the window the newest
 * figure reads, counting ours granted after that figure up to it: before a window's length is
 * known, turns are handed out in windows projected from a guessed length (a first Reset's whole
 * seconds, rounded down: 9 s of a 10 s window), at a few requests a second seconds ahead, and a
 * figure whose Reset then steps by more shows the turn still inside the window its volley emptied.
 */
export function outgrown(
  s: BudgetState,
  endpoint: string,
  turn: { at: number; seq: number; endpointSeq: number; projectedMs?: number },
  policy: BudgetPolicy,
): boolean {
  if (turn.projectedMs === undefined) return false;
  for (const b of Object.values(s.buckets)) {
    if (b.endpoint !== null && b.endpoint !== endpoint) continue;
    if (b.windowMs === null || b.windowMs <= turn.projectedMs) continue;
    const fig = b.last;
    const seq = b.endpoint === null ? turn.seq : turn.endpointSeq;
    if (fig === null || fig.resetAtMs === null || turn.at >= fig.resetAtMs || fig.seq >= seq) continue;
    const theirs = ((windowNeighbour(b) ?? 0) * Math.max(0, turn.at - fig.at)) / 1000;
    if (fig.remaining - grantedBetween(s, b, fig.seq, seq) - theirs < reserveCount(b.limit, policy.reserve))
      return true;
  }
  return false;
}
