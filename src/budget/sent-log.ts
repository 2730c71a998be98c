import type { BucketEstimate, Sample, SentEntry } from './types.ts';

// Our own requests' start times, per bucket, for the limiter whose figures say too little: a
// sliding log. Its `Reset` is when its oldest request leaves, rounded up to a whole second, which
// read as a window's end paces a one-second log at half its rate. A figure of a log says how many
// requests it held; held against our own starts, that bounds the log's span from both sides (our
// youngest that many were inside it, the next one had left). Figures of a sliding log always agree
// on a span; a window's or a bucket's soon disagree. Once they agree, the budget keeps "at most the
// limit within the span" by our starts, which is exact for the log.
//
// Starts close together are kept as one entry at the latest of them (leaving later is the safe
// side), so a long span at a high rate stays a few hundred entries in the shared state. An entry
// also keeps how soon its starts were answered, by class, so each part of it leaves the log as
// soon as its answers allow (see Lag).

const ENTRIES = 128;
/** Figures that must agree on a span before it is paced by. */
const FIT_FIGURES = 3;

/**
 * A start at most this late is logged at its planned time; a later one is logged again when it
 * happened (rate.ts). Each such correction is a write to the shared state, so the bound is not
 * set tighter than a busy event loop keeps.
 */
export const ON_TIME_MS = 5;

/**
 * How much later than ours a request of ours may be counted, relative to another of ours: how much
 * round trips vary, and how late a start may be without being logged again.
 */
export function slackMs(s: {
  latencyMs: number;
  latencyLowMs?: number;
  latencyHighMs?: number;
  roundTrips?: number;
}): number {
  const high = s.latencyHighMs ?? s.latencyMs;
  // One round trip does not say how much they vary: the first request of a process may take long
  // to leave it (a connection opened, code loaded), and was counted anywhere within its round trip.
  const spread = (s.roundTrips ?? 0) < 2 ? high : high - (s.latencyLowMs ?? high);
  return Math.max(0, spread) + ON_TIME_MS + 1;
}

/**
 * How late after its logged start one of our requests may have been counted, relative to the
 * quickest of ours: `slack` for a start not answered yet. An answered one was counted before its
 * answer came, so no later after its start than it took less the quickest answer lately (the part
 * of a round trip every request spends, on the way there and back): most requests come back
 * quickly, and the few slow ones no longer hold every request back by the whole spread, which
 * paced a log that much below its rate each span.
 */
export interface Lag {
  slack: number;
  /** The quickest answer lately, from a logged start; null while too few round trips tell it. */
  quickest: number | null;
}

export function lagOf(s: {
  latencyMs: number;
  latencyLowMs?: number;
  latencyHighMs?: number;
  roundTrips?: number;
  quickestMs?: number;
}): Lag {
  // As for the slack: one round trip does not say what the quickest is.
  const quickest =
    (s.roundTrips ?? 0) < 2 || s.quickestMs === undefined
      ? null
      : Math.min(s.quickestMs, s.latencyLowMs ?? s.latencyMs);
  return { slack: slackMs(s), quickest };
}

/**
 * How much longer than its entry's base an answered start took, at most, by class: an entry's
 * answered starts are counted in the first class that holds them, so a volley's quick ones leave
 * the log apart from its slow ones. Slower ones, and those slower than the slack allows a class,
 * are counted apart, with the longest they took.
 */
const ANSWER_CLASSES_MS = [5, 10, 20, 40] as const;
const SLOW = 4 + ANSWER_CLASSES_MS.length;

/** Answered starts by class, then those slower than every class and the longest of them took. */
interface Answered {
  classes: number[];
  slow: number;
  slowTook: number;
}

/**
 * An entry with `count` starts and, past an answer, its base and answered starts. No more are
 * answered than started: a start that left the entry takes the slowest answer with it first.
 */
function entry(at: number, count: number, first: number, base?: number, answered?: Answered): SentEntry {
  if (base === undefined || answered === undefined) return first === at ? [at, count] : [at, count, first];
  const classes = [...answered.classes];
  let slow = answered.slow;
  let over = classes.reduce((n, c) => n + c, slow) - count;
  const cut = Math.max(0, Math.min(over, slow));
  slow -= cut;
  over -= cut;
  for (let i = classes.length - 1; i >= 0 && over > 0; i--) {
    const n = Math.min(over, classes[i] as number);
    classes[i] = (classes[i] as number) - n;
    over -= n;
  }
  return slow > 0
    ? [at, count, first, base, ...classes, slow, answered.slowTook]
    : [at, count, first, base, ...classes];
}

