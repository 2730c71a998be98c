import { createLimiter, type Limiter, type OwnRateModel, type RateModel } from './limiters.ts';
import {
  createLibraryLimiter,
  isLibraryModel,
  type LibraryLimiter,
  type LibraryVerdict,
} from './limiters-libraries.ts';
import { type NeighbourBursts, type NeighbourSchedule, neighbourSchedule } from './neighbour.ts';

// Rate limits per key, per organization and per endpoint, on real (wall) time: clients pace
// themselves in real seconds whatever the simulated clock says. Every bucket a request falls in must
// have room; the headers report the one with the least room left, as the spec's "active bucket".
// A neighbour, another consumer of the same organization, can draw from the organization's bucket,
// so its use lowers Remaining without any request of ours.
// Buckets of the models written here are checked first and take a request only once every bucket
// admitted it; buckets run by a library are asked in turn after them and count a request as that
// library counts it (stacked middleware: one that admitted has counted, whatever a later one says).

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
  /** Requests per second another consumer of each organization takes from its bucket, on average. */
  neighbourPerSecond: number;
  /** The neighbour's requests come in random bursts; absent or null: evenly paced. */
  neighbourBursts?: NeighbourBursts | null;
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

/** A library-backed bucket was asked to decide synchronously or at an instant other than now. */
export class LibraryClockError extends Error {
  constructor(model: string) {
    super(`the ${model} model runs on the real clock: use decide(), not check()`);
    this.name = 'LibraryClockError';
  }
}

/** How often a library-backed organization bucket is given its neighbour's due requests. */
const NEIGHBOUR_PUMP_MS = 20;

interface Figures {
  limit: number;
  remaining: number;
  /** Epoch ms. */
  resetAt: number;
}

const ownFigures = (l: Limiter, t: number): Figures => ({
  limit: l.capacity,
  remaining: l.room(t),
  resetAt: l.resetAt(t),
});

/** The active bucket's figures of an admitted request: the least room left, the first on a tie. */
function admitted(figures: Figures[]): RateDecision {
  const a = figures.reduce((x, f) => (f.remaining < x.remaining ? f : x));
  return { allowed: true, limit: a.limit, remaining: a.remaining, reset: Math.ceil(a.resetAt / 1000), retryAfter: 0 };
}

function refusedByLibrary(v: LibraryVerdict): RateDecision {
  return {
    allowed: false,
    limit: v.limit,
    remaining: v.remaining,
    reset: Math.ceil(v.resetAt / 1000),
    retryAfter: v.retryAfter,
  };
}

export class SimRateLimiter {
  private readonly limiters = new Map<string, Limiter>();
  private readonly libraries = new Map<string, LibraryLimiter>();
  private readonly neighbours = new Map<string, NeighbourSchedule | null>();
  /** Library-backed decisions, one at a time, so the checks of one request see no other's. */
  private queue: Promise<unknown> = Promise.resolve();
  private pump: NodeJS.Timeout | null = null;
  private current: RateLimitConfig;

  constructor(config: RateLimitConfig) {
    this.current = config;
  }

  get config(): RateLimitConfig {
    return this.current;
  }

  /** A new configuration starts every bucket afresh. */
  set config(config: RateLimitConfig) {
    this.close();
    this.current = config;
  }

  /** Stops the libraries' timers and the neighbour's; the buckets start afresh if asked again. */
  close(): void {
    if (this.pump) clearInterval(this.pump);
    this.pump = null;
    for (const l of this.libraries.values()) l.close();
    this.libraries.clear();
    this.limiters.clear();
    this.neighbours.clear();
  }

  private modelOf(b: Bucket): RateModel {
    return b.model ?? this.current.model;
  }

  /** The buckets a request falls in, by name; the organization's is the one with a neighbour. */
  private bucketsOf(keyId: string, org: string, endpoint: string): [string, Bucket][] {
    const c = this.current;
    const out: [string, Bucket][] = [];
    if (c.perKey) out.push([`key:${keyId}`, c.perKey]);
    if (c.perOrg) out.push([`org:${org}`, c.perOrg]);
    const ep = c.perEndpoint[endpoint];
    if (ep) out.push([`ep:${keyId}:${endpoint}`, ep]);
    return out;
  }

  private spec(b: Bucket) {
    return { limit: b.limit, windowSeconds: b.windowSeconds, burst: b.burst ?? b.limit };
  }

  private own(name: string, b: Bucket, model: OwnRateModel): Limiter {
    let l = this.limiters.get(name);
    if (!l) {
      l = createLimiter({ model, ...this.spec(b) });
      this.limiters.set(name, l);
    }
    return l;
  }

  private library(name: string, b: Bucket): LibraryLimiter {
    let l = this.libraries.get(name);
    if (!l) {
      const model = this.modelOf(b);
      if (!isLibraryModel(model)) throw new Error(`not a library model: ${model}`);
      l = createLibraryLimiter({ model, ...this.spec(b) });
      this.libraries.set(name, l);
    }
    return l;
  }

  private schedule(name: string): NeighbourSchedule | null {
    if (!name.startsWith('org:')) return null;
    if (!this.neighbours.has(name)) {
      const c = this.current;
      this.neighbours.set(name, neighbourSchedule(c.neighbourPerSecond, c.neighbourBursts, name.slice(4)));
    }
    return this.neighbours.get(name) ?? null;
  }

