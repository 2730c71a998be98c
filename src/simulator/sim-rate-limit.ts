// Fixed-window rate limits per key, per organization and per endpoint, on real (wall) time: clients
// pace themselves in real seconds whatever the simulated clock says.

export interface Bucket {
  limit: number;
  windowSeconds: number;
}

export interface RateLimitConfig {
  perKey: Bucket | null;
  perOrg: Bucket | null;
  perEndpoint: Record<string, Bucket>;
}

export const DEFAULT_RATE_LIMIT: RateLimitConfig = {
  perKey: { limit: 50, windowSeconds: 1 },
  perOrg: null,
  perEndpoint: {},
};

export interface RateDecision {
  allowed: boolean;
  /** The limit of the active bucket: the one with the least room left. */
  limit: number;
  remaining: number;
  /** Unix time, in seconds, when the active bucket's window ends. */
  reset: number;
  /** Whole seconds to wait, when refused. */
  retryAfter: number;
}

interface Window {
  start: number;
  count: number;
}

export class SimRateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(public config: RateLimitConfig) {}

  check(keyId: string, org: string, endpoint: string, nowMs: number): RateDecision | null {
    const buckets: [string, Bucket][] = [];
    if (this.config.perKey) buckets.push([`key:${keyId}`, this.config.perKey]);
    if (this.config.perOrg) buckets.push([`org:${org}`, this.config.perOrg]);
    const ep = this.config.perEndpoint[endpoint];
    if (ep) buckets.push([`ep:${keyId}:${endpoint}`, ep]);
    if (buckets.length === 0) return null;

    const states = buckets.map(([name, b]) => {
      const size = b.windowSeconds * 1000;
      const start = Math.floor(nowMs / size) * size;
      let w = this.windows.get(name);
      if (!w || w.start !== start) {
        w = { start, count: 0 };
        this.windows.set(name, w);
      }
      return { b, w, end: start + size };
    });
    const full = states.filter((s) => s.w.count >= s.b.limit);
    if (full.length > 0) {
      const latest = full.reduce((a, s) => (s.end > a.end ? s : a));
      return {
        allowed: false,
        limit: latest.b.limit,
        remaining: 0,
        reset: Math.ceil(latest.end / 1000),
        retryAfter: Math.max(1, Math.ceil((latest.end - nowMs) / 1000)),
      };
    }
    for (const s of states) s.w.count++;
    const active = states.reduce((a, s) => (s.b.limit - s.w.count < a.b.limit - a.w.count ? s : a));
    return {
      allowed: true,
      limit: active.b.limit,
      remaining: active.b.limit - active.w.count,
      reset: Math.ceil(active.end / 1000),
      retryAfter: 0,
    };
  }
}
