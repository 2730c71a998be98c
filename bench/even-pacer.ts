import {
  DEFAULT_RATE_LIMIT,
  LibraryClockError,
  type RateLimitConfig,
  SimRateLimiter,
} from '../src/simulator/rate-limit.ts';

// The floor a neighbour sets: what a client that knew the rate left to it exactly, and sent its
// requests evenly at that rate, would meet on the same limits and the same neighbour. No budget can
// do better by pacing alone, since it never sees the bucket between figures: when a neighbour's
// burst empties the bucket just before one of our requests, that request is refused.

export interface EvenPacerFloor {
  /** Starts tried: the pacer's stream after its first request at offsets spread over one gap. */
  starts: number;
  /** Starts at which at least one request was refused. */
  refusedAtAll: number;
  /** Refusals per start, on average, and as a share of the requests sent. */
  meanRefused: number;
  share: number;
}

/** Limits the simulator's own limiters replay on any clock, with a neighbour on them. */
function replayable(limits: Partial<RateLimitConfig>): boolean {
  if (!(limits.neighbourPerSecond ?? 0)) return false;
  try {
    new SimRateLimiter({ ...DEFAULT_RATE_LIMIT, ...limits }).check('k', 'org', 'runs.get', 0);
    return true;
  } catch (e) {
    // A library-backed bucket lives on the real clock.
    if (e instanceof LibraryClockError) return false;
    throw e;
  }
}

/**
 * Replays `limits` (as the simulator runs them, neighbour included) for organization `org`, with an
 * even pacer sending `n` run details at `perSecond`, from `starts` offsets; null without a neighbour.
 */
export function evenPacerFloor(
  limits: Partial<RateLimitConfig>,
  org: string,
  perSecond: number,
  n: number,
  starts = 40,
): EvenPacerFloor | null {
  if (!replayable(limits)) return null;
  const gap = 1000 / perSecond;
  const counts: number[] = [];
  for (let k = 0; k < starts; k++) {
    // Afresh each start: the neighbour's schedule begins at the first request the limiter sees,
    // and the even stream after it starts at the offset, as a budget's does after its cold request.
    const limiter = new SimRateLimiter({ ...DEFAULT_RATE_LIMIT, ...limits });
    const t0 = 1_000_000;
    const at = (i: number) => (i === 0 ? t0 : t0 + (k * gap) / starts + i * gap);
    let refused = 0;
    for (let sent = 0, i = 0; sent < n; i++) {
      if (limiter.check('k', org, 'runs.get', at(i))?.allowed === false) refused++;
      else sent++;
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
