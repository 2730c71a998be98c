import { clearOfFull, measure } from './measure.ts';
import { neighbourRate, refillsAsItGoes } from './neighbour.ts';
import { fitSpan, fittedSpan, logSpanMs, type SpanFit, spanBounds, startedAlongside } from './sent-log.ts';
import { sharedLog } from './shared-log.ts';
import type { BucketEstimate, BudgetState, LimiterGuess, RateObservation, Sample } from './types.ts';

// Learning a server bucket from its figures, whatever limiter runs behind them. The spec names the
// headers, not the algorithm, and `Reset` means different things to different limiters (a window's
// end, "full again at", "next token at"), so no single figure is trusted for the rate. Instead:
// - the rate is measured: between two figures of a bucket that was not full, the room that came
//   back is Remaining's change plus the requests we sent in between (grants are numbered, and each
//   figure is tied to the grant of the request it answered). Others' use of the bucket lowers it,
//   so what is measured is the rate left to us. A full bucket hides its refill, so spans that
//   touch full are not used; a span that never runs low only proves the rate is at least that;
// - the guess (window or bucket) says how room comes back between figures: all at once at Reset,
//   or a little at a time. Room coming back before Reset says bucket; Reset standing still while
//   time passes and nothing comes back says window; a 429 where a fresh window was expected says
//   bucket too.

const MAX_SAMPLES = 48;
const SAMPLE_SPAN_MS = 120_000;
const MAX_EVIDENCE = 8;

export function bucketKey(endpoint: string | null, limit: number): string {
  return `${endpoint ?? '*'}:${limit}`;
}

export function newBucket(limit: number, endpoint: string | null, at: number): BucketEstimate {
  return {
    limit,
    endpoint,
    guess: 'unknown',
    rate: null,
    measured: false,
    windowMs: null,
    evidence: { window: 0, bucket: 0 },
    samples: [],
    last: null,
    next: null,
    pausedUntilMs: 0,
    floorMs: 0,
    level: null,
    levelAt: at,
    seenAt: at,
  };
}

/** The bucket a figure on `endpoint` belongs to. */
export function placeFigure(s: BudgetState, endpoint: string, limit: number, limited: boolean): string {
  const own = bucketKey(endpoint, limit);
  if (s.buckets[own]) return own;
  const shared = bucketKey(null, limit);
  if (s.buckets[shared] || !limited || endpoint === 'runs.list') return shared;
  // A 429 naming a limit no runs-list page ever reported is the endpoint's own bucket.
  const anyShared = Object.values(s.buckets).some((b) => b.endpoint === null);
  return anyShared ? own : shared;
}

/** A guess needs two figures for it more than against it: one may be blurred by requests in flight. */
function guessOf(e: { window: number; bucket: number }): LimiterGuess {
  if (e.bucket >= e.window + 2) return 'bucket';
  if (e.window >= e.bucket + 2) return 'window';
  return 'unknown';
}

function bump(e: { window: number; bucket: number }, which: 'window' | 'bucket', by = 1) {
  const other = which === 'window' ? 'bucket' : 'window';
  return { [which]: Math.min(MAX_EVIDENCE, e[which] + by), [other]: Math.max(0, e[other] - (by > 1 ? 1 : 0)) } as {
    window: number;
    bucket: number;
  };
}

/**
 * What a new figure `o`, following `p`, says about how room comes back. Requests still on their
 * way when a figure was counted blur its balance (by as many as are in flight), so the balance
 * only speaks for a bucket past Reset, where a window would have come back whole.
 */
function weigh(b: BucketEstimate, p: Sample, o: Sample): { window: number; bucket: number } {
  let e = b.evidence;
  if (p.resetAtMs === null) return e;
  const used = o.seq - p.seq - (o.unsent - p.unsent);
  const cameBack = o.remaining - p.remaining + used;
  const clear = Math.max(3, Math.ceil(b.limit / 4));
  if (o.at < p.resetAtMs - 50) {
    // A window's Reset stands still until it passes; a bucket's moves with what it holds.
    if (o.resetAtMs !== null && Math.abs(o.resetAtMs - p.resetAtMs) >= 1000) e = bump(e, 'bucket');
    else if (cameBack <= 0 && o.at - p.at >= 400 && o.resetAtMs !== null && Math.abs(o.resetAtMs - p.resetAtMs) < 1000)
      e = bump(e, 'window');
  } else if (o.remaining < b.limit - used - clear && cameBack >= 1) {
    // Past the reset, a window would be whole again less what we sent since; only part came back.
    e = bump(e, 'bucket');
  }
  return e;
}

