import {
  type FaultConfig,
  RATE_MODELS,
  type RateLimitConfig,
  type RateModel,
  type RequestRecord,
  type Simulator,
  startSimulator,
} from '../src/simulator/index.ts';
import type { BenchRow } from './bench-types.ts';

// What the rate benches share: a simulator that holds each key to a rate, the limiters a budget is
// measured against, and what a burst of requests against one achieved.

export interface Burst {
  seconds: number;
  ok: number;
  requests: number;
  /** 429s the rate limiter sent (not those of a fault). */
  limited: number;
  /** Requests the limiter counted: answered, and not by a fault or a 429. */
  charged: number;
  /** 429s of a gateway shedding load, and the span their Retry-After covered (overlaps once). */
  spurious: number;
  spuriousWaitSeconds: number;
  busiestSecond: number;
}

export interface RateCase {
  seed: number;
  size: number;
  /** Requests per second per key. */
  rate: number;
  latencyMs: number;
  model?: RateModel;
  /** Laid over the per-key bucket of `rate` a second. */
  rateLimit?: Partial<RateLimitConfig>;
  faults?: Partial<FaultConfig>;
}

/** The simulator's rate limits for a case: a key's bucket of `rate` a second, `rateLimit` laid over. */
export function caseRateLimit(c: Pick<RateCase, 'rate' | 'model' | 'rateLimit'>): Partial<RateLimitConfig> {
  return {
    ...(c.model ? { model: c.model } : {}),
    perKey: { limit: c.rate, windowSeconds: 1 },
    ...c.rateLimit,
  };
}

export function rateLimitedSimulator(c: RateCase): Promise<Simulator> {
  return startSimulator({
    port: 0,
    seed: c.seed,
    size: c.size,
    now: '2026-03-01T00:00:00Z',
    rateLimit: caseRateLimit(c),
    faults: { baseLatencyMs: c.latencyMs, ...c.faults },
  });
}

/** A limiter a budget is measured against, at R requests per second. */
export interface LimiterCase {
  name: string;
  /** The share of R left to us: 1 but where a neighbour draws on the same bucket. */
  share: number;
  limits(rate: number): Pick<RateCase, 'rateLimit' | 'faults'>;
}

/** The neighbour's average share of the organization's rate, in bursts about a second apart. */
const NEIGHBOUR_SHARE = 0.25;

/**
 * Every model the simulator runs on a key's bucket of R a second; an organization bucket of R
 * that a neighbour draws a quarter of in random bursts; and a key's fixed window behind a gateway
 * that sheds 3% of requests with 429s and fails 5% with 5xx.
 */
export const LIMITER_CASES: readonly LimiterCase[] = [
  ...RATE_MODELS.map((model) => ({ name: model, share: 1, limits: () => ({ rateLimit: { model } }) })),
  {
    name: 'gcra-burst-2x',
    share: 1,
    limits: (rate: number) => ({
      rateLimit: { model: 'gcra' as const, perKey: { limit: rate, windowSeconds: 1, burst: 2 * rate } },
    }),
  },
  {
    name: 'sliding-10s',
    share: 1,
    limits: (rate: number) => ({
      rateLimit: { model: 'sliding' as const, perKey: { limit: 10 * rate, windowSeconds: 10 } },
    }),
  },
  {
    name: 'fixed-10s',
    share: 1,
    limits: (rate: number) => ({
      rateLimit: { model: 'fixed' as const, perKey: { limit: 10 * rate, windowSeconds: 10 } },
    }),
  },
  {
    name: 'bursty-neighbour',
    share: 1 - NEIGHBOUR_SHARE,
    limits: (rate: number) => ({
      rateLimit: {
        model: 'bucket-full-at' as const,
        perKey: null,
        perOrg: { limit: rate, windowSeconds: 1 },
        neighbourPerSecond: rate * NEIGHBOUR_SHARE,
        neighbourBursts: { meanSize: Math.max(2, rate * NEIGHBOUR_SHARE), seed: 11 },
      },
    }),
  },
  {
    name: 'spurious-429',
    share: 1,
    limits: () => ({
      rateLimit: { model: 'fixed' as const },
      faults: { spurious429Rate: 0.03, serverErrorRate: 0.05 },
    }),
  },
];

/** The time the Retry-After of spurious 429s covered, overlapping spans counted once. */
function spuriousWait(log: readonly RequestRecord[]): number {
  const spans = log
    .filter((r) => r.fault === 'spurious_429')
    .map((r) => [r.t, r.t + (r.retryAfter ?? 1) * 1000] as const)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of spans) {
    total += Math.max(0, to - Math.max(from, end));
    end = Math.max(end, to);
  }
  return total / 1000;
}

/**
 * Times `fetchAll`, which answers how many of its requests succeeded; the busiest second counts
 * the requests `busiest` keeps.
 */
export async function burst(
  sim: Simulator,
  fetchAll: () => Promise<number>,
  busiest?: (r: RequestRecord) => boolean,
): Promise<Burst> {
  sim.counters.reset();
  const t0 = performance.now();
  const ok = await fetchAll();
  const seconds = (performance.now() - t0) / 1000;
  const log = sim.counters.log();
  return {
    ok,
    seconds,
    requests: log.length,
    limited: log.filter((r) => r.status === 429 && r.fault === undefined).length,
    charged: log.filter((r) => r.fault === undefined && r.status !== 429 && r.status > 0 && r.status < 500).length,
    spurious: log.filter((r) => r.fault === 'spurious_429').length,
    spuriousWaitSeconds: spuriousWait(log),
    busiestSecond: sim.counters.maxInAlignedWindow(1000, busiest),
  };
}

export function share429Row(bench: string, label: string, b: Burst, goal: string): BenchRow {
  return {
    bench,
    metric: `${label}: 429 share`,
    value: (100 * b.limited) / Math.max(1, b.requests),
    unit: '%',
    goal,
    note: `${b.limited} of ${b.requests}`,
  };
}
