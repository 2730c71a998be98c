import { type Rng, rngFor } from './random.ts';

// Another consumer of an organization's budget, drawing from its bucket without any request of
// ours. Two patterns: evenly paced (one request every 1/rate seconds), or random bursts, which is
// how real neighbours behave (a batch job, a dashboard refresh, a retry storm): bursts arrive as a
// Poisson process and each holds a random number of requests sent at once, so the average is the
// configured rate while any one second may see none or many times that.

export interface NeighbourBursts {
  /** Mean requests per burst (>= 1); sizes are geometric, so most are small and a few large. */
  meanSize: number;
  /** Seeds each organization's sequence of bursts, so a case can be replayed. */
  seed?: number;
}

/** Arrivals are replayed at most this far back when nothing asked for a while. */
export const NEIGHBOUR_CATCH_UP_MS = 10_000;

export interface NeighbourSchedule {
  /** Arrival times (ms) of the neighbour's requests after the last call, up to `nowMs`, in order. */
  due(nowMs: number): number[];
}

class EvenNeighbour implements NeighbourSchedule {
  private at: number | null = null;
  private readonly step: number;
  constructor(perSecond: number) {
    this.step = 1000 / perSecond;
  }
  due(nowMs: number): number[] {
    const out: number[] = [];
    let t = Math.max(this.at ?? nowMs, nowMs - NEIGHBOUR_CATCH_UP_MS);
    for (; t + this.step <= nowMs; t += this.step) out.push(t + this.step);
    this.at = t;
    return out;
  }
}

class BurstyNeighbour implements NeighbourSchedule {
  private next: number | null = null;
  private readonly rng: Rng;
  /** Mean ms between bursts. */
  private readonly gap: number;
  /** Chance that a burst ends after each request. */
  private readonly stop: number;
  constructor(perSecond: number, bursts: NeighbourBursts, org: string) {
    const mean = Math.max(1, bursts.meanSize);
    this.rng = rngFor(bursts.seed ?? 1, 'neighbour', org);
    this.gap = (1000 * mean) / perSecond;
    this.stop = 1 / mean;
  }
  private interval(): number {
    return -Math.log(1 - this.rng.next()) * this.gap;
  }
  private size(): number {
    let n = 1;
    while (!this.rng.chance(this.stop)) n++;
    return n;
  }
  due(nowMs: number): number[] {
    if (this.next === null) this.next = nowMs + this.interval();
    const out: number[] = [];
    // Bursts older than the catch-up span are drawn (the sequence stays the seed's) but not sent.
    for (; this.next <= nowMs; this.next += this.interval()) {
      const size = this.size();
      if (this.next >= nowMs - NEIGHBOUR_CATCH_UP_MS) for (let i = 0; i < size; i++) out.push(this.next);
    }
    return out;
  }
}

/** The neighbour of one organization, or null when there is none. */
export function neighbourSchedule(
  perSecond: number,
  bursts: NeighbourBursts | null | undefined,
  org: string,
): NeighbourSchedule | null {
  if (!(perSecond > 0)) return null;
  return bursts ? new BurstyNeighbour(perSecond, bursts, org) : new EvenNeighbour(perSecond);
}
