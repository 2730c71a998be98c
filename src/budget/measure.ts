import type { Sample, SentEntry } from './types.ts';

// Measuring how fast a bucket's room comes back, from its figures: between two figures, the room
// that came back is Remaining's change plus the requests we sent in between (each figure is tied to
// the grant of the request it answered). Others' use of the bucket lowers it, so what is measured
// is the rate left to us. A full bucket hides its refill, so a span where it may have been full
// only proves the rate is at least what it shows.

/** Spans shorter than this measure too little to trust. */
export const MIN_SPAN_MS = 1_500;

/** A bucket counts as full (its refill hidden) when this close to its limit. */
export function fullMargin(limit: number): number {
  return Math.max(2, Math.ceil(limit * 0.1));
}

interface Measure {
  rate: number;
  /** True when every figure after the first showed the bucket below full. */
  constrained: boolean;
  /**
   * How far off the rate may be either way, per second, when the span's ends are figures whose
   * requests started with others of ours (Sample.alongside): those may have been counted on either
   * side of them, in any order, so what came back between them is known only to within as many.
   */
  blur?: number;
}

/**
 * The rate measured over the longest recent span our own starts show the bucket never full in
 * (when `log` is given); else, for a bucket known to refill as it goes (`refills`), over the
 * longest recent span where it stayed low (what came back was all used, so it is all counted);
 * else the best lower bound, from the spans between figures.
 */
export function measure(
  samples: readonly Sample[],
  limit: number,
  log?: readonly SentEntry[],
  refills = true,
): Measure | null {
  const traced = neverFull(samples, limit, log);
  if (traced !== null) return traced;
  if (!refills) return lowerBound(samples);
  const newest = samples[samples.length - 1];
  if (!newest || newest.remaining > lowMark(limit)) return clearOfFull(samples, limit) ?? lowerBound(samples);
  let start = samples.length - 1;
  while (start > 0 && (samples[start - 1] as Sample).remaining <= lowMark(limit)) start--;
  return blurred(samples[start] as Sample, newest) ?? lowerBound(samples);
}

/** The span's rate, read as in `span`, with how far its ends blur it. */
function blurred(a: Sample, b: Sample): Measure | null {
  const m = span(a, b, true);
  const off = (a.alongside ?? 0) + (b.alongside ?? 0);
  return m === null || off === 0 ? m : { ...m, blur: (off * 1000) / (b.at - a.at) };
}

/** How far apart figures may lie, and how long a span of them must be, to show a bucket never full. */
const CLEAR_GAP_MS = 2_000;
const CLEAR_SPAN_MS = 4_000;

/**
 * The rate over the newest span whose figures all stayed clear of full, close together, with our
 * requests going out between each two: the bucket was drawn on throughout and never full, so
 * nothing that came back was hidden, and what came back is its refill less others' use of it.
 */
export function clearOfFull(samples: readonly Sample[], limit: number): Measure | null {
  const full = limit - fullMargin(limit);
  let start = samples.length - 1;
  if (start < 0 || (samples[start] as Sample).remaining > full) return null;
  while (start > 0) {
    const a = samples[start - 1] as Sample;
    const b = samples[start] as Sample;
    if (a.remaining > full || b.at - a.at > CLEAR_GAP_MS || b.seq - a.seq - (b.unsent - a.unsent) < 1) break;
    start--;
  }
  const first = samples[start] as Sample;
  const newest = samples[samples.length - 1] as Sample;
  return newest.at - first.at < CLEAR_SPAN_MS ? null : blurred(first, newest);
}

/** A bucket this low is being drawn as fast as it refills. */
function lowMark(limit: number): number {
  return Math.max(1, Math.floor(limit / 4));
}

function lowerBound(samples: readonly Sample[]): Measure | null {
  let best: Measure | null = null;
  for (let i = 0; i < samples.length; i++) {
    for (let j = i + 1; j < samples.length; j++) {
      const m = windowed(samples[i] as Sample, samples[j] as Sample);
      if (m) {
        if (best === null || m.rate > best.rate) best = m;
        break;
      }
    }
  }
  return best;
}

