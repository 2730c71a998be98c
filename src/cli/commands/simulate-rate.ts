import { InvalidArgumentError } from 'commander';
import { RATE_MODELS, type RateLimitConfig, type RateModel } from '../../simulator/index.ts';

// The simulator's rate-limit flags: which algorithm, which buckets, and a neighbour drawing from the
// organization's bucket.

export interface RateFlags {
  rateLimit: number;
  rateWindow: number;
  rateModel: RateModel;
  rateBurst?: number;
  rateOrg: number;
  rateEndpoint?: Record<string, number>;
  rateNeighbour: number;
  /** Mean size of the neighbour's bursts; 0: evenly paced. */
  rateNeighbourBurst: number;
  rateNeighbourSeed: number;
}

export function rateModel(v: string): RateModel {
  if (!(RATE_MODELS as readonly string[]).includes(v))
    throw new InvalidArgumentError(`expected one of ${RATE_MODELS.join(', ')}`);
  return v as RateModel;
}

export function nonNegative(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0');
  return n;
}

export function endpointLimits(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of text.split(',').map((s) => s.trim())) {
    const [name, value] = part.split('=');
    const n = Number(value);
    if (!name || !Number.isInteger(n) || n < 1)
      throw new InvalidArgumentError(`expected endpoint=limit pairs, e.g. runs.get=10; got "${part}"`);
    out[name] = n;
  }
  return out;
}

export function rateLimitConfig(o: RateFlags): Partial<RateLimitConfig> {
  const bucket = (limit: number) => ({
    limit,
    windowSeconds: o.rateWindow,
    ...(o.rateBurst === undefined ? {} : { burst: Math.max(o.rateBurst, 1) }),
  });
  return {
    model: o.rateModel,
    perKey: o.rateLimit > 0 ? bucket(o.rateLimit) : null,
    perOrg: o.rateOrg > 0 ? bucket(o.rateOrg) : null,
    perEndpoint: Object.fromEntries(Object.entries(o.rateEndpoint ?? {}).map(([k, v]) => [k, bucket(v)])),
    neighbourPerSecond: o.rateNeighbour,
    neighbourBursts: o.rateNeighbourBurst > 0 ? { meanSize: o.rateNeighbourBurst, seed: o.rateNeighbourSeed } : null,
  };
}