/**
 * Reset later by a second or more in a figure made before the earlier figure's Reset: a fixed
 * window's Reset stands still until it passes (a response counted earlier, overtaking, only shows
 * an earlier one), so the limiter is not a fixed window.
 */
function movedEarly(p: Sample, o: Sample): boolean {
  return p.resetAtMs !== null && o.resetAtMs !== null && o.at < p.resetAtMs - 50 && o.resetAtMs >= p.resetAtMs + 1000;
}

/**
 * Room come back between two figures before the earlier one's Reset, by more than requests in
 * flight could blur: a fixed window gives nothing back before its Reset.
 */
function refilledEarly(b: BucketEstimate, p: Sample, o: Sample): boolean {
  if (p.resetAtMs === null || o.at >= p.resetAtMs - 50) return false;
  const cameBack = o.remaining - p.remaining + o.seq - p.seq - (o.unsent - p.unsent);
  return cameBack > (p.alongside ?? 0) + (o.alongside ?? 0) + Math.max(2, Math.ceil(b.limit / 20));
}

/**
 * Window length from Reset stepping on between windows. Reset is given in whole seconds, so how
 * far off it lies from one figure says little; only steps are trusted. Figures may be windows
 * apart (probes come every few seconds), so a step is a whole number of windows: as many as the
 * requests between the figures need, at `limit` a window, and the window is the greatest common
 * divisor of the steps seen.
 */
