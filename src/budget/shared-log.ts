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
// whole seconds, so the span read is the shortest whole second from Reset's that leaves every
// figure's others at least none, and theirs agreeing from figure to figure, as a steady
// neighbour's do. A shorter span than the true one only paces more evenly. A token bucket held at
// one level reads the same way, with others misread by how far it is from empty; its "full again
// at" lies further on than a log's Reset can, which tells it apart.

export interface SharedLog {
  /** The span the log keeps, ms. */
  span: number;
  /** Others' requests the log holds at any time, as the recent figures read them (a mean). */
  others: number;
}

/** Figures, far enough apart to count apart, that must read the same others' use. */
const FIGURES = 3;
/** The most recent figures read. */
const RECENT = 12;
/** Whole seconds tried beyond Reset's own. */
const LONGER = 3;
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
/** Closely read figures the mean of others' use rests on. */
const SHARP_FIGURES = 2;

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
function readings(b: BucketEstimate, samples: readonly Sample[], span: number, tolMs: number): Reading[] {
  return readable(b, samples, span).map((x) => {
    const start = x.start as number;
    // Ours started with a figure's own were counted before it or after, in any order: theirs lie
    // between what it held less all of ours and that plus those.
    const low = b.limit - x.remaining - oursInFigure(b.sent, start, start, span);
    // The log's oldest, ours or theirs, is no younger than our oldest in it, and leaves a span
    // after it was counted: Reset, rounded up to a second, lies less than a second beyond. A
    // token bucket's "full again at" lies further on while it holds more than a span's refill.
    const oldest = oldestWithin(b, start, span);
    const late = oldest !== null && x.resetAtMs !== null && x.resetAtMs >= oldest + span + 1000 + tolMs;
    return { low, high: low + (x.alongside ?? 0), sharp: (x.alongside ?? 0) <= SHARP, late };
  });
}

function fits(r: Reading, others: number): boolean {
  const off = spreadAllowed(others) / 2;
  return r.low - off <= others && r.high + off >= others;
}

/**
 * The log read as shared with others, or null while the figures do not read as one. A reading
 * found stands while each new figure agrees with it: the figures that found it may have left the
 * recent ones, and a neighbour's steady use does not change because fewer figures show it.
 */
export function sharedLog(
  b: BucketEstimate,
  samples: readonly Sample[],
  resetSpanMs: number,
  tolMs: number,
): SharedLog | null {
  for (let k = 0; k <= LONGER; k++) {
    const span = resetSpanMs + k * 1000;
    const all = readings(b, samples, span, tolMs);
    // More of ours within the span than a figure can have held: the span is shorter than tried.
    if (all.some((r) => r.high < -1)) break;
    if (all.some((r) => r.late)) continue;
    // The newest figures that agree: a neighbour our first burst turned away showed less use.
    for (let n = all.length; n >= FIGURES; n--) {
      const read = all.slice(0, n);
      const others = read.filter((r) => r.sharp).map((r) => (r.low + r.high) / 2);
      // Where every figure's range holds it, theirs is known closer than any one figure tells.
      const lo = Math.max(...read.map((r) => r.low));
      const hi = Math.min(...read.map((r) => r.high));
      let mean = others.reduce((m, o) => m + o, 0) / others.length;
      if (others.length < SHARP_FIGURES) {
        if (!(lo <= hi && hi - lo <= spreadAllowed(lo))) continue;
        mean = (lo + hi) / 2;
      } else if (lo <= hi) mean = Math.min(hi, Math.max(lo, mean));
      // Others taking half the log, or reading unevenly, is no neighbour's share at this span.
      if (mean > NEIGHBOUR_MAX * b.limit || read.some((r) => !fits(r, mean))) continue;
      return mean < seen(b.limit) ? null : { span, others: mean };
    }
  }
  const kept = b.shared;
  if (kept === undefined || kept.span < resetSpanMs) return null;
  const newest = readings(b, samples.slice(-1), kept.span, tolMs)[0];
  return newest === undefined || (!newest.late && fits(newest, kept.others)) ? kept : null;
}