function answeredOf(e: SentEntry): Answered {
  return {
    classes: ANSWER_CLASSES_MS.map((_, i) => e[4 + i] ?? 0),
    slow: e[SLOW] ?? 0,
    slowTook: e[SLOW + 1] ?? 0,
  };
}

/** The entry with `count` starts, what its answers told kept. */
function recount(e: SentEntry, count: number): SentEntry {
  return entry(e[0], count, e[2] ?? e[0], e[3], answeredOf(e));
}

/**
 * How late after the entry's time each part of its starts may have been counted, and how many:
 * the answered ones by how long they took, the rest by how much round trips vary.
 */
function lags(e: SentEntry, lag: Lag): [ms: number, count: number][] {
  const [, count, , base] = e;
  const quick = lag.quickest;
  const out: [number, number][] = [];
  let left = count;
  if (quick !== null && base !== undefined) {
    const a = answeredOf(e);
    ANSWER_CLASSES_MS.forEach((ms, i) => {
      const n = Math.min(left, a.classes[i] as number);
      if (n <= 0) return;
      out.push([Math.min(lag.slack, Math.max(0, base + ms - quick) + ON_TIME_MS + 1), n]);
      left -= n;
    });
    const n = Math.min(left, a.slow);
    // Slower than the spread seen: what it took says how late it may have been counted.
    if (n > 0) out.push([Math.max(lag.slack, a.slowTook - quick + ON_TIME_MS + 1), n]);
    left -= Math.max(0, n);
  }
  if (left > 0) out.push([lag.slack, left]);
  return out;
}

/** When the server no longer counts each part of the entry's starts, at the latest, and how many. */
function leaving(e: SentEntry, spanMs: number, lag: Lag): [at: number, count: number][] {
  return lags(e, lag).map(([ms, n]) => [e[0] + spanMs + ms, n]);
}

/**
 * A start logged at `loggedMs` was answered `took` ms after it: its entry counts it in the class
 * of how much longer it took than the entry's base (the quickest answer when the entry's first
 * came, at most its own), or with the slow ones when it took longer than `lag` allows a class.
 */
export function logAnswered(
  log: readonly SentEntry[] | undefined,
  loggedMs: number,
  took: number,
  quickestMs: number,
  lag?: Lag,
): SentEntry[] {
  const out = [...(log ?? [])];
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i] as SentEntry;
    const first = e[2] ?? e[0];
    if (first > loggedMs) continue;
    if (e[0] < loggedMs) break;
    const a = answeredOf(e);
    if (a.classes.reduce((n, c) => n + c, a.slow) >= e[1]) continue;
    const base = e[3] ?? Math.min(took, quickestMs);
    // A class keeps its starts no longer than the slack, which is read from the round trips that
    // carry figures: an answer slower than the slack allows (a busy process, counted late) is
    // kept with the slow ones, by what it took, or it left the log before the server let it go.
    const beyond = lag?.quickest != null && took - lag.quickest + ON_TIME_MS + 1 > lag.slack;
    const k = beyond ? -1 : ANSWER_CLASSES_MS.findIndex((ms) => took - base <= ms);
    const answered =
      k < 0
        ? { ...a, slow: a.slow + 1, slowTook: Math.max(a.slowTook, took) }
        : { ...a, classes: a.classes.map((c, j) => c + (j === k ? 1 : 0)) };
    out[i] = entry(e[0], e[1], first, base, answered);
    break;
  }
  return out;
}

/** How much of the quickest answer each new one leaves standing (see round-trips.ts's SPREAD_KEEP). */
const QUICKEST_KEEP = 0.999;

/** Notes an answer's time from its logged start, for the quickest lately. */
export function quickest(old: number | undefined, took: number): number {
  return old === undefined ? took : Math.min(took, old * QUICKEST_KEEP + took * (1 - QUICKEST_KEEP));
}

/** Entries within this of each other are joined; their starts are known no closer than that. */
function joinMs(spanMs: number | null): number {
  return spanMs === null ? 0 : spanMs / ENTRIES;
}

/** The span the log reading keeps `limit` requests within; null until a rate is known. */
export function logSpanMs(b: BucketEstimate, rate: number | null): number | null {
  return rate === null || !(rate > 0) ? null : (b.limit * 1000) / rate;
}

/**
 * The log with a start at `atMs` added (a turn may be handed out ahead of `nowMs`), keeping what
 * figures still to come may be read against: two spans back from now.
 */