function windowFrom(b: BucketEstimate, p: Sample | undefined, o: Sample): number | null {
  let w = b.windowMs;
  if (p?.resetAtMs != null && o.resetAtMs !== null && o.at >= p.resetAtMs && o.resetAtMs > p.resetAtMs) {
    const seconds = Math.round((o.resetAtMs - p.resetAtMs) / 1000);
    if (seconds <= 0) return w;
    // The windows after p's took the requests sent since p that p's window had no room for, and
    // o's window has Remaining left besides: at `limit` a window, at least this many windows.
    const later = o.seq - p.seq - (o.unsent - p.unsent) - p.remaining + o.remaining;
    let windows = Math.max(1, Math.ceil(later / b.limit));
    while (windows < seconds && seconds % windows !== 0) windows++;
    const step = (Math.floor(seconds / Math.min(windows, seconds)) || 1) * 1000;
    w = w === null ? step : gcd(w, step);
  }
  return w;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** A first figure's rate: the bucket refills to full by Reset, or a window of that length. */
function provisional(b: BucketEstimate, o: Sample): number | null {
  const w = b.windowMs ?? wholeSecondsTo(o);
  return w === null ? null : (b.limit * 1000) / w;
}

/**
 * Whole seconds, at least one, from a figure to its Reset, in ms. Reset comes in whole seconds,
 * rounded up: one figure just before a second's end would read a second too long (a window twice
 * as long, half the rate), so the seconds are rounded down.
 */
function wholeSecondsTo(o: Sample): number | null {
  return o.resetAtMs === null ? null : Math.max(1, Math.floor((o.resetAtMs - o.at) / 1000)) * 1000;
}

/** How much shorter than Reset's farthest whole seconds a sliding log's span may be found. */
const PLAUSIBLE = 0.95;

/** Misfits a sliding log's span may show (round trips that varied more than seen) and still be one. */
const MAX_MISFITS = 2;
/**
 * Figures that agree in a row, for each misfit seen, that outweigh the misfits: while round trips
 * are still being learned the tolerance is too tight, and a few early figures misfit a true log.
 */
const FIGURES_PER_MISFIT = 3;

function fitHolds(fit: SpanFit | undefined): boolean {
  const misfits = fit?.misfits ?? 0;
  return misfits <= MAX_MISFITS || (fit?.figures ?? 0) >= FIGURES_PER_MISFIT * misfits;
}

/**
 * Learns one figure. `seq` numbers the request it answered (see Sample); `surprised` is set for a
 * 429 the estimate said had room, which a window would have had. `started` says when the request
 * the figure answered started, and how far starts are off from counts, for a figure that counted it.
 */
export function learnBucket(
  b: BucketEstimate,
  obs: RateObservation,
  seq: number,
  unsent: number,
  surprised: boolean,
  started: { atMs: number; tolMs: number; latencyMs: number } | null = null,
): BucketEstimate {
  const prev = b.samples[b.samples.length - 1];
  if (prev && seq <= prev.seq) return { ...b, seenAt: Math.max(b.seenAt, obs.atMs) }; // overtaken by a newer one
  const sample: Sample = {
    at: obs.atMs,
    remaining: Math.max(0, obs.remaining ?? b.limit),
    resetAtMs: obs.resetAtMs,
    seq,
    unsent,
    ...(started === null
      ? {}
      : { start: started.atMs, alongside: startedAlongside(b.sent, started.atMs, started.tolMs) }),
  };
  const evidence = prev ? weigh(b, prev, sample) : b.evidence;
  const samples = [...b.samples.filter((x) => x.at >= obs.atMs - SAMPLE_SPAN_MS), sample].slice(-MAX_SAMPLES);
  const notWindow = b.notWindow === true || (prev !== undefined && movedEarly(prev, sample));
  const early = b.refilledEarly === true || (prev !== undefined && refilledEarly(b, prev, sample));
  const seen = started && { ...started, startedAtMs: started.atMs, held: b.limit - sample.remaining };
  const bounds = seen ? spanBounds(b.sent, { ...seen, resetAtMs: sample.resetAtMs }, logSpanMs(b, b.rate)) : null;
  const fit = bounds === null ? b.fit : fitSpan(b.fit, bounds, obs.atMs);
  const resetSpanMs = Math.max(b.resetSpanMs ?? 1000, wholeSecondsTo(sample) ?? 0);
  const span = fittedSpan(fit);
  // A sliding log kept busy in bursts looks like a window between its Resets: once Reset has been
  // seen moving on before it came, which no fixed window does, the limiter is never read as one.
  let guess: LimiterGuess = notWindow && guessOf(evidence) === 'window' ? 'unknown' : guessOf(evidence);
  // A fit far shorter than Reset has ever lain ahead is a token bucket drawn on in bursts: its
  // figures agree with a short log until the refill runs out.
  const sliding = span !== null && guess !== 'window' && fitHolds(fit) && span >= PLAUSIBLE * resetSpanMs;
  // A log others draw on too misfits the fit above, or fits it a span off the whole second (1.02 s)
  // while ours flow evenly, which a burst of ours then overruns: a reading with others steady in
  // it comes first, unless ours alone fit a whole second, which needs nobody else.
  const tol = { slackMs: started?.tolMs ?? 0, lateMs: started === null ? 0 : started.latencyMs + started.tolMs };
  const alone = sliding && span !== null && span % 1000 === 0;
  // A window others draw on, read as one by neighbour.ts, reads as a log too while ours go out
  // evenly through it.
  const windowShared = b.readRate !== undefined && neighbourRate(b.neighbour) !== null;
  // A token bucket held a little above empty reads as a log others draw on, with others misread
  // by its level (a tenth too high at 200/s when Reset is "next token at", which never lies far
  // on): once measured as a bucket, it is not read again as a log.
  const bucketMeasured = b.guess === 'bucket' && b.measured;
  const shared =
    guess === 'window' || alone || windowShared || bucketMeasured ? null : sharedLog(b, samples, resetSpanMs, tol);
  if (sliding || shared !== null) guess = 'sliding';
  else if (guess === 'sliding') guess = 'unknown';
  else if (guess === 'unknown' && refillsAsItGoes(b.neighbour)) guess = 'bucket';
  const windowMs = windowFrom(b, prev, sample);
  let rate = b.rate;
  let measured = b.measured;
  // A rate read from a log's span no longer holds once the figures stop reading as a log: it is
  // then no bound, and as open to a span's reading as a rate read from Reset (at 200/s from 3
  // workers, round trips varying, a token bucket read as a log of 0.95 s was kept at 1.05 of the
  // bucket's whole rate).
  let guessed = b.guessed === true || (b.guess === 'sliding' && guess !== 'sliding');
  // Figures that come only with 429s (an endpoint whose answers carry no headers) are each an empty
  // bucket after a burst and a pause: what was sent between two of them measures the pause, not
  // the rate, so such a bucket's rate is read from Reset alone.
  const refusalsOnly = samples.every((x) => x.remaining === 0);
  // Our own starts read a bucket's refill back only once the figures rule out a fixed window,
  // whose room comes back in steps at Reset rather than as it goes. Room that came back between
  // two figures is read as the refill only once the figures show a bucket: a window's or a log's
  // room that went unused between two low figures far apart was lost unseen, and what came back
  // was only what we used (a window's steps, read over a span that is no whole number of windows,
  // read lower still); so until then it only bounds the rate from below.
  const readBack = notWindow || guess === 'bucket' ? b.sent : undefined;
  const m = guess === 'window' || refusalsOnly ? null : measure(samples, b.limit, readBack, guess === 'bucket');
  if (m?.constrained) {
    // A span with blurred ends does not raise a rate it agrees with: read at its middle, a request
    // of a first volley counted just before the figure it started with reads as having come back
    // within the span, and paced above the refill, a bucket drained by detail fetches (whose
    // answers carry no figures) is found empty only by a 429.
    const agrees = rate !== null && m.blur !== undefined && rate < m.rate && rate >= m.rate - m.blur;
    if (!agrees) rate = m.rate;
    measured = true;
    guessed = false;
  } else if (m) {
    // Room to spare: the rate is at least this, and may be more.
    if (rate === null || m.rate > rate) {
      rate = m.rate;
      guessed = false;
    }
    measured = false;
  }
  if (early && guessed && guess === 'unknown' && !refusalsOnly && rate !== null) {
    // A rate read from Reset alone is the whole bucket's: when Reset is "next token at" it never
    // moves with what is held, and others' use never lowers it, so no figure tells the guess
    // apart and a bound below it never replaces it. Once room has come back before Reset, which
    // rules out a fixed window (whose unused room is lost unseen), a span drawn on throughout and
    // never near full hid nothing, and what came back in it is the refill less others' use.
    const steady = clearOfFull(samples, b.limit);
    if (steady !== null && steady.rate < rate) {
      rate = steady.rate;
      measured = true;
      guessed = false;
    }
  }
  if (guess === 'window' && windowMs !== null) {
    rate = (b.limit * 1000) / windowMs;
    measured = b.windowMs !== null && windowMs === b.windowMs && evidence.window >= 2;
    guessed = false;
  }
  if (shared !== null) {
    rate = ((b.limit - shared.others) * 1000) / shared.span;
    measured = true;
    guessed = false;
  } else if (sliding) {
    rate = (b.limit * 1000) / span;
    measured = true;
    guessed = false;
  }
  if (refusalsOnly && guess !== 'sliding' && guess !== 'window') {
    // Each refusal's Reset, in whole seconds rounded down, reads the rate high or right, never low.
    const read = provisional({ ...b, windowMs }, sample) ?? 0;
    if (read > (rate ?? 0)) guessed = true;
    rate = Math.max(rate ?? 0, read) || null;
  } else if (rate === null) {
    rate = provisional({ ...b, windowMs }, sample);
    guessed = rate !== null;
  } else if (surprised && !measured) rate *= 0.8;
  // A projected window stays while it is ahead of the figure, or while the figure (a response that
  // came back late) belongs to a window that ended before it began: its turns are counted there.
  // A window projected at a length the figures have since shown too short (9 s of a 10 s window,
  // from a first Reset's whole seconds) ends where a figure's window still runs: kept, it was
  // begun before the figure's window ended and given a whole limit on top of what that one had left.
  const earlier = sample.resetAtMs !== null && b.next !== null && sample.resetAtMs <= b.next.at;
  const projectedMs = b.next?.resetAtMs == null ? null : b.next.resetAtMs - b.next.at;
  const short = windowMs !== null && projectedMs !== null && projectedMs < windowMs;
  const ahead = b.next !== null && b.next.at > sample.at && !(sample.resetAtMs !== null && short);
  const next = earlier || ahead ? b.next : null;
  return {
    ...b,
    evidence,
    guess,
    notWindow,
    refilledEarly: early || undefined,
    fit,
    shared: shared ?? undefined,
    resetSpanMs,
    windowMs,
    rate,
    measured,
    guessed,
    samples,
    last: sample,
    next,
    seenAt: obs.atMs,
  };
}