  /** Replays the neighbour's requests due up to `now`, each taken if the bucket has room. */
  private neighbourOwn(name: string, limiter: Limiter, nowMs: number): void {
    for (const t of this.schedule(name)?.due(nowMs) ?? []) if (limiter.room(t) >= 1) limiter.take(t);
  }

  /** A library lives on the real clock: the neighbour's due requests are asked of it now. */
  private async neighbourLibrary(name: string, limiter: LibraryLimiter): Promise<void> {
    const due = this.schedule(name)?.due(Date.now()) ?? [];
    for (let i = 0; i < due.length; i++) await limiter.hit();
  }

  private hasLibraries(): boolean {
    const c = this.current;
    const all = [c.perKey, c.perOrg, ...Object.values(c.perEndpoint)];
    return all.some((b) => b !== null && isLibraryModel(this.modelOf(b)));
  }

  /** Decides a request at `nowMs` for buckets of the models written here only. */
  check(keyId: string, org: string, endpoint: string, nowMs: number): RateDecision | null {
    const states: Limiter[] = [];
    for (const [name, b] of this.bucketsOf(keyId, org, endpoint)) {
      const model = this.modelOf(b);
      if (isLibraryModel(model)) throw new LibraryClockError(model);
      const l = this.own(name, b, model);
      this.neighbourOwn(name, l, nowMs);
      states.push(l);
    }
    if (states.length === 0) return null;
    const refusal = this.refusedByOwn(states, nowMs);
    if (refusal) return refusal;
    for (const l of states) l.take(nowMs);
    return admitted(states.map((l) => ownFigures(l, nowMs)));
  }

  private refusedByOwn(states: Limiter[], nowMs: number): RateDecision | null {
    const full = states.filter((l) => l.room(nowMs) < 1);
    if (full.length === 0) return null;
    const latest = full.reduce((a, l) => (l.freeAt(nowMs) > a.freeAt(nowMs) ? l : a));
    return {
      allowed: false,
      limit: latest.capacity,
      remaining: 0,
      reset: Math.ceil(latest.resetAt(nowMs) / 1000),
      retryAfter: Math.max(1, Math.ceil((latest.freeAt(nowMs) - nowMs) / 1000)),
    };
  }

  /** Decides a request arriving now (`nowMs` for the buckets written here), whatever runs the buckets. */
  decide(keyId: string, org: string, endpoint: string, nowMs: number): Promise<RateDecision | null> {
    if (!this.hasLibraries()) return Promise.resolve(this.check(keyId, org, endpoint, nowMs));
    this.startPump();
    return this.serially(() => this.decideWithLibraries(keyId, org, endpoint, nowMs));
  }

  private serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async decideWithLibraries(
    keyId: string,
    org: string,
    endpoint: string,
    nowMs: number,
  ): Promise<RateDecision | null> {
    const own: Limiter[] = [];
    const libs: LibraryLimiter[] = [];
    for (const [name, b] of this.bucketsOf(keyId, org, endpoint)) {
      const model = this.modelOf(b);
      if (isLibraryModel(model)) {
        const l = this.library(name, b);
        await this.neighbourLibrary(name, l);
        libs.push(l);
      } else {
        const l = this.own(name, b, model);
        this.neighbourOwn(name, l, nowMs);
        own.push(l);
      }
    }
    const refusal = this.refusedByOwn(own, nowMs);
    if (refusal) return refusal;
    const figures: Figures[] = [];
    for (const l of libs) {
      const v = await l.hit();
      if (!v.allowed) return refusedByLibrary(v);
      figures.push(v);
    }
    if (own.length + libs.length === 0) return null;
    for (const l of own) l.take(nowMs);
    return admitted([...own.map((l) => ownFigures(l, nowMs)), ...figures]);
  }

  /** The active bucket's figures for a request like this one, without counting it; null: no bucket. */
  async peek(keyId: string, org: string, endpoint: string, nowMs: number): Promise<RateDecision | null> {
    const figures: Figures[] = [];
    for (const [name, b] of this.bucketsOf(keyId, org, endpoint)) {
      const model = this.modelOf(b);
      if (isLibraryModel(model)) figures.push(await this.library(name, b).peek());
      else {
        const l = this.own(name, b, model);
        this.neighbourOwn(name, l, nowMs);
        figures.push(ownFigures(l, nowMs));
      }
    }
    return figures.length === 0 ? null : admitted(figures);
  }

  /** Gives library-backed organization buckets their neighbour's requests as they fall due. */
  private startPump(): void {
    if (this.pump || !(this.current.neighbourPerSecond > 0)) return;
    const org = this.current.perOrg;
    if (!org || !isLibraryModel(this.modelOf(org))) return;
    this.pump = setInterval(() => {
      for (const [name, l] of this.libraries) {
        // A library that fails here fails the next request's decision too, which answers 500.
        if (name.startsWith('org:')) this.serially(() => this.neighbourLibrary(name, l)).catch(() => undefined);
      }
    }, NEIGHBOUR_PUMP_MS);
    this.pump.unref();
  }
}
