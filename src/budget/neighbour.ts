import type { BucketEstimate, SentEntry } from './types.ts';

// Others drawing on a fixed window (another consumer of the organization) lower Remaining through
// the window, not at its start. Spending a window at its start takes their share from them, and
// their requests then show up as 429s of ours, or not at all; either way what is left to us reads
// as the whole window. So their use is read from each figure against our own starts: the window
// held the limit less Remaining, of which ours are those started since the window began. How fast
// theirs grows through the window is reserved for them, and the rate left to us is the window's
// less theirs.

/** What is known of others' use of a window: past windows' (fading), and the current one's. */
export interface NeighbourUse {
  /** Others' requests and the window time they came in, over past windows. */
  count: number;
  ms: number;
  /** The current window (its end) and others' requests in it by the latest figure. */
  end: number;
  curCount: number;
  curMs: number;
  /**
   * Figures read, and figures no fixed window could have given: ours counted beyond what the
   * window held, or others' taking half of it.
   */
  figures?: number;
  misfits?: number;
  /**
   * Of the misfits, those that held fewer requests than ours counted in the window, read clear of
   * its start (see refillsAsItGoes).
   */
  overrun?: number;
  /** The window length read by; another starts the reading afresh. */
  windowMs?: number;
  /** The most of others' requests past windows were seen to hold, the two largest (see neighbourFloor). */
  most?: readonly [number, number];
  /** Past windows read, fading as `count` does. */
  windows?: number;
}

/** How much of past windows' reading each new window leaves standing: a few windows' memory. */
const FADE = 0.8;
/** Window time a reading must cover before it is used: a figure early in a window says little. */
const MIN_MS = 200;

/**
 * Our starts in [fromMs, toMs]: counted in the window that began at `fromMs`. A joined entry's
 * starts are taken as spread evenly from its first to its latest: a volley at a window's start is
 * joined, and counting it whole on either side would read dozens of ours as others'.
 */
function oursBetween(log: readonly SentEntry[] | undefined, fromMs: number, toMs: number): number {
  let n = 0;
  for (const [at, count, first = at] of log ?? []) {
    if (at < fromMs || first > toMs) continue;
    if (at === first) n += count;
    else n += (count * (Math.min(at, toMs) - Math.max(first, fromMs))) / (at - first);
  }
  return n;
}

/**
 * Others' use as a figure of a fixed window of `windowMs` shows it: the figure answered our
 * request started at `startedAtMs` and counted about half a round trip later; `ours` of ours
 * were counted in the window by then, when our turns tell. A figure counted within `reachMs` of
 * the window's start (the longest round trip lately) is not read: ours sent together as the
 * window opened reach the server in any order as round trips vary, so which of them it counts
 * is a guess of a request or two, and over so little of the window that guess alone reads as a
 * neighbour taking a good share of it.
 */
export function readNeighbour(
  b: BucketEstimate,
  windowMs: number,
  startedAtMs: number,
  countedAtMs: number,
  ours: number | null,
  reachMs = 0,
): NeighbourUse | undefined {
  const fig = b.last;
  if (fig === null || fig.resetAtMs === null) return b.neighbour;
  const begun = fig.resetAtMs - windowMs;
  if (countedAtMs < begun || startedAtMs < begun) return b.neighbour;
  const held = b.limit - fig.remaining - (ours ?? oursBetween(b.sent, begun, startedAtMs));
  const u = b.neighbour?.windowMs === windowMs ? b.neighbour : undefined;
  const ms = Math.min(windowMs, countedAtMs - begun);
  // A bucket refilling as it goes lets through more of ours since a Reset than it holds, or reads
  // as others having taken half of it (half its share of the window so far), when read as a
  // window: such a reading is no neighbour's. Ours started alongside the figure's own are counted
  // as in it; any that were not read others low.
  if (
    held + (fig.alongside ?? 0) < -MISFIT_SLACK ||
    held > b.limit / 2 ||
    held > (NEIGHBOUR_MAX * b.limit * ms) / windowMs + MISFIT_SLACK
  ) {
    const base = u ?? { count: 0, ms: 0, end: fig.resetAtMs, curCount: 0, curMs: 0, windowMs };
    const over = held + (fig.alongside ?? 0) < -MISFIT_SLACK && countedAtMs >= begun + Math.max(reachMs, CLEAR_MS);
    return { ...base, misfits: (u?.misfits ?? 0) + 1, ...(over ? { overrun: (u?.overrun ?? 0) + 1 } : {}) };
  }
  if (countedAtMs < begun + reachMs) return b.neighbour;
  const others = Math.max(0, held);
  if (u === undefined)
    return { count: 0, ms: 0, end: fig.resetAtMs, curCount: others, curMs: ms, figures: 1, windowMs };
  const figures = (u.figures ?? 0) + 1;
  if (u.end === fig.resetAtMs) {
    // The latest figure of a window covers the earlier ones; one counted earlier, overtaking, less.
    return ms >= u.curMs ? { ...u, curCount: others, curMs: ms, figures } : { ...u, figures };
  }
  if (fig.resetAtMs < u.end) return u;
  return {
    ...u,
    figures,
    most: twoLargest(u.most, u.curCount),
    windows: (u.windows ?? 0) * FADE + 1,
    count: u.count * FADE + u.curCount,
    ms: u.ms * FADE + u.curMs,
    end: fig.resetAtMs,
    curCount: others,
    curMs: ms,
  };
}

