// The limiter algorithms the simulator can run, one object per bucket. Real APIs differ in the
// algorithm behind the same three X-RateLimit-* headers, and in what `Reset` means; each model here
// is one common answer, so the client's budget can be tested against all of them:
// - fixed: `limit` requests per aligned window; Reset = the window's end;
// - sliding: at most `limit` requests in any `window` (a log); Reset = when the oldest counted
//   request leaves the window, i.e. when room next appears;
// - bucket-full-at: a token bucket of `burst` tokens refilled at limit/window per second;
//   Reset = when the bucket will be full again;
// - bucket-next-token: the same bucket; Reset = when the next token arrives;
// - gcra: the generic cell rate algorithm (as in redis-cell or Rails' rack-attack throttles):
//   a theoretical arrival time moved on by one emission interval per request; Reset = when it
//   would allow a full burst again.
// Models backed by rate-limit libraries from npm are in limiters-libraries.ts.

import { LIBRARY_RATE_MODELS } from './limiters-libraries.ts';

/** The models written here: they can be asked about any instant, so they run on a manual clock too. */
export const OWN_RATE_MODELS = ['fixed', 'sliding', 'bucket-full-at', 'bucket-next-token', 'gcra'] as const;
export type OwnRateModel = (typeof OWN_RATE_MODELS)[number];
export const RATE_MODELS = [...OWN_RATE_MODELS, ...LIBRARY_RATE_MODELS] as const;
export type RateModel = (typeof RATE_MODELS)[number];

export interface LimiterSpec {
  model: RateModel;
  /** Requests per window (window models), or the refill of `window` seconds (bucket models). */
  limit: number;
  windowSeconds: number;
  /** Bucket models: the capacity, reported as X-RateLimit-Limit; default `limit`. */
  burst: number;
}

export interface Limiter {
  /** Whole requests that would be accepted at `t` (ms). */
  room(t: number): number;
  /** Counts one accepted request at `t`; the caller checked `room(t) >= 1`. */
  take(t: number): void;
  /** The figure reported as X-RateLimit-Limit. */
  readonly capacity: number;
  /** X-RateLimit-Reset at `t`, in ms. */
  resetAt(t: number): number;
  /** When a refused request could next be accepted, in ms. */
  freeAt(t: number): number;
}

class FixedWindow implements Limiter {
  private start = -1;
  private count = 0;
  readonly capacity: number;
  private readonly size: number;
  constructor(s: LimiterSpec) {
    this.capacity = s.limit;
    this.size = s.windowSeconds * 1000;
  }
  private roll(t: number): void {
    const start = Math.floor(t / this.size) * this.size;
    if (start !== this.start) {
      this.start = start;
      this.count = 0;
    }
  }
  room(t: number): number {
    this.roll(t);
    return this.capacity - this.count;
  }
  take(t: number): void {
    this.roll(t);
    this.count++;
  }
  resetAt(t: number): number {
    this.roll(t);
    return this.start + this.size;
  }
  freeAt(t: number): number {
    return this.resetAt(t);
  }
}

class SlidingLog implements Limiter {
  private readonly log: number[] = [];
  private head = 0;
  readonly capacity: number;
  private readonly size: number;
  constructor(s: LimiterSpec) {
    this.capacity = s.limit;
    this.size = s.windowSeconds * 1000;
  }
  private expire(t: number): void {
    while (this.head < this.log.length && (this.log[this.head] as number) <= t - this.size) this.head++;
    if (this.head > 4096) {
      this.log.splice(0, this.head);
      this.head = 0;
    }
  }
  room(t: number): number {
    this.expire(t);
    return this.capacity - (this.log.length - this.head);
  }
  take(t: number): void {
    this.expire(t);
    this.log.push(t);
  }
  resetAt(t: number): number {
    this.expire(t);
    const oldest = this.log[this.head];
    return oldest === undefined ? t : oldest + this.size;
  }
  freeAt(t: number): number {
    return this.resetAt(t);
  }
}

class TokenBucket implements Limiter {
  private tokens: number;
  private at = 0;
  readonly capacity: number;
  /** Tokens per ms. */
  private readonly rate: number;
  constructor(
    s: LimiterSpec,
    private readonly resetMeans: 'full' | 'next-token',
  ) {
    this.capacity = s.burst;
    this.tokens = s.burst;
    this.rate = s.limit / (s.windowSeconds * 1000);
  }
  private refill(t: number): void {
    if (t > this.at) {
      this.tokens = Math.min(this.capacity, this.tokens + (t - this.at) * this.rate);
      this.at = t;
    }
  }
  room(t: number): number {
    this.refill(t);
    return Math.floor(this.tokens + 1e-9);
  }
  take(t: number): void {
    this.refill(t);
    this.tokens -= 1;
  }
  resetAt(t: number): number {
    this.refill(t);
    if (this.resetMeans === 'full') return t + (this.capacity - this.tokens) / this.rate;
    if (this.tokens >= this.capacity) return t;
    const fraction = this.tokens - Math.floor(this.tokens + 1e-9);
    return t + (1 - fraction) / this.rate;
  }
  freeAt(t: number): number {
    this.refill(t);
    return this.tokens >= 1 ? t : t + (1 - this.tokens) / this.rate;
  }
}

class Gcra implements Limiter {
  /** Theoretical arrival time, ms. */
  private tat = 0;
  readonly capacity: number;
  private readonly interval: number;
  private readonly tolerance: number;
  constructor(s: LimiterSpec) {
    this.capacity = s.burst;
    this.interval = (s.windowSeconds * 1000) / s.limit;
    this.tolerance = (s.burst - 1) * this.interval;
  }
  room(t: number): number {
    const tat = Math.max(this.tat, t);
    return Math.max(0, Math.floor((t + this.tolerance - tat) / this.interval + 1e-9) + 1);
  }
  take(t: number): void {
    this.tat = Math.max(this.tat, t) + this.interval;
  }
  resetAt(t: number): number {
    return Math.max(this.tat, t);
  }
  freeAt(t: number): number {
    return Math.max(t, this.tat - this.tolerance);
  }
}

export function createLimiter(spec: LimiterSpec & { model: OwnRateModel }): Limiter {
  switch (spec.model) {
    case 'fixed':
      return new FixedWindow(spec);
    case 'sliding':
      return new SlidingLog(spec);
    case 'bucket-full-at':
      return new TokenBucket(spec, 'full');
    case 'bucket-next-token':
      return new TokenBucket(spec, 'next-token');
    case 'gcra':
      return new Gcra(spec);
  }
}
