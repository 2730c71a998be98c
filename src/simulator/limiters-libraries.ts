import type { Request, Response } from 'express';
import { MemoryStore, type RateLimitInfo, rateLimit } from 'express-rate-limit';
import { RateLimiter, TokenBucket } from 'limiter';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { LimiterSpec } from './limiters.ts';

// Limiters this project did not write: server-side rate-limit libraries from npm, run as an API
// would run them, in memory, one instance per bucket. The library decides whether a request is
// admitted and keeps its own state on the real clock; this file only reads that state and puts it
// in the spec's words (Limit, Remaining, Reset as an instant, Retry-After in whole seconds >= 1):
// - flexible-fixed: rate-limiter-flexible's RateLimiterMemory, `limit` points per `window`
//   seconds counted from a bucket's first request (its "flexible fixed window"); refused requests
//   count too. Reset = when that window ends.
// - flexible-bursty: its BurstyRateLimiter, that window plus a second RateLimiterMemory of `burst`
//   points per ten windows that admits what the first refuses; the library exposes the first
//   limiter's points and the sooner of the two resets, and so do the headers.
// - express-fixed: express-rate-limit's middleware over its MemoryStore, `limit` hits per window
//   started by a key's first hit; refused hits count. Reset = the store's resetTime; Retry-After
//   is the one the middleware sets.
// - limiter-bucket: limiter's TokenBucket of `burst` tokens refilled at limit/window per second,
//   full at the start as a server's new key would be. Reset = when it will be full again.
// - limiter-window: limiter's RateLimiter, a bucket of `limit` tokens that also allows at most
//   `limit` removals per interval started by the first removal after the last one ended.
//   Remaining is the lesser of the two allowances; Reset = when both are whole again.

export const LIBRARY_RATE_MODELS = [
  'flexible-fixed',
  'flexible-bursty',
  'express-fixed',
  'limiter-bucket',
  'limiter-window',
] as const;
export type LibraryRateModel = (typeof LIBRARY_RATE_MODELS)[number];

export function isLibraryModel(model: string): model is LibraryRateModel {
  return (LIBRARY_RATE_MODELS as readonly string[]).includes(model);
}

/** A bucket's state in the spec's terms. */
export interface LibraryFigures {
  limit: number;
  remaining: number;
  /** When the bucket resets, epoch ms. */
  resetAt: number;
}

export interface LibraryVerdict extends LibraryFigures {
  allowed: boolean;
  /** Whole seconds to wait when refused (>= 1); 0 when admitted. */
  retryAfter: number;
}

export interface LibraryLimiter {
  /** One request now, decided and counted by the library. */
  hit(): Promise<LibraryVerdict>;
  /** The state now, without counting a request. */
  peek(): Promise<LibraryFigures>;
  /** Stops the library's timers. */
  close(): void;
}

/** The one key each instance is asked about: every bucket has its own instance. */
const KEY = 'bucket';
/** flexible-bursty: the burst allowance lasts this many windows. */
const BURST_WINDOWS = 10;

const wholeSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

class FlexibleLimiter implements LibraryLimiter {
  private readonly main: RateLimiterMemory;
  private readonly lib: RateLimiterMemory | BurstyRateLimiter;
  constructor(
    private readonly spec: LimiterSpec,
    bursty: boolean,
  ) {
    this.main = new RateLimiterMemory({ points: spec.limit, duration: spec.windowSeconds });
    const extra = new RateLimiterMemory({
      keyPrefix: 'burst',
      points: spec.burst,
      duration: spec.windowSeconds * BURST_WINDOWS,
    });
    this.lib = bursty ? new BurstyRateLimiter(this.main, extra) : this.main;
  }
  private verdict(allowed: boolean, r: RateLimiterRes): LibraryVerdict {
    const ms = Math.max(0, r.msBeforeNext);
    return {
      allowed,
      limit: this.spec.limit,
      remaining: r.remainingPoints,
      resetAt: Date.now() + ms,
      retryAfter: allowed ? 0 : wholeSeconds(ms),
    };
  }
  async hit(): Promise<LibraryVerdict> {
    try {
      return this.verdict(true, await this.lib.consume(KEY));
    } catch (e) {
      if (e instanceof RateLimiterRes) return this.verdict(false, e);
      throw e;
    }
  }
  async peek(): Promise<LibraryFigures> {
    const r = await this.main.get(KEY);
    if (!r) return { limit: this.spec.limit, remaining: this.spec.limit, resetAt: Date.now() };
    return this.verdict(true, r);
  }
  close(): void {}
}

