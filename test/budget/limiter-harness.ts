import {
  type BudgetClock,
  type Grant,
  type HeaderMap,
  MemoryBudgetStore,
  retryAfterMs,
  SharedRateBudget,
} from '../../src/budget/index.ts';
import type { RateLimitConfig } from '../../src/simulator/index.ts';
import { SimRateLimiter } from '../../src/simulator/rate-limit.ts';

// A first sync against the simulator's limiters on simulated time: callers take turns, the
// limiter decides, the budget learns from the headers the simulator's server would send (figures
// on runs-list 200s and on 429s, none on run details). A gateway in front may refuse a share of
// requests with a 429 of its own, unrelated to the key's rate, and fail another share with a 500.
// Minutes of traffic run in well under a second, whatever the machine's load.

export class ManualClock implements BudgetClock {
  t: number;
  private timers: { at: number; resolve: () => void }[] = [];
  constructor(start: number) {
    this.t = start;
  }
  now(): number {
    return this.t;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!(ms <= Number.MAX_SAFE_INTEGER)) throw new Error(`bad sleep ${ms}`);
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => this.timers.push({ at: this.t + ms, resolve }));
  }
  /** Runs until every caller is done, moving time to each timer when nothing else is left to run. */
  async run(done: () => boolean, limitMs: number): Promise<void> {
    const end = this.t + limitMs;
    while (!done()) {
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      if (done()) return;
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers.shift();
      if (!next || next.at > end) throw new Error('the simulated sync did not finish');
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
  }
}

/** A gateway's own refusals and failures, each a share of requests, at random (seeded). */
export interface Gateway {
  /** Share of requests refused with a 429 of the gateway's own. */
  spurious: number;
  /** Its Retry-After, whole seconds, drawn evenly from this range. */
  retryAfterSeconds: [number, number];
  /** Share of requests failed with a 500. */
  errors: number;
  /** The figures a gateway 429 carries: `zero` a bucket read as empty, `none` no figures. */
  figures: 'zero' | 'none';
}

export interface SyncOptions {
  limits: Partial<RateLimitConfig>;
  /** Run details to fetch (one runs-list page of 100 before each hundred). */
  runs: number;
  /** Budgets sharing one state (workers), each with `concurrency` callers. */
  workers?: number;
  concurrency?: number;
  latencyMs?: number;
  /** Each way of a request takes up to this much longer, at random (seeded). */
  jitterMs?: number;
  gateway?: Gateway;
  reserve?: number;
  ceiling?: number | null;
  /** Where in a second the sync starts, in ms. */
  phaseMs?: number;
}

export interface SyncResult {
  /** Every request sent. */
  requests: number;
  /** 429s of the limiter, and of the gateway. */
  limited: number;
  spurious: number;
  errors: number;
  wallMs: number;
  /** Time within a Retry-After of some 429 (overlapping waits counted once). */
  waitedMs: number;
  budget: SharedRateBudget;
}

const T0 = 1_800_000_000_000;

/** What the key's bucket reports as its Limit: a gateway's 429 names the same bucket. */
function keyBurst(l: Partial<RateLimitConfig>): number {
  const b = l.perKey ?? l.perOrg;
  return b ? (b.burst ?? b.limit) : 100;
}
/** A failed request is tried again after this (the transport's backoff, roughly). */
const RETRY_MS = 200;

export async function runSync(o: SyncOptions): Promise<SyncResult> {
  const clock = new ManualClock(T0 + (o.phaseMs ?? 123));
  const limiter = new SimRateLimiter({
    model: 'fixed',
    perKey: null,
    perOrg: null,
    perEndpoint: {},
    neighbourPerSecond: 0,
    ...o.limits,
  });
  const store = new MemoryBudgetStore();
  const workers = Array.from(
    { length: o.workers ?? 1 },
    () => new SharedRateBudget({ store, clock, reserve: o.reserve ?? 0, ceilingPerSecond: o.ceiling ?? null }),
  );
  let seed = 19;
  // A small seeded generator (a linear congruential one) keeps every run of a case the same.
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const latency = o.latencyMs ?? 20;
  const way = () => latency / 2 + (o.jitterMs ? random() * o.jitterMs : 0);
  const r = { requests: 0, limited: 0, spurious: 0, errors: 0, waitedMs: 0 };
  let waitedUntil = 0;
  const waited = (ms: number) => {
    const from = Math.max(clock.now(), waitedUntil);
    waitedUntil = Math.max(waitedUntil, clock.now() + ms);
    r.waitedMs += Math.max(0, waitedUntil - from);
  };

  /** One request, tried until it succeeds. */
  async function one(budget: SharedRateBudget, endpoint: string): Promise<void> {
    for (;;) {
      const grant = await budget.acquire(endpoint);
      if (grant.probe) {
        await send(budget, 'runs.list', grant);
        continue;
      }
      const status = await send(budget, endpoint, grant);
      if (status === 200) return;
    }
  }

  /** One attempt on `grant`: its status, after the budget heard the answer and any 429's pause. */
  async function send(budget: SharedRateBudget, endpoint: string, grant: Grant): Promise<number> {
    {
      await clock.sleep(way());
      r.requests++;
      const g = o.gateway;
      const draw = random();
      let status = 200;
      let headers: HeaderMap = {};
      if (g && draw < g.spurious) {
        const wait =
          g.retryAfterSeconds[0] + Math.floor(random() * (g.retryAfterSeconds[1] - g.retryAfterSeconds[0] + 1));
        status = 429;
        r.spurious++;
        headers = {
          'retry-after': String(wait),
          ...(g.figures === 'zero'
            ? {
                'x-ratelimit-limit': String(keyBurst(o.limits)),
                'x-ratelimit-remaining': '0',
                'x-ratelimit-reset': String(Math.ceil(clock.now() / 1000) + wait),
              }
            : {}),
        };
      } else if (g && draw < g.spurious + g.errors) {
        status = 500;
        r.errors++;
      } else {
        const d = limiter.check('k', 'org', endpoint, clock.now());
        if (d && !d.allowed) {
          status = 429;
          r.limited++;
        }
        if (d && (endpoint === 'runs.list' || !d.allowed)) {
          headers = {
            'x-ratelimit-limit': String(d.limit),
            'x-ratelimit-remaining': String(d.remaining),
            'x-ratelimit-reset': String(d.reset),
            ...(d.allowed ? {} : { 'retry-after': String(d.retryAfter) }),
          };
        }
      }
      await clock.sleep(way());
      // As the transport tells it: a 429's pause first, then the answer.
      if (status === 429) {
        const wait = retryAfterMs(headers, undefined, clock.now());
        waited(wait);
        await budget.pause(wait, endpoint, headers);
      }
      await budget.observe(endpoint, status, headers, grant);
      if (status !== 200 && status !== 429) await clock.sleep(RETRY_MS);
      return status;
    }
  }

  let next = 0;
  let done = 0;
  const callers = workers.flatMap((budget) =>
    Array.from({ length: o.concurrency ?? 8 }, async () => {
      for (;;) {
        const n = next++;
        if (n >= o.runs + Math.ceil(o.runs / 100)) break;
        await one(budget, n % 101 === 0 ? 'runs.list' : 'runs.get');
      }
      done++;
    }),
  );
  const all = callers.length;
  await clock.run(() => done === all, 3_600_000);
  await Promise.all(callers);
  return { ...r, wallMs: clock.now() - T0 - (o.phaseMs ?? 123), budget: workers[0] as SharedRateBudget };
}
