import { NEIGHBOUR_MAX } from './neighbour.ts';
import { oursInFigure } from './sent-log.ts';
import type { BucketEstimate, Sample } from './types.ts';

// A sliding log another consumer draws on too (an organization's). Each figure's count is ours
// within the span plus theirs, so the span fit of sent-log.ts, which reads every request the log
// held as ours, reads a longer span (1.25-2.3 s for a one-second log of which a neighbour takes a
// fifth), and its figures soon disagree. Our own starts alone cannot tell a span from others' use
// while ours flow evenly: any span a little longer, with fewer of theirs, fits as well. Two things
// still bound it: Reset, when the log's oldest leaves rounded up, never lies further ahead of a
// figure than the span and a second, so its whole seconds bound the span from below whoever the
// oldest is; and no figure can have held fewer than ours within the span. Limits are quoted in
// whole seconds, so the span read is Reset's whole seconds (a longer one, tried, read a token
// bucket of a large burst as a log of a few seconds that others take much of), with every figure's
// others at least none, and theirs agreeing from figure to figure, as a steady neighbour's do. A
// shorter span than the true one only paces more evenly. A token bucket held at one level reads
// the same way, with others misread by how far it is from empty; its "full again at" lies further
// on than a log's Reset can, which tells it apart.

export interface SharedLog {
  /** The span the log keeps, ms. */
  span: number;
  /** Others' requests the log holds at any time, as the recent figures read them (their middle). */
  others: number;
}

/** Figures, far enough apart to count apart, that must read the same others' use. */
const FIGURES = 3;
/** The most recent figures read. */
const RECENT = 12;
/** Figures closer than this read as one: a volley of refusals answered at once. */
const APART_MS = 100;
/**
 * How far figures' readings of others may differ and still be a steady neighbour's: whole
 * requests at either end of the span, and ours counted a request off either way.
 */
function spreadAllowed(others: number): number {
  return 3 + 0.15 * others;
}

/** Others' requests a log must be seen to hold before it is read as shared: fewer is rounding. */
function seen(limit: number): number {
  return Math.max(1, 0.05 * limit);
}

/** Recent figures whose request's start is known and whose span the log of our starts covers. */
function readable(b: BucketEstimate, samples: readonly Sample[], span: number): Sample[] {
  const oldest = b.sent?.[0];
  if (oldest === undefined) return [];
  const out: Sample[] = [];
  for (let i = samples.length - 1; i >= 0 && out.length < RECENT; i--) {
    const x = samples[i] as Sample;
    if (x.start === undefined || x.start - span < oldest[0]) continue;
    const newer = out[out.length - 1];
    if (newer !== undefined && newer.at - x.at < APART_MS) continue;
    out.push(x);
  }
  return out;
}

/** Ours started with a figure's own that may have been counted after it, for a figure read closely. */
const SHARP = 1;
/** Closely read figures the reading of others' use rests on. */
const SHARP_FIGURES = 2;
/** The share of figures that may misread others' use. */
const MISFITS = 0.25;

/** How far our starts may be off from the server's counts, and how late a Reset may lie beyond. */
export interface Tolerance {
  slackMs: number;
  lateMs: number;
}

interface Reading {
  low: number;
  high: number;
  sharp: boolean;
  /** Reset lies further on than a log of this span that held our oldest within it allows. */
  late: boolean;
}

/** Our oldest start within `span` before `atMs` (the latest of its entry, the later side). */
function oldestWithin(b: BucketEstimate, atMs: number, span: number): number | null {
  for (const e of b.sent ?? []) if (e[0] > atMs - span && e[0] <= atMs) return e[0];
  return null;
}