export function logStart(
  log: readonly SentEntry[] | undefined,
  atMs: number,
  spanMs: number | null,
  nowMs: number,
): SentEntry[] {
  const keep = spanMs === null ? 60_000 : Math.max(2 * spanMs, 10_000);
  const kept = (log ?? []).filter((e) => e[0] > Math.min(atMs, nowMs) - keep);
  const last = kept[kept.length - 1];
  // Joined from its first start, not its latest: joining on, start by start, would let one entry
  // stretch over any number of starts that come close together, and read them all as young.
  if (last !== undefined && atMs - (last[2] ?? last[0]) <= joinMs(spanMs)) {
    const first = Math.min(last[2] ?? last[0], atMs);
    kept[kept.length - 1] = entry(Math.max(last[0], atMs), last[1] + 1, first, last[3], answeredOf(last));
  } else kept.push([atMs, 1]);
  return kept.length > 2 * ENTRIES ? kept.slice(-2 * ENTRIES) : kept;
}

/** Our requests the server may still count at `atMs`. */
export function oursAt(log: readonly SentEntry[] | undefined, atMs: number, spanMs: number, lag: Lag): number {
  let n = 0;
  for (const e of log ?? []) for (const [leaves, count] of leaving(e, spanMs, lag)) if (leaves > atMs) n += count;
  return n;
}

/**
 * Our requests surely counted in the bucket when a figure was made at `figureAtMs` for a request
 * started at `startedAtMs`: started no later than it, and not yet left. Counting few here counts
 * others' use high, which is the safe side.
 */
export function oursInFigure(
  log: readonly SentEntry[] | undefined,
  figureAtMs: number,
  startedAtMs: number,
  spanMs: number,
): number {
  let n = 0;
  for (const [at, count] of log ?? []) if (at > figureAtMs - spanMs && at <= startedAtMs) n += count;
  return n;
}

/**
 * Ours granted before the one started at `startedAtMs` and started within `slack` of it, which
 * may have been counted after it; `later` of ours were granted after it (the group's later turns
 * among them).
 */
export function startedAlongside(
  log: readonly SentEntry[] | undefined,
  startedAtMs: number,
  slack: number,
  later = 0,
): number {
  let with_ = 0;
  let after = 0;
  for (const [at, count] of log ?? []) {
    if (at > startedAtMs) after += count;
    else if (at > startedAtMs - slack) with_ += count;
  }
  return Math.max(0, with_ - 1 - Math.max(0, later - after));
}

/**
 * The most a token bucket of `limit`, refilled at `rate` a second, can hold at `atMs` after our
 * starts logged up to then: whatever it held before any of them it held no more than full, and a
 * full bucket turns its refill away, so refill that came while it was full is not there to spend.
 * Ours may be counted as much later than their starts as `slack`, relative to each other, so the
 * refill between two of them is read that much short.
 */
export function heldAtMost(
  log: readonly SentEntry[] | undefined,
  atMs: number,
  limit: number,
  rate: number,
  slack: number,
): number {
  const all = log ?? [];
  let most = limit;
  let since = 0;
  for (let i = all.length - 1; i >= 0; i--) {
    const e = all[i] as SentEntry;
    if (e[0] > atMs) continue;
    since += e[1];
    // A joined entry's starts all lie from its first on.
    most = Math.min(most, limit + (rate * Math.max(0, atMs - (e[2] ?? e[0]) - slack)) / 1000 - since);
  }
  return most;
}

/** The log without the start at `atMs` (or the latest just before it): a request never counted. */
export function logDrop(log: readonly SentEntry[] | undefined, atMs: number): SentEntry[] {
  const out = [...(log ?? [])];
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i] as SentEntry;
    // A joined entry holds every start from its first to its latest.
    if ((e[2] ?? e[0]) > atMs) continue;
    if (e[0] < atMs - 5) break;
    if (e[1] > 1) {
      out[i] = recount(e, e[1] - 1);
    } else out.splice(i, 1);
    break;
  }
  return out;
}

