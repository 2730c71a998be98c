import { type BudgetClock, type HeaderMap, SharedRateBudget } from '../../src/budget/index.ts';
import type { RateLimitConfig } from '../../src/simulator/index.ts';
import { SimRateLimiter } from '../../src/simulator/rate-limit.ts';

// The budget against the simulator's limiters on simulated time: callers take turns, the limiter
// decides, the budget learns from the same headers the simulator's HTTP server would send (only on
// runs-list 200s and on 429s). Minutes of traffic run in well under a second, so every limiter and
// rate can be tried; the HTTP tests then confirm a few cases on real time.

class ManualClock implements BudgetClock {
  t: number;
  private timers: { at: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
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
    return new Promise((resolve, reject) => this.timers.push({ at: this.t + ms, resolve, reject }));
  }
  /** Runs until `until`, moving time to each timer when nothing else is left to run. */
  async run(until: number): Promise<void> {
    for (;;) {
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > until) {
        this.t = until;
        return;
      }
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
  }
}

export interface HarnessOptions {
  limits: Partial<RateLimitConfig>;
  /** The sustained rate the key may have, requests per second, to compare with. */
  seconds: number;
  /** Budgets sharing one state (workers), each with `concurrency` callers. */
  workers?: number;
  concurrency?: number;
  /** One runs-list page per this many detail fetches (a first sync lists 100 runs a page). */
  listEvery?: number;
  latencyMs?: number;
  /** Each way of a request takes up to this much longer, at random (seeded): round trips vary. */
  jitterMs?: number;
  /** One request in `slowEvery` (at random, seeded) takes `slowMs` longer each way: a busy process. */
  slowMs?: number;
  slowEvery?: number;
  /** Each worker's first request takes this much longer to reach the server (a connection opened). */
  coldMs?: number;
  /** Each worker's first request is a runs-list page, as each client primes the budget with one. */
  primed?: boolean;
  /** Where in a second the run starts, in ms (default 123). */
  phaseMs?: number;
  reserve?: number;
  ceiling?: number | null;
  /** Told the rate the budget paces to after each response that carried figures. */
  onPaced?: (ratePerSecond: number | null, at: number) => void;
  /** Told of every request the limiter decided, to trace a case. */
  onRequest?: (e: { at: number; endpoint: string; allowed: boolean; remaining: number; reset: number }) => void;
}

export interface HarnessResult {
  requests: number;
  ok: number;
  limited: number;
  /** Accepted requests per second over the last half of the run. */
  lateRate: number;
  /** The rate the budget learned for the key's bucket (the tightest every request draws on). */
  learned: number | null;
  budget: SharedRateBudget;
  /** Most requests accepted in any aligned second. */
  busiestSecond: number;
}

const T0 = 1_800_000_000_000;

export async function runHarness(o: HarnessOptions): Promise<HarnessResult> {
  const clock = new ManualClock(T0 + (o.phaseMs ?? 123));
  const limiter = new SimRateLimiter({
    model: 'fixed',
    perKey: null,
    perOrg: null,
    perEndpoint: {},
    neighbourPerSecond: 0,
    ...o.limits,
  });
  const { MemoryBudgetStore } = await import('../../src/budget/index.ts');
  const store = new MemoryBudgetStore();
  const workers = Array.from(
    { length: o.workers ?? 1 },
    () => new SharedRateBudget({ store, clock, reserve: o.reserve ?? 0.05, ceilingPerSecond: o.ceiling ?? null }),
  );
  const latency = o.latencyMs ?? 20;
  const jitter = o.jitterMs ?? 0;
  let seed = 19;
  // A small seeded generator (a linear congruential one) keeps every run of a case the same.
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const way = () => latency / 2 + (jitter > 0 ? random() * jitter : 0);
  const slow = () => (o.slowMs && o.slowEvery && random() * o.slowEvery < 1 ? o.slowMs : 0);
  const end = T0 + o.seconds * 1000;
  let requests = 0;
  let ok = 0;
  let limited = 0;
  let lateOk = 0;
  let sent = 0;
  const perSecond = new Map<number, number>();

  const warm = new Set<SharedRateBudget>();
  async function one(budget: SharedRateBudget, endpoint: string): Promise<void> {
    for (;;) {
      const grant = await budget.acquire(endpoint);
      if (clock.now() >= end) return;
      if (grant.probe) void one(budget, 'runs.list');
      const cold = warm.has(budget) ? 0 : (o.coldMs ?? 0);
      warm.add(budget);
      const late = slow();
      await clock.sleep(way() + cold + late);
      const d = limiter.check('k', 'org', endpoint, clock.now());
      requests++;
      if (d)
        o.onRequest?.({ at: clock.now() - T0, endpoint, allowed: d.allowed, remaining: d.remaining, reset: d.reset });
      await clock.sleep(way() + late);
      const headers: HeaderMap =
        d && (endpoint === 'runs.list' || !d.allowed)
          ? {
              'x-ratelimit-limit': String(d.limit),
              'x-ratelimit-remaining': String(d.remaining),
              'x-ratelimit-reset': String(d.reset),
              ...(d.allowed ? {} : { 'retry-after': String(d.retryAfter) }),
            }
          : {};
      await budget.observe(endpoint, d?.allowed === false ? 429 : 200, headers, grant);
      if (o.onPaced && 'x-ratelimit-limit' in headers)
        o.onPaced((await budget.snapshot()).ratePerSecond, clock.now() - T0);
      if (d && !d.allowed) {
        limited++;
        await budget.pause(d.retryAfter * 1000, endpoint);
        continue;
      }
      ok++;
      const second = Math.floor(clock.now() / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
      if (clock.now() >= T0 + (o.seconds * 1000) / 2) lateOk++;
      return;
    }
  }

  const listEvery = o.listEvery ?? 100;
  const callers = workers.flatMap((budget) =>
    Array.from({ length: o.concurrency ?? 8 }, async (_, i) => {
      if (o.primed && i === 0) await one(budget, 'runs.list');
      while (clock.now() < end) {
        const n = sent++;
        await one(budget, n % listEvery === 0 ? 'runs.list' : 'runs.get');
      }
    }),
  );
  await clock.run(end + 60_000);
  await Promise.all(callers);
  const snap = await (workers[0] as SharedRateBudget).snapshot();
  const shared = snap.buckets.filter((b) => b.scope === 'key' && b.ratePerSecond !== null);
  return {
    requests,
    ok,
    limited,
    lateRate: lateOk / (o.seconds / 2),
    learned: shared.length ? Math.min(...shared.map((b) => b.ratePerSecond as number)) : null,
    budget: workers[0] as SharedRateBudget,
    busiestSecond: Math.max(0, ...perSecond.values()),
  };
}
