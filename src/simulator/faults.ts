import { Rng } from './random.ts';

// Injected faults, all off by default. Each request draws from a seeded generator, so a failing
// run can be replayed with the same seed and request order.

export interface FaultConfig {
  /** 500, 502 or 503; the latter two with a non-JSON body, as a proxy would send. */
  serverErrorRate: number;
  /** Chance that a request starts a burst of 429s for its key. */
  burst429Rate: number;
  burst429Seconds: number;
  /** Connection closed without a response. */
  resetRate: number;
  /** 200 with a body that is not JSON. */
  malformedRate: number;
  /** 200 whose body stops half-way (the connection is cut). */
  truncatedRate: number;
  /** The connection is taken and never answered, as a load balancer with no backend does. */
  hangRate: number;
  /** 200 whose body stops half-way and then stays silent, the connection open. */
  stallRate: number;
  /**
   * Chance of a 429 unrelated to the key's rate, as a gateway shedding load sends: not counted in
   * any bucket, with a Retry-After of spurious429MinSeconds to spurious429MaxSeconds.
   */
  spurious429Rate: number;
  spurious429MinSeconds: number;
  spurious429MaxSeconds: number;
  /**
   * Whether those 429s carry X-RateLimit-* (the key's bucket as it stands, Remaining often well
   * above zero); by default only Retry-After, as a gateway that never asked the limiter sends.
   */
  spurious429Figures: boolean;
  /** Chance of an extra delay between latencyMinMs and latencyMaxMs. */
  latencyRate: number;
  latencyMinMs: number;
  latencyMaxMs: number;
  /** Added to every response. */
  baseLatencyMs: number;
  /** Endpoints the faults apply to; empty means all. */
  endpoints: string[];
  seed: number;
}

export const NO_FAULTS: FaultConfig = {
  serverErrorRate: 0,
  burst429Rate: 0,
  burst429Seconds: 2,
  resetRate: 0,
  malformedRate: 0,
  truncatedRate: 0,
  hangRate: 0,
  stallRate: 0,
  spurious429Rate: 0,
  spurious429MinSeconds: 1,
  spurious429MaxSeconds: 2,
  spurious429Figures: false,
  latencyRate: 0,
  latencyMinMs: 50,
  latencyMaxMs: 1500,
  baseLatencyMs: 0,
  endpoints: [],
  seed: 1,
};

export type FaultAction =
  | 'none'
  | 'reset'
  | 'server_error'
  | 'burst_429'
  | 'malformed'
  | 'truncated'
  | 'hang'
  | 'stall'
  | 'spurious_429';

export interface FaultDecision {
  delayMs: number;
  action: FaultAction;
  /** For server errors: which status. */
  status: number;
  /** For spurious 429s: the Retry-After, whole seconds. */
  retryAfter?: number;
}

export class SimFaults {
  private rng: Rng;
  private readonly burstUntil = new Map<string, number>();
  config: FaultConfig;

  constructor(config: Partial<FaultConfig> = {}) {
    this.config = { ...NO_FAULTS, ...config };
    this.rng = new Rng(this.config.seed);
  }

  /** Changes some settings; giving a seed restarts the sequence of draws from it. */
  set(config: Partial<FaultConfig>): void {
    this.config = { ...this.config, ...config };
    if (config.seed !== undefined) this.rng = new Rng(config.seed);
  }

  off(): void {
    this.config = { ...NO_FAULTS, seed: this.config.seed };
    this.burstUntil.clear();
  }

  /** Seconds left of a 429 burst on this key, or 0. */
  burstRemaining(keyId: string, nowMs: number): number {
    const until = this.burstUntil.get(keyId) ?? 0;
    return until > nowMs ? Math.max(1, Math.ceil((until - nowMs) / 1000)) : 0;
  }

  decide(endpoint: string, keyId: string | null, nowMs: number): FaultDecision {
    const c = this.config;
    let delayMs = c.baseLatencyMs;
    const applies = c.endpoints.length === 0 || c.endpoints.includes(endpoint);
    if (!applies) return { delayMs, action: 'none', status: 200 };
    if (c.latencyRate > 0 && this.rng.chance(c.latencyRate)) {
      delayMs += c.latencyMinMs + this.rng.next() * (c.latencyMaxMs - c.latencyMinMs);
    }
    const r = this.rng.next();
    let edge = c.resetRate;
    if (r < edge) return { delayMs, action: 'reset', status: 0 };
    edge += c.serverErrorRate;
    if (r < edge) return { delayMs, action: 'server_error', status: this.rng.pick([500, 500, 502, 503]) };
    edge += c.burst429Rate;
    if (r < edge && keyId !== null) {
      this.burstUntil.set(keyId, nowMs + c.burst429Seconds * 1000);
      return { delayMs, action: 'burst_429', status: 429 };
    }
    edge += c.malformedRate;
    if (r < edge) return { delayMs, action: 'malformed', status: 200 };
    edge += c.truncatedRate;
    if (r < edge) return { delayMs, action: 'truncated', status: 200 };
    edge += c.hangRate;
    if (r < edge) return { delayMs, action: 'hang', status: 0 };
    edge += c.stallRate;
    if (r < edge) return { delayMs, action: 'stall', status: 200 };
    edge += c.spurious429Rate;
    if (r < edge) {
      const low = Math.max(1, Math.round(c.spurious429MinSeconds));
      const retryAfter = this.rng.int(low, Math.max(low, Math.round(c.spurious429MaxSeconds)));
      return { delayMs, action: 'spurious_429', status: 429, retryAfter };
    }
    return { delayMs, action: 'none', status: 200 };
  }
}
