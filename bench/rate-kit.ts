import { type RateModel, type RequestRecord, type Simulator, startSimulator } from '../src/simulator/index.ts';
import type { BenchRow } from './bench-types.ts';

// What the rate benches share: a simulator that holds each key to a rate, and what a burst of
// requests against it achieved.

export interface Burst {
  seconds: number;
  ok: number;
  requests: number;
  limited: number;
  busiestSecond: number;
}

export interface RateCase {
  seed: number;
  size: number;
  /** Requests per second per key. */
  rate: number;
  latencyMs: number;
  model?: RateModel;
}

export function rateLimitedSimulator(c: RateCase): Promise<Simulator> {
  return startSimulator({
    port: 0,
    seed: c.seed,
    size: c.size,
    now: '2026-03-01T00:00:00Z',
    rateLimit: { ...(c.model ? { model: c.model } : {}), perKey: { limit: c.rate, windowSeconds: 1 } },
    faults: { baseLatencyMs: c.latencyMs },
  });
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
  return {
    ok,
    seconds,
    requests: sim.counters.count(),
    limited: sim.counters.count(undefined, 429),
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
