import { afterEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { neighbourSchedule } from '../../src/simulator/neighbour.ts';
import { type RateLimitConfig, SimRateLimiter } from '../../src/simulator/rate-limit.ts';
import { get } from '../support/sim-http.ts';

// The organization's neighbour: evenly paced, or in random bursts whose average is the configured
// rate. Read as a client would, from the organization bucket's Remaining at the end of each of its
// fixed one-second windows, on the limiter's own clock (exact instants), then once over HTTP.

const SECONDS = 600;
const LIMIT = 1000;

/** Requests the neighbour took in each one-second window. */
function neighbourUse(config: Partial<RateLimitConfig>): number[] {
  const limiter = new SimRateLimiter({
    model: 'fixed',
    perKey: null,
    perOrg: { limit: LIMIT, windowSeconds: 1 },
    perEndpoint: {},
    neighbourPerSecond: 25,
    ...config,
  });
  const t0 = 1_800_000_000_000;
  const use: number[] = [];
  // A first request starts the neighbour; each second's last instant then shows what it took.
  limiter.check('k', 'org', 'runs.list', t0);
  for (let s = 1; s <= SECONDS; s++) {
    const d = limiter.check('k', 'org', 'runs.list', t0 + s * 1000 + 999);
    use.push(LIMIT - 1 - (d?.remaining ?? 0));
  }
  return use;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const variance = (xs: number[]) => mean(xs.map((x) => (x - mean(xs)) ** 2));

describe('the neighbour', () => {
  it('evenly paced takes its rate every second', () => {
    const use = neighbourUse({});
    expect(Math.min(...use)).toBeGreaterThanOrEqual(24);
    expect(Math.max(...use)).toBeLessThanOrEqual(26);
  });

  it('in bursts takes its rate on average, in bursts far from even', () => {
    const use = neighbourUse({ neighbourBursts: { meanSize: 8, seed: 3 } });
    // 25/s in bursts of 8 on average: about 1,900 bursts over the run, so the mean is within 10%.
    expect(mean(use)).toBeGreaterThan(25 * 0.9);
    expect(mean(use)).toBeLessThan(25 * 1.1);
    // Compound Poisson with geometric sizes of mean m: variance / mean = 2m - 1 (15 here); an
    // even neighbour's is 0, a Poisson one's 1.
    expect(variance(use) / mean(use)).toBeGreaterThan(8);
    expect(use.filter((n) => n === 0).length).toBeGreaterThan(SECONDS / 100);
    expect(Math.max(...use)).toBeGreaterThan(25 * 2.5);
  });

  it('in bursts repeats for a seed and differs for another', () => {
    const at = (seed: number) => {
      const s = neighbourSchedule(25, { meanSize: 8, seed }, 'org');
      s?.due(0);
      return s?.due(60_000);
    };
    expect(at(3)).toEqual(at(3));
    expect(at(3)).not.toEqual(at(4));
    expect(at(3)?.length).toBeGreaterThan(0);
  });

  it('is drawn per organization', () => {
    const of = (org: string) => {
      const s = neighbourSchedule(25, { meanSize: 8, seed: 3 }, org);
      s?.due(0);
      return s?.due(60_000);
    };
    expect(of('a')).not.toEqual(of('b'));
  });
});

describe('the bursty neighbour over HTTP', () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('draws from a library-run organization bucket between our requests', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 50,
      rateLimit: {
        model: 'express-fixed',
        perKey: null,
        perOrg: { limit: 10_000, windowSeconds: 60 },
        neighbourPerSecond: 200,
        neighbourBursts: { meanSize: 10, seed: 5 },
      },
    });
    const first = await get(sim, '/api/v1/runs', { limit: 1 });
    await new Promise((r) => setTimeout(r, 1500));
    const second = await get(sim, '/api/v1/runs', { limit: 1 });
    const taken =
      Number(first.headers.get('x-ratelimit-remaining')) - Number(second.headers.get('x-ratelimit-remaining'));
    // Ours is one of them; 200/s for 1.5 s is about 300 from the neighbour, in some 30 bursts.
    expect(taken - 1).toBeGreaterThan(100);
    expect(taken - 1).toBeLessThan(800);
  });
});