/** A start planned for `plannedMs` that happened at `atMs`: its entry moves later with it. */
export function logLate(log: readonly SentEntry[] | undefined, plannedMs: number, atMs: number): SentEntry[] {
  const out = [...(log ?? [])];
  for (let i = out.length - 1; i >= 0; i--) {
    const e = out[i] as SentEntry;
    // Only the entry holding the planned start: a later one's start moved in its place went out
    // on time, while the late one kept its early time and left the log before the server let it go.
    if ((e[2] ?? e[0]) > plannedMs) continue;
    if (e[0] < plannedMs) break;
    // An entry whose latest start is later still leaves the log no sooner than the late one.
    if (e[0] >= atMs) break;
    // The late start alone moves: the rest of a joined entry keep what their answers told.
    if (e[1] > 1) out.splice(i, 1, recount(e, e[1] - 1), [atMs, 1]);
    else out[i] = [atMs, 1];
    break;
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/**
 * The earliest time from `atMs` on when at most `allowed` of our requests are still counted, or
 * null when waiting cannot bring it there (more allowed than ever).
 */
export function logFreeAt(
  log: readonly SentEntry[] | undefined,
  atMs: number,
  spanMs: number,
  lag: Lag,
  allowed: number,
): number | null {
  if (allowed < 0) return null;
  const counted = (log ?? [])
    .flatMap((e) => leaving(e, spanMs, lag))
    .filter(([leaves]) => leaves > atMs)
    .sort((a, b) => a[0] - b[0]);
  let excess = counted.reduce((n, e) => n + e[1], 0) - allowed;
  if (excess <= 0) return atMs;
  for (const [leaves, count] of counted) {
    excess -= count;
    if (excess <= 0) return leaves + 1;
  }
  return null;
}

/**
 * What a sliding log's span is, as far as the figures tell: a figure made for our request started
 * at `startedAtMs` said the log held `held` requests, so our `held` youngest started within the
 * span and the next one before it (while nobody else draws on the bucket). Each figure bounds the
 * span from below and above; a limiter that is not a sliding log soon gives bounds that disagree.
 */
export interface SpanFit {
  lo: number;
  hi: number;
  /** Figures that agreed since the last disagreement, and disagreements in all. */
  figures: number;
  misfits: number;
  /** When the latest figure counted in `figures` was made. */
  at?: number;
}

/**
 * Figures this close together count as one towards agreeing: a volley of refusals answered at
 * once (each the log full) agrees with any span, and says no more than the first of them.
 */
const SAME_FIGURE_MS = 100;

export interface FigureSeen {
  /** When the request the figure answered started. */
  startedAtMs: number;
  /** Requests the figure said the bucket held: its limit less Remaining. */
  held: number;
  /** Its Reset, in whole seconds as sent (ms); a sliding log's is when its oldest leaves, rounded up. */
  resetAtMs: number | null;
  /** How far our starts may be off from the server's counts, and a round trip at most. */
  tolMs: number;
  latencyMs: number;
}

export function spanBounds(
  log: readonly SentEntry[] | undefined,
  f: FigureSeen,
  spanMs: number | null,
): { lo: number; hi: number } | null {
  if (f.held < 1) return null;
  const all = log ?? [];
  // The figure's own start may lie in an entry joined on past it (a volley): that entry is its
  // group. Read against the entries before it instead, a volley's first figure fit no span, and
  // the log's span was learned again. Joined on further than round trips vary, it says nothing.
  let holding: SentEntry | undefined;
  for (const e of all) if ((e[2] ?? e[0]) <= f.startedAtMs && e[0] > f.startedAtMs) holding = e;
  if (holding !== undefined && holding[0] - f.startedAtMs > f.tolMs) return null;
  const older = all.filter((e) => e[0] <= f.startedAtMs);
  const newest = holding ?? older.pop();
  if (newest === undefined) return null;
  // Starts logged with the figure's own were counted before it or after, in any order: from only
  // it to all of them. So may ours that started as close before it, or after it, as round trips
  // vary: up to `before` of the older ones not yet counted, up to `after` later ones counted
  // already. Each case gives bounds; the span lies within one of them.
  const before = countIn(older, f.startedAtMs - f.tolMs, f.startedAtMs);
  const after = countIn(
    all.filter((e) => e !== newest),
    f.startedAtMs,
    f.startedAtMs + f.tolMs,
  );
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  let read = false;
  for (let counted = 1; counted <= Math.min(newest[1], f.held); counted++) {
    for (let shift = -after; shift <= before; shift++) {
      const need = f.held - counted + shift;
      if (need < 0) continue;
      const b = boundsFrom(older, newest, need, f, spanMs);
      if (b === 'short') continue;
      read = true;
      if (b !== null) {
        lo = Math.min(lo, b.lo);
        hi = Math.max(hi, b.hi);
      }
    }
  }
  // A log that does not reach back to the oldest counted says nothing; one that does but fits no
  // span says the limiter is not a sliding log.
  return read ? { lo, hi } : null;
}

/** Our starts in (fromMs, toMs]. */
function countIn(log: readonly SentEntry[], fromMs: number, toMs: number): number {
  let n = 0;
  for (const [at, count] of log) if (at > fromMs && at <= toMs) n += count;
  return n;
}

/** Bounds when `need` of the older entries were counted besides the figure's group (at `groupAt`). */
function boundsFrom(
  older: readonly SentEntry[],
  group: SentEntry,
  need: number,
  f: FigureSeen,
  spanMs: number | null,
): { lo: number; hi: number } | null | 'short' {
  const join = joinMs(spanMs);
  let n = 0;
  let oldest = group;
  let hi = Number.POSITIVE_INFINITY;
  for (let i = older.length - 1; i >= 0; i--) {
    const e = older[i] as SentEntry;
    if (n >= need) {
      hi = f.startedAtMs - e[0] + join + f.tolMs;
      break;
    }
    n += e[1];
    oldest = e;
    // An entry holding starts on both sides: some of its starts had left, some not.
    if (n > need) {
      hi = f.startedAtMs - e[0] + join + f.tolMs;
      break;
    }
  }
  if (n < need) return 'short';
  let lo = f.startedAtMs - oldest[0] - f.tolMs;
  if (f.resetAtMs !== null) {
    // The oldest leaves a span after it was counted, which was up to a round trip after it started.
    lo = Math.max(lo, f.resetAtMs - 1000 - oldest[0] - f.latencyMs - f.tolMs);
    hi = Math.min(hi, f.resetAtMs - oldest[0] + join + f.tolMs);
  }
  return lo > hi ? null : { lo, hi };
}

export function fitSpan(fit: SpanFit | undefined, b: { lo: number; hi: number }, atMs: number): SpanFit {
  if (fit === undefined) return { lo: b.lo, hi: b.hi, figures: 1, misfits: 0, at: atMs };
  const lo = Math.max(fit.lo, b.lo);
  const hi = Math.min(fit.hi, b.hi);
  if (lo > hi) return { lo: b.lo, hi: b.hi, figures: 1, misfits: fit.misfits + 1, at: atMs };
  if (fit.at !== undefined && atMs - fit.at < SAME_FIGURE_MS) return { ...fit, lo, hi };
  return { lo, hi, figures: fit.figures + 1, misfits: fit.misfits, at: atMs };
}

/**
 * A span agreed on by enough figures, and bounded above: the whole number of seconds the bounds
 * hold, if they hold one, else their upper end. Limits are quoted a second, a minute or an hour,
 * and the upper bound is as loose as round trips vary, which paces a log that much below its rate.
 */
export function fittedSpan(fit: SpanFit | undefined): number | null {
  if (fit === undefined || fit.figures < FIT_FIGURES || !Number.isFinite(fit.hi)) return null;
  const whole = Math.max(1000, Math.ceil(fit.lo / 1000) * 1000);
  return Math.min(whole, fit.hi);
}

/** The longest span paced by as a log before the figures agree on one (see tentativeSpan). */
const TENTATIVE_MAX_MS = 4_000;

/**
 * A short span to pace by as a log while too few figures agree on one, when every figure so far
 * fits a log and one of them cannot be a fixed window of that span: the request it answered was
 * counted before such a window ending at its Reset began. Reset comes in whole seconds rounded
 * up, so a one-second log's figures put its room back up to two seconds on, and read as a
 * window's end they pace it at half its rate while it is learned. A fixed window that gave such a
 * figure is at least a second longer than the span, and the rate already believed (the limit a
 * span) overruns it either way. Spans of a few seconds only: for longer ones the second rounding
 * hides costs little, while a window a second longer than the figures' whole seconds is likely.
 */
export function tentativeSpan(
  fit: SpanFit | undefined,
  figures: readonly Sample[],
): { span: number; notWindow: boolean } | null {
  if (fit === undefined || fit.misfits > 0 || !Number.isFinite(fit.hi)) return null;
  // Only a span of whole seconds, as limits are quoted: a shorter one is no window's length either.
  const span = Math.max(1000, Math.ceil(fit.lo / 1000) * 1000);
  if (span > TENTATIVE_MAX_MS || span > fit.hi) return null;
  return { span, notWindow: figures.some((f) => f.resetAtMs !== null && f.at < f.resetAtMs - span) };
}
