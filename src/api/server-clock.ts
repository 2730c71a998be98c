import type { HeaderMap } from '../budget/types.ts';
import type { Micros } from '../util/timestamp.ts';

// The API's clock, as read from the Date header of its responses. Windows of created time, their
// cap and the lookback are compared with the API's own timestamps, and X-RateLimit-Reset is a time
// on the API's clock: read against this machine's clock, a clock minutes off would lose runs or
// wait for nothing. So runsync keeps the offset between the two clocks and works on the API's.
//
// The model: a response's Date (whole seconds, rounded down) was stamped between the request's
// sending and its answer's arrival on this machine's clock, so each response bounds the offset
// (API minus local) to an interval, [Date - arrived, Date + 1 s - sent]. The intersection of the
// intervals seen narrows to a few milliseconds within a handful of responses. The offset used is
// the point of it nearest to zero: clocks that agree as far as the responses can tell are taken to
// agree exactly, and a skew is corrected by no more than the responses prove. Intervals that no
// longer meet mean a clock was stepped (NTP, a suspended VM): the estimate starts again from the
// latest response.

export interface ClockReading {
  /** The API's clock minus this machine's, in milliseconds; null before any response carried Date. */
  offsetMs: number | null;
  /** The width of the interval the offset is known within, in milliseconds. */
  uncertaintyMs: number | null;
}

/** Offsets this large or larger are worth telling the operator about. */
export const NOTABLE_SKEW_MS = 2000;

export class ServerClock {
  private lo = Number.NEGATIVE_INFINITY;
  private hi = Number.POSITIVE_INFINITY;

  constructor(private readonly localMs: () => number = Date.now) {}

  /** Learns from one response: its Date header, and when its request was sent and answered. */
  observe(date: string | null, sentAtMs: number, arrivedAtMs: number): void {
    if (date === null) return;
    const stamped = Date.parse(date);
    if (!Number.isFinite(stamped)) return;
    const lo = stamped - arrivedAtMs;
    const hi = stamped + 1000 - sentAtMs;
    if (lo > this.hi || hi < this.lo) {
      this.lo = lo;
      this.hi = hi;
      return;
    }
    this.lo = Math.max(this.lo, lo);
    this.hi = Math.min(this.hi, hi);
  }

  reading(): ClockReading {
    if (!Number.isFinite(this.lo)) return { offsetMs: null, uncertaintyMs: null };
    const nearestZero = Math.min(this.hi, Math.max(this.lo, 0));
    return { offsetMs: Math.round(nearestZero), uncertaintyMs: Math.round(this.hi - this.lo) };
  }

  get known(): boolean {
    return Number.isFinite(this.lo);
  }

  /** The offset in milliseconds (0 while unknown). */
  offsetMs(): number {
    return this.reading().offsetMs ?? 0;
  }

  /** Now on the API's clock, in microseconds. */
  now(): Micros {
    return Math.round((this.localMs() + this.offsetMs()) * 1000);
  }

  /**
   * A response's headers with its times moved onto this machine's clock: X-RateLimit-Reset as a
   * Unix time, and Retry-After as an HTTP date. A Reset given in seconds left, and a Retry-After in
   * seconds, need no change.
   */
  toLocal(headers: HeaderMap): HeaderMap {
    const offset = this.offsetMs();
    if (offset === 0) return headers;
    const out: Record<string, string | string[] | undefined> = { ...headers };
    const reset = single(headers['x-ratelimit-reset']);
    if (reset !== null && /^\s*\d+(\.\d+)?\s*$/.test(reset)) {
      const n = Number(reset);
      // The magnitudes budget/headers.ts tells apart: a Unix time in seconds, or in milliseconds.
      if (n >= 1e12) out['x-ratelimit-reset'] = String(n - offset);
      else if (n >= 1e9) out['x-ratelimit-reset'] = String((n * 1000 - offset) / 1000);
    }
    const retry = single(headers['retry-after']);
    if (retry !== null && !/^\s*\d+(\.\d+)?\s*$/.test(retry)) {
      const at = Date.parse(retry);
      if (Number.isFinite(at))
        out['retry-after'] = String(Math.max(0, Math.ceil((at - offset - this.localMs()) / 1000)));
    }
    return out;
  }
}

function single(v: string | string[] | undefined): string | null {
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}