/**
 * A span's rate, no more than what came back per second of Reset's own steps: a window's room comes
 * back whole at each Reset, so a span holding one more Reset than its length's share reads high by
 * a window's worth, while Reset moves on by exactly the windows it crossed. A bucket's Reset moves
 * with what it holds, and the lesser reading is still a bound.
 */
function windowed(a: Sample, b: Sample): Measure | null {
  // Ours started with `b`'s own may not be counted in it yet: a bound counts none of them as used.
  const m = span(a, { ...b, unsent: b.unsent + (b.alongside ?? 0) }, false);
  if (m === null || a.resetAtMs === null || b.resetAtMs === null) return m;
  const stepped = b.resetAtMs - a.resetAtMs;
  if (stepped < MIN_SPAN_MS) return m;
  return { ...m, rate: Math.min(m.rate, (m.rate * (b.at - a.at)) / stepped) };
}

function span(a: Sample, b: Sample, constrained: boolean): Measure | null {
  const used = b.seq - a.seq - (b.unsent - a.unsent);
  if (b.at - a.at < MIN_SPAN_MS || used < 3) return null;
  const cameBack = b.remaining - a.remaining + used;
  if (cameBack <= 0) return null;
  return { rate: (cameBack * 1000) / (b.at - a.at), constrained };
}

/**
 * The rate over the longest recent span that our own starts show the bucket never came near full
 * in. Read back from the newest figure at the span's rate, the bucket held, just before each of our
 * starts, Remaining plus what we started since less what came back since; only a full bucket turns
 * refill away, so if that never comes near the limit the span hid nothing and its rate is the
 * refill less others' use, however far apart the figures lie. The log must reach back past the
 * span's first figure, or starts it no longer holds would go uncounted.
 */
function neverFull(samples: readonly Sample[], limit: number, log: readonly SentEntry[] | undefined): Measure | null {
  const b = samples[samples.length - 1];
  const oldest = log?.[0];
  if (b?.start === undefined || log === undefined || oldest === undefined) return null;
  const full = limit - fullMargin(limit);
  let first = samples.length - 1;
  while (first > 0 && (samples[first - 1] as Sample).remaining <= full) first--;
  if (b.remaining > full) return null;
  for (let i = first; i < samples.length - 1; i++) {
    const a = samples[i] as Sample;
    if (a.start === undefined || a.start <= oldest[0]) continue;
    const m = span(a, b, true);
    if (m === null || !sharp(a, b)) continue;
    // Of ours started with `a`, those counted after it were sent within the span; of those started
    // with `b`, those counted after it were not: halfway between is the likeliest.
    const shift = ((a.alongside ?? 0) - (b.alongside ?? 0)) / 2;
    const rate = m.rate + (shift * 1000) / (b.at - a.at);
    if (rate > 0 && heldBelow(log, a.start, b, rate, full)) return { ...m, rate };
  }
  return null;
}

/** How far what came back between two figures may be off, as a share of it, and still be read. */
const SHARP = 0.02;

/** Whether the requests counted between two figures are known closely enough (see Sample.alongside). */
function sharp(a: Sample, b: Sample): boolean {
  const cameBack = b.remaining - a.remaining + b.seq - a.seq - (b.unsent - a.unsent);
  return (a.alongside ?? 0) + (b.alongside ?? 0) <= SHARP * cameBack;
}

/** Whether, read back from `b` at `rate`, the bucket held at most `full` before each start after `fromMs`. */
function heldBelow(log: readonly SentEntry[], fromMs: number, b: Sample, rate: number, full: number): boolean {
  const to = b.start as number;
  let since = 0;
  for (let i = log.length - 1; i >= 0; i--) {
    const [at, count] = log[i] as SentEntry;
    if (at > to) continue;
    if (at <= fromMs) break;
    since += count;
    if (b.remaining + since - (rate * (to - at)) / 1000 > full) return false;
  }
  return true;
}
