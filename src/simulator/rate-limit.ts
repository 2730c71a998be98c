import { createLimiter, type Limiter, type RateModel } from './limiters.ts';

// Rate limits per key, per organization and per endpoint, on real (wall) time: clients pace
// themselves in real seconds whatever the simulated clock says. Every bucket a request falls in must
// have room; the headers report the one with the least room left, as the spec's "active bucket".
// A neighbour, another consumer of the same organization, can draw from the organization's bucket,
// so its use lowers Remaining without any request of ours.

export interface Bucket {
  /** Requests per window; for bucket models, the refill of one window. */
  limit: number;
  windowSeconds: number;
  /** Default: the config's `model`. */
  model?: RateModel;
  /** Bucket models: capacity (X-RateLimit-Limit); default `limit`. */
  burst?: number;
}

export interface RateLimitConfig {
  /** The algorithm of every bucket that does not name its own. */
  model: RateModel;
  perKey: Bucket | null;
  perOrg: Bucket | null;
  perEndpoint: Record<string, Bucket>;
  /** Requests per second another consumer of each organization takes from its bucket. */
  neighbourPerSecond: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitConfig = {
  model: 'fixed',
  perKey: { limit: 50, windowSeconds: 1 },
  perOrg: null,
  perEndpoint: {},
  neighbourPerSecond: 0,
};

export interface RateDecision {
  allowed: boolean;
  /** The limit of the active bucket: the one with the least room left. */
  limit: number;
  remaining: number;
  /** Unix time, in seconds, of the active bucket's reset (what that is depends on the model). */
  reset: number;
  /** Whole seconds to wait, when refused. */
  retryAfter: number;
}

/** Neighbour requests are replayed at most this far back when nothing asked for a while. */
const NEIGHBOUR_CATCH_UP_MS = 10_000;

export class SimRateLimiter {
  private readonly limiters = new Map<string, Limiter>();
  private readonly neighbourAt = new Map<string, number>();
  private current: RateLimitConfig;

  constructor(config: RateLimitConfig) {
    this.current = config;
  }

  get config(): RateLimitConfig {
    return this.current;
  }

  /** A new configuration starts every bucket afresh. */
  set config(config: RateLimitConfig) {
    this.current = config;
    this.limiters.clear();
    this.neighbourAt.clear();
  }

  private limiter(name: string, b: Bucket): Limiter {
    let l = this.limiters.get(name);
    if (!l) {
      l = createLimiter({
        model: b.model ?? this.current.model,
        limit: b.limit,
        windowSeconds: b.windowSeconds,
        burst: b.burst ?? b.limit,
      });
      this.limiters.set(name, l);
    }
    return l;
  }

  /** Replays the neighbour's requests up to `now`, evenly spaced, each taken if the bucket has room. */
  private neighbour(name: string, limiter: Limiter, nowMs: number): void {
    const rate = this.current.neighbourPerSecond;
    if (!(rate > 0)) return;
    const step = 1000 / rate;
    let t = Math.max(this.neighbourAt.get(name) ?? nowMs, nowMs - NEIGHBOUR_CATCH_UP_MS);
    for (; t + step <= nowMs; t += step) if (limiter.room(t + step) >= 1) limiter.take(t + step);
    this.neighbourAt.set(name, t);
  }

  check(keyId: string, org: string, endpoint: string, nowMs: number): RateDecision | null {
    const c = this.current;
    const states: Limiter[] = [];
    if (c.perKey) states.push(this.limiter(`key:${keyId}`, c.perKey));
    if (c.perOrg) {
      const l = this.limiter(`org:${org}`, c.perOrg);
      this.neighbour(`org:${org}`, l, nowMs);
      states.push(l);
    }
    const ep = c.perEndpoint[endpoint];
    if (ep) states.push(this.limiter(`ep:${keyId}:${endpoint}`, ep));
    if (states.length === 0) return null;

    const full = states.filter((l) => l.room(nowMs) < 1);
    if (full.length > 0) {
      const latest = full.reduce((a, l) => (l.freeAt(nowMs) > a.freeAt(nowMs) ? l : a));
      return {
        allowed: false,
        limit: latest.capacity,
        remaining: 0,
        reset: Math.ceil(latest.resetAt(nowMs) / 1000),
        retryAfter: Math.max(1, Math.ceil((latest.freeAt(nowMs) - nowMs) / 1000)),
      };
    }
    for (const l of states) l.take(nowMs);
    const active = states.reduce((a, l) => (l.room(nowMs) < a.room(nowMs) ? l : a));
    return {
      allowed: true,
      limit: active.capacity,
      remaining: active.room(nowMs),
      reset: Math.ceil(active.resetAt(nowMs) / 1000),
      retryAfter: 0,
    };
  }
}