class ExpressLimiter implements LibraryLimiter {
  private readonly store = new MemoryStore();
  private readonly middleware: ReturnType<typeof rateLimit>;
  constructor(private readonly spec: LimiterSpec) {
    this.middleware = rateLimit({
      windowMs: spec.windowSeconds * 1000,
      limit: spec.limit,
      store: this.store,
      keyGenerator: () => KEY,
      standardHeaders: 'draft-6',
      legacyHeaders: false,
      validate: false,
      handler: () => undefined,
    });
  }
  /** Runs the middleware on a bare request and response, as an HTTP server in front would. */
  async hit(): Promise<LibraryVerdict> {
    const req: { rateLimit?: RateLimitInfo } = {};
    const headers = new Map<string, string>();
    const res = { headersSent: false, setHeader: (n: string, v: unknown) => headers.set(n.toLowerCase(), String(v)) };
    let allowed = false;
    let failure: unknown;
    // Express's types describe a full request and response; the middleware reads only these.
    await this.middleware(req as unknown as Request, res as unknown as Response, (err?: unknown) => {
      if (err !== undefined) failure = err;
      else allowed = true;
    });
    if (failure !== undefined) throw failure;
    const info = req.rateLimit;
    if (!info) throw new Error('express-rate-limit left no rate-limit info on the request');
    const resetAt = info.resetTime?.getTime() ?? Date.now() + this.spec.windowSeconds * 1000;
    const retryAfter = allowed
      ? 0
      : Math.max(1, Number(headers.get('retry-after') ?? wholeSeconds(resetAt - Date.now())));
    return { allowed, limit: info.limit, remaining: info.remaining, resetAt, retryAfter };
  }
  async peek(): Promise<LibraryFigures> {
    const c = await this.store.get(KEY);
    const now = Date.now();
    if (!c) return { limit: this.spec.limit, remaining: this.spec.limit, resetAt: now };
    return {
      limit: this.spec.limit,
      remaining: Math.max(0, this.spec.limit - c.totalHits),
      resetAt: c.resetTime?.getTime() ?? now,
    };
  }
  close(): void {
    this.store.shutdown();
  }
}

/** Tokens per ms of a limiter bucket. */
const perMs = (b: TokenBucket) => b.tokensPerInterval / b.interval;

/** When `b` will be full again, in ms from now. */
function untilFull(b: TokenBucket): number {
  b.drip();
  return (b.bucketSize - b.content) / perMs(b);
}

class LimiterBucket implements LibraryLimiter {
  private readonly bucket: TokenBucket;
  constructor(spec: LimiterSpec) {
    this.bucket = new TokenBucket({
      bucketSize: spec.burst,
      tokensPerInterval: spec.limit,
      interval: spec.windowSeconds * 1000,
    });
    this.bucket.content = spec.burst;
  }
  async hit(): Promise<LibraryVerdict> {
    const allowed = this.bucket.tryRemoveTokens(1);
    const retryAfter = allowed ? 0 : wholeSeconds(this.bucket.getWaitTime(1));
    return { allowed, ...(await this.peek()), retryAfter };
  }
  async peek(): Promise<LibraryFigures> {
    const wait = untilFull(this.bucket);
    return {
      limit: this.bucket.bucketSize,
      remaining: Math.floor(this.bucket.content + 1e-9),
      resetAt: Date.now() + wait,
    };
  }
  close(): void {}
}

class LimiterWindow implements LibraryLimiter {
  private readonly lib: RateLimiter;
  constructor(spec: LimiterSpec) {
    this.lib = new RateLimiter({ tokensPerInterval: spec.limit, interval: spec.windowSeconds * 1000 });
  }
  async hit(): Promise<LibraryVerdict> {
    const allowed = this.lib.tryRemoveTokens(1);
    const retryAfter = allowed ? 0 : wholeSeconds(this.lib.getWaitTime(1));
    return { allowed, ...(await this.peek()), retryAfter };
  }
  async peek(): Promise<LibraryFigures> {
    const { tokenBucket: b, curIntervalStart, tokensThisInterval } = this.lib;
    const tokens = Math.floor(this.lib.getTokensRemaining() + 1e-9);
    // The same clock the library reads, so the interval's age is its own.
    const age = performance.now() - curIntervalStart;
    const active = age >= 0 && age < b.interval && tokensThisInterval > 0;
    const intervalLeft = active ? b.tokensPerInterval - tokensThisInterval : b.tokensPerInterval;
    const wait = Math.max(untilFull(b), active ? b.interval - age : 0);
    return { limit: b.tokensPerInterval, remaining: Math.min(tokens, intervalLeft), resetAt: Date.now() + wait };
  }
  close(): void {}
}

export function createLibraryLimiter(spec: LimiterSpec & { model: LibraryRateModel }): LibraryLimiter {
  switch (spec.model) {
    case 'flexible-fixed':
      return new FlexibleLimiter(spec, false);
    case 'flexible-bursty':
      return new FlexibleLimiter(spec, true);
    case 'express-fixed':
      return new ExpressLimiter(spec);
    case 'limiter-bucket':
      return new LimiterBucket(spec);
    case 'limiter-window':
      return new LimiterWindow(spec);
  }
}