/**
 * How far into a window a figure must be counted, at least, for ours counted in it to be read
 * closely: ours sent together as it opened reach the server in any order for a round trip or so.
 */
const CLEAR_MS = 100;

/**
 * Whether a figure has held fewer requests than ours counted since the window its Reset ends
 * began. No fixed window does that, whoever else draws on it: it holds every request counted
 * since it began. Nor does a sliding log no shorter than the window: its Reset is when its oldest
 * leaves, rounded up, so every request since a span before Reset is still in it. Only a limiter that
 * gives room back as it goes does (a token bucket, GCRA), and it is read as one: Reset as "next
 * token at" lies at the next whole second whatever the bucket holds, as a one-second window's end
 * would, so nothing else in figures seconds apart tells the two apart.
 */
export function refillsAsItGoes(u: NeighbourUse | undefined): boolean {
  return (u?.overrun ?? 0) > 0;
}

/** Figures that must fit a window before others' use is read from them: a bucket soon misfits. */
const MIN_FIGURES = 3;

/**
 * Others' use of a window believed a neighbour's: at most this share of it (pro rata through it);
 * more is no neighbour's share but a limiter read wrongly.
 */
export const NEIGHBOUR_MAX = 0.5;

/** Ours counted in a window may be off by this many (started alongside a figure's own). */
const MISFIT_SLACK = 2;

/** The two largest of `most` and `n`. */
function twoLargest(most: readonly [number, number] | undefined, n: number): [number, number] {
  const [a, b] = most ?? [0, 0];
  return n >= a ? [n, a] : [a, Math.max(b, n)];
}

/**
 * Others' requests per second through a window at least, from what two windows were each seen to
 * hold: their requests come one at a time, and early in a window one of them reads as a pace many
 * times theirs (a neighbour taking one request of each one-second window read at 2.4/s), while
 * windows they drew on as much twice will be drawn on as much again. One window is not enough: a
 * token bucket read as a window shows others' use in a figure or two before it misfits. Null while
 * no two windows were seen to hold any, or a figure read no window others share.
 */
export function neighbourFloor(u: NeighbourUse | undefined): number | null {
  if (u === undefined || misfit(u) || u.windowMs === undefined) return null;
  const least = twoLargest(u.most, u.curCount)[1];
  return least > 0 ? (least * 1000) / u.windowMs : null;
}

/**
 * Others' requests figures must show a window to hold, on average, for their pace through it to be
 * read: each figure counts theirs to within one request, and one of theirs read early in a window
 * is a pace several times theirs (a neighbour taking one request of each one-second window read at
 * 2.4/s); what windows were seen to hold reads it until then (see neighbourFloor).
 */
const MIN_PER_WINDOW = 1;

/** Others' requests per second through a window, or null while too little is known. */
export function neighbourRate(u: NeighbourUse | undefined): number | null {
  if (u === undefined || misfit(u) || (u.figures ?? 0) < MIN_FIGURES) return null;
  const ms = u.ms + u.curMs;
  const counted = u.count + u.curCount;
  if (counted < MIN_PER_WINDOW * ((u.windows ?? 0) + 1)) return null;
  return ms < MIN_MS ? null : (counted * 1000) / ms;
}

/**
 * How much of a window a figure must have seen for others' pace so far through it to be read: a
 * few of theirs early in a window read as a pace several times theirs, ours held back for it went
 * out together at the next window's start, and a figure there, counting fewer of ours than were
 * sent, read others as taking more than any share: no window (10 s windows at 20/s, round trips
 * varying, then kept 1.39 of what is left).
 */
const SO_FAR_SHARE = 0.25;

/**
 * Others' requests per second so far through the window ending at `resetAtMs`, when the figures
 * have read enough of it; null otherwise. Until two windows are read (see neighbourFloor) nothing
 * else is kept for them, and ours spent the rest of the window's room at once while their pace
 * went on taking from it: in 10 s windows at 5/s from 3 workers, two of ours were refused at its end.
 */
export function neighbourSoFar(u: NeighbourUse | undefined, resetAtMs: number | null): number | null {
  if (u === undefined || misfit(u) || u.windowMs === undefined || u.end !== resetAtMs) return null;
  if (u.curMs < Math.max(MIN_MS, u.windowMs * SO_FAR_SHARE) || !(u.curCount > 0)) return null;
  return (u.curCount * 1000) / u.curMs;
}

/**
 * Figures that must fit a window for each that misfits, for others' use of it to be read still: a
 * token bucket read as a window misfits within a figure or two, while a window others share misfits
 * now and then, once round trips put a volley of ours on either side of its start. Read as a
 * misfit for good, a 1 s window at 50/s from 3 workers went back to the whole rate at the ninth
 * second and was refused 15 times in 813 requests.
 */
const MISFIT_ODDS = 4;

/** Whether the figures have read no window others share. */
function misfit(u: NeighbourUse): boolean {
  const misfits = u.misfits ?? 0;
  return misfits > 0 && misfits * MISFIT_ODDS > (u.figures ?? 0);
}
