import { createLimiter, OWN_RATE_MODELS, type OwnRateModel } from '../src/simulator/limiters.ts';
import { neighbourSchedule } from '../src/simulator/neighbour.ts';
import type { RateLimitConfig } from '../src/simulator/rate-limit.ts';

// The floor a neighbour sets: what a client that knew the rate left to it exactly, and sent its
// requests evenly at that rate, would meet on the same organization bucket and the same neighbour.
// No budget can do better by pacing alone, since it never sees the bucket between figures: when a
// neighbour's burst empties the bucket just before one of our requests, that request is refused.

export interface EvenPacerFloor {
  /** Starts tried: the pacer's first request at evenly spread offsets within one of its gaps. */
  starts: number;
  /** Starts at which at least one request was refused. */
  refusedAtAll: number;
  /** Refusals per start, on average, and as a share of the requests sent. */
  meanRefused: number;
  share: number;
}

/** The organization bucket and its neighbour of `limits`, or null when it has none we can replay. */
function replayable(limits: Partial<RateLimitConfig>): { bucket: NonNullable<RateLimitConfig['perOrg']> } | null {
  const b = limits.perOrg;
  if (!b || !(limits.neighbourPerSecond ?? 0)) return null;
  const model = b.model ?? limits.model;
  return OWN_RATE_MODELS.includes(model as OwnRateModel) ? { bucket: b } : null;
}

/**
 * Replays `limits`' neighbour of organization `org` against its bucket, with an even pacer sending
 * `n` requests at `perSecond`, from `starts` offsets; null when the limits have no neighbour.
 */
export function evenPacerFloor(
  limits: Partial<RateLimitConfig>,
  org: string,
  perSecond: number,
  n: number,
  starts = 40,
): EvenPacerFloor | null {
  const found = replayable(limits);
  if (!found) return null;
  const { bucket } = found;
  const gap = 1000 / perSecond;
  const counts: number[] = [];
  for (let k = 0; k < starts; k++) {
    const neighbour = neighbourSchedule(limits.neighbourPerSecond ?? 0, limits.neighbourBursts, org);
    const limiter = createLimiter({
      model: (bucket.model ?? limits.model) as OwnRateModel,
      limit: bucket.limit,
      windowSeconds: bucket.windowSeconds,
      burst: bucket.burst ?? bucket.limit,
    });
    // The simulator starts the neighbour's schedule at the first request it sees.
    const t0 = 1_000_000;
    neighbour?.due(t0);
    let refused = 0;
    for (let sent = 0, i = 0; sent < n; i++) {
      const t = t0 + (k * gap) / starts + i * gap;
      for (const a of neighbour?.due(t) ?? []) if (limiter.room(a) >= 1) limiter.take(a);
      if (limiter.room(t) >= 1) {
        limiter.take(t);
        sent++;
      } else refused++;
    }
    counts.push(refused);
  }
  const total = counts.reduce((a, b) => a + b, 0);
  return {
    starts,
    refusedAtAll: counts.filter((c) => c > 0).length,
    meanRefused: total / starts,
    share: total / (total + n * starts),
  };
}
