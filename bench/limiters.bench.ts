import { Redis } from 'ioredis';
import { ApiClient } from '../src/api/index.ts';
import { SharedRateBudget } from '../src/budget/index.ts';
import { RedisBudgetStore } from '../src/budget/redis-store.ts';
import { RATE_MODELS, type RateModel, type RequestRecord } from '../src/simulator/index.ts';
import type { Bench, BenchContext, BenchRow } from './bench-types.ts';
import { type Burst, burst, rateLimitedSimulator, share429Row } from './rate-kit.ts';

// The rate budget against every limiter the simulator runs, at R = 5, 20, 50 and 200 requests per
// second per key, from one worker and from three sharing the budget in Redis: each fetches its
// share of run details with eight at a time, starting cold (nothing learned). The budget keeps no
// reserve here, so the goal is the key's whole rate:
// - wall ÷ (requests ÷ R): 1.00 is every request at the key's rate; below 1 means the bucket's
//   first burst paid for part of it;
// - 429 share, and the busiest aligned second of detail fetches against R.
// REDIS_URL (default redis://127.0.0.1:6379) holds the shared budget.

const RATES = [5, 20, 50, 200];
const WORKERS = [1, 3];
/** Seconds of traffic each case aims at (BENCH_SCALE scales it). */
const SECONDS = 12;

interface Case {
  model: RateModel;
  rate: number;
  workers: number;
}

/** The busiest second counts the details answered. */
const isDetail = (r: RequestRecord) => r.endpoint === 'runs.get' && r.status === 200;

async function runCase(c: Case, n: number, redis: Redis, run: number): Promise<Burst> {
  const sim = await rateLimitedSimulator({ seed: 23, size: n + 20, rate: c.rate, latencyMs: 20, model: c.model });
  const ids = [...sim.world.truthRunDetails()].slice(0, n).map((d) => String((d as { id: unknown }).id));
  const key = `runsync-bench:limiters:${process.pid}:${run}`;
  const store = new RedisBudgetStore({ redis, key });
  const clients = Array.from(
    { length: c.workers },
    () => new ApiClient({ baseUrl: sim.url, apiKey: sim.key, budget: new SharedRateBudget({ store, reserve: 0 }) }),
  );
  try {
    const shares = clients.map((_, w) => ids.filter((_, i) => i % c.workers === w));
    const fetchAll = async () => {
      const oks = await Promise.all(
        clients.map(async (client, w) => {
          let ok = 0;
          for await (const r of client.fetchRunDetails(shares[w] as string[], { concurrency: 8 })) if (r.ok) ok++;
          return ok;
        }),
      );
      return oks.reduce((a, b) => a + b, 0);
    };
    return await burst(sim, fetchAll, isDetail);
  } finally {
    for (const client of clients) await client.close();
    await redis.del(key);
    await sim.close();
  }
}

function rows(c: Case, o: Burst, n: number): BenchRow[] {
  const label = `${c.model}, R ${c.rate}, ${c.workers} worker${c.workers > 1 ? 's' : ''}`;
  const answered = o.requests - o.limited;
  return [
    {
      bench: 'limiters',
      metric: `${label}: wall / (requests / R)`,
      value: o.seconds / (answered / c.rate),
      goal: '<= 1.05',
      note:
        `${o.ok}/${n} details, ${answered} answered in ${o.seconds.toFixed(1)} s; ` +
        `busiest second ${o.busiestSecond}/${c.rate}`,
    },
    share429Row('limiters', label, o, '<= 0.5%'),
  ];
}

const bench: Bench = async (ctx: BenchContext) => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
  const out: BenchRow[] = [];
  let run = 0;
  try {
    for (const model of RATE_MODELS) {
      for (const rate of RATES) {
        for (const workers of WORKERS) {
          const c = { model, rate, workers };
          const n = Math.max(30, Math.round(rate * SECONDS * ctx.scale));
          const o = await runCase(c, n, redis, run++);
          const ratio = o.seconds / ((o.requests - o.limited) / rate);
          ctx.log(`${model} R=${rate} x${workers}: ${ratio.toFixed(3)}, ${o.limited} x 429`);
          out.push(...rows(c, o, n));
        }
      }
    }
  } finally {
    redis.disconnect();
  }
  return out;
};

export default bench;