/** Others' use each recent figure shows at `span`, as a range (see below). */
function readings(b: BucketEstimate, samples: readonly Sample[], span: number, tol: Tolerance): Reading[] {
  return readable(b, samples, span).map((x) => {
    const start = x.start as number;
    // Ours started with a figure's own were counted before it or after, in any order: theirs lie
    // between what it held less all of ours and that plus those.
    const high = b.limit - x.remaining - oursInFigure(b.sent, start, start, span) + (x.alongside ?? 0);
    // Ours started just over a span before it may still have been counted, as round trips vary.
    const low = high - (x.alongside ?? 0) - oursInFigure(b.sent, start - span, start - span, tol.slackMs);
    // The log's oldest, ours or theirs, is no younger than our oldest in it, and leaves a span
    // after it was counted: Reset, rounded up to a second, lies less than a second beyond. A
    // token bucket's "full again at" lies further on while it holds more than a span's refill.
    const oldest = oldestWithin(b, start, span);
    const late = oldest !== null && x.resetAtMs !== null && x.resetAtMs >= oldest + span + 1000 + tol.lateMs;
    return { low, high, sharp: high - low <= SHARP, late };
  });
}

function fits(r: Reading, others: number): boolean {
  const off = spreadAllowed(others) / 2;
  return r.low - off <= others && r.high + off >= others;
}

/**
 * The log read as shared with others, or null while the figures do not read as one. A reading
 * found stands while most of the newest figures agree with it: the figures that found it may have
 * left the recent ones, and a neighbour's steady use does not change because fewer figures show it.
 */
export function sharedLog(
  b: BucketEstimate,
  samples: readonly Sample[],
  resetSpanMs: number,
  tol: Tolerance,
): SharedLog | null {
  const fresh = readAgreeing(b, readings(b, samples, resetSpanMs, tol));
  if (fresh !== undefined) return fresh === null ? null : { span: resetSpanMs, others: fresh };
  const kept = b.shared;
  if (kept === undefined || kept.span < resetSpanMs) return null;
  const newest = readings(b, samples, kept.span, tol).slice(0, FIGURES);
  // A figure or two is not most: at a few requests a second figures come seconds apart, the log of
  // our starts reaches back over only the newest of them, and one misfit dropped a reading that
  // several had found (at 5/s in one-second windows from 3 workers, others' use was then read
  // through windows from refusals, which come just after theirs: 2.4/s for 1/s).
  return misfits(newest, kept.others) * 2 > Math.max(newest.length, FIGURES) ? null : kept;
}

/**
 * Others' use the newest figures that agree read, null when it is too little to be anyone's, or
 * undefined when the figures read no log shared with a steady neighbour.
 */
function readAgreeing(b: BucketEstimate, all: readonly Reading[]): number | null | undefined {
  // More of ours within the span than a figure can have held, or a Reset no log gives: no log of
  // this span, whoever else draws on it.
  if (all.some((r) => r.high < -1 || r.late)) return undefined;
  // The newest figures that agree: a neighbour our first burst turned away showed less use.
  for (let n = all.length; n >= FIGURES; n--) {
    const read = all.slice(0, n);
    const others = othersOf(read);
    // Others taking half the log, or reading unevenly, is no neighbour's share. A figure or two
    // may misread it: ours from three workers are counted in any order, and a neighbour a burst of
    // ours turned away held less for a span.
    if (others === null || others > NEIGHBOUR_MAX * b.limit || misfits(read, others) > MISFITS * n) continue;
    return others < seen(b.limit) ? null : others;
  }
  return undefined;
}

/** Figures whose range does not hold `others`, or whose Reset no log allows. */
function misfits(read: readonly Reading[], others: number): number {
  return read.filter((r) => r.late || !fits(r, others)).length;
}

/**
 * Others' use the figures read: the middle of the closely read ones, within where every figure's
 * range holds it when there is such a place (theirs is then known closer than any one figure
 * tells); with too few read closely, that place alone, when narrow.
 */
function othersOf(read: readonly Reading[]): number | null {
  const sharp = read
    .filter((r) => r.sharp)
    .map((r) => (r.low + r.high) / 2)
    .sort((a, b) => a - b);
  const lo = Math.max(...read.map((r) => r.low));
  const hi = Math.min(...read.map((r) => r.high));
  if (sharp.length < SHARP_FIGURES) return lo <= hi && hi - lo <= spreadAllowed(lo) ? (lo + hi) / 2 : null;
  const mid = sharp.length / 2;
  const median =
    sharp.length % 2 === 1
      ? (sharp[Math.floor(mid)] as number)
      : ((sharp[mid - 1] as number) + (sharp[mid] as number)) / 2;
  return lo <= hi ? Math.min(hi, Math.max(lo, median)) : median;
}
