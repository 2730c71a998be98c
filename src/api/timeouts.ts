// How long a request may take before it is abandoned and retried like a 5xx. Each phase has a
// ceiling the operator sets (RUNSYNC_CONNECT_TIMEOUT, RUNSYNC_HEADERS_TIMEOUT, RUNSYNC_BODY_TIMEOUT,
// RUNSYNC_REQUEST_TIMEOUT). Within the ceilings, the waits for the headers and for the body follow
// what this endpoint's answers have taken lately: a request that has waited STALL_FACTOR times
// longer than nearly all of them (the 95th percentile) has hung, not queued. A load balancer that
// takes a connection and never answers, or a body that stops half-way, then costs a few seconds,
// not the ceiling, and only the request that hung waits; everything else goes on beside it.

import { DEFAULT_TIMEOUTS, type TimeoutSettings } from '../config/timeouts.ts';

export { DEFAULT_TIMEOUTS, type TimeoutSettings } from '../config/timeouts.ts';

/** A request slower than this many times the recent 95th percentile has hung. */
export const STALL_FACTOR = 8;
/** The shortest wait ever set, whatever the recent answers took. */
export const STALL_FLOOR_MS = 2000;
/**
 * Answers an endpoint needs before its own figure is trusted; until then, the figure of every
 * endpoint's answers together, and before any answer at all, COLD_MS.
 */
const SAMPLES_MIN = 10;
const COLD_MS = 10_000;
const ANY = '*';
/** Recent answers kept, per endpoint and phase. */
const SAMPLES_KEPT = 200;

class Recent {
  private readonly values: number[] = [];
  private next = 0;

  add(ms: number): void {
    if (this.values.length < SAMPLES_KEPT) this.values.push(ms);
    else this.values[this.next] = ms;
    this.next = (this.next + 1) % SAMPLES_KEPT;
  }

  /** The 95th percentile, or null with too few samples. */
  p95(): number | null {
    if (this.values.length < SAMPLES_MIN) return null;
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))] as number;
  }
}

export interface AttemptTimeouts {
  headersMs: number;
  bodyMs: number;
}

export class RequestTimeouts {
  private readonly headers = new Map<string, Recent>();
  private readonly bodies = new Map<string, Recent>();

  constructor(readonly settings: Readonly<TimeoutSettings> = DEFAULT_TIMEOUTS) {}

  /** The waits for one attempt at `endpoint`. */
  forAttempt(endpoint: string): AttemptTimeouts {
    return {
      headersMs: this.limit(this.headers, endpoint, this.settings.headersMs),
      bodyMs: this.limit(this.bodies, endpoint, this.settings.bodyMs),
    };
  }

  /** An answer that came whole: how long its headers took, and then its body. */
  answered(endpoint: string, headersMs: number, bodyMs: number): void {
    for (const e of [endpoint, ANY]) {
      this.of(this.headers, e).add(headersMs);
      this.of(this.bodies, e).add(bodyMs);
    }
  }

  /**
   * How long an answer of `endpoint` takes at most, nearly always: the 95th percentiles of its
   * waits for headers and body, added (null before enough answers).
   */
  usualMs(endpoint: string): number | null {
    const h = this.headers.get(endpoint)?.p95() ?? this.headers.get(ANY)?.p95() ?? null;
    const b = this.bodies.get(endpoint)?.p95() ?? this.bodies.get(ANY)?.p95() ?? null;
    return h === null || b === null ? null : h + b;
  }

  private limit(map: Map<string, Recent>, endpoint: string, ceiling: number): number {
    const p95 = map.get(endpoint)?.p95() ?? map.get(ANY)?.p95() ?? null;
    const learned = p95 === null ? COLD_MS : Math.max(STALL_FLOOR_MS, STALL_FACTOR * p95);
    return Math.min(ceiling, learned);
  }

  private of(map: Map<string, Recent>, endpoint: string): Recent {
    let r = map.get(endpoint);
    if (!r) {
      r = new Recent();
      map.set(endpoint, r);
    }
    return r;
  }
}
