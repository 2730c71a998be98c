import { Redis } from 'ioredis';
import { ApiClient } from '../src/api/index.ts';
import { SharedRateBudget } from '../src/budget/index.ts';
import { RedisBudgetStore } from '../src/budget/redis-store.ts';
import { DEFAULT_ORG, type RequestRecord } from '../src/simulator/index.ts';
import type { Bench, BenchContext, BenchRow } from './bench-types.ts';
import { evenPacerFloor } from './even-pacer.ts';
import { type Burst, burst, caseRateLimit, LIMITER_CASES, type LimiterCase, rateLimitedSimulator } from './rate-kit.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The rate budget against every limiter the simulator runs (\`--rate-model\`: the project's fixed
window, sliding log, token buckets whose Reset is "full again at" or "next token at" and GCRA, and
those run by npm libraries: rate-limiter-flexible's fixed and bursty limiters, express-rate-limit,
limiter's token bucket and rate limiter), plus a GCRA whose burst is twice its rate, a sliding log
and fixed windows of ten seconds, an organization bucket (a token bucket) that a
neighbour draws a quarter of in random bursts, and a key's fixed window behind a gateway that sheds
3% of requests with 429s (Retry-After 1-2 s) and fails 5% with 5xx; at R = 5, 20, 50 and 200
requests per second, from one worker and from three sharing the budget in Redis (\`REDIS_URL\`,
default redis://127.0.0.1:6379). Each case starts cold and fetches about ten seconds' worth of run
details (at least 50) with as many in flight as the pace needs, as a sync does; the budget keeps no
reserve, so the goal is the whole rate left to us. Reported per case, with one goal for all: wall
time over requests ÷ R, where requests are those the limiter counted, R is the rate left to us (the
neighbour's share taken off) and the span the spurious 429s' Retry-After covered is added to the
ideal (1.00 is every request at that rate; below 1, a bucket's first burst paid for part of it); the
share of 429s the limiter sent; and the busiest aligned second of detail fetches, runs-list pages
and all requests. For a limiter with a neighbour, a row gives the floor: the 429s a client would
meet that knew the rate left to it and sent evenly at exactly that rate, replayed against the same
limits and neighbour from 40 starts. \`BENCH_LIMITERS\`, \`BENCH_RATES\` and \`BENCH_WORKERS\`
(comma lists) pick cases,
\`BENCH_REPEAT\` runs each that many times and \`BENCH_TRACE=1\` prints each case's tenths of a
second.`;

const list = (v: string | undefined, all: number[]) => (v ? v.split(',').map(Number) : all);
const RATES = list(process.env.BENCH_RATES, [5, 20, 50, 200]);
const WORKERS = list(process.env.BENCH_WORKERS, [1, 3]);
const REPEAT = Number(process.env.BENCH_REPEAT ?? '1');
/**
 * Seconds of traffic each case aims at (BENCH_SCALE scales it), and the fewest requests: long
 * enough that a cold start is not most of the case, as it is not of a first sync.
 */
const SECONDS = 10;
const MIN_REQUESTS = 50;

interface Case {
  limiter: LimiterCase;
  rate: number;
  workers: number;
}

/** The busiest second counts the details answered; the list pages' own is counted apart. */
const isDetail = (r: RequestRecord) => r.endpoint === 'runs.get' && r.status === 200;
const isList = (r: RequestRecord) => r.endpoint === 'runs.list' && r.status === 200;

interface Outcome extends Burst {
  /** Most runs-list pages answered in any aligned second, and most requests of any endpoint. */
  busiestList: number;
  busiestAll: number;
}

async function runCase(c: Case, n: number, redis: Redis, run: number): Promise<Outcome> {
  const sim = await rateLimitedSimulator({
    seed: 23,
    size: n + 20,
    rate: c.rate,
    latencyMs: 20,
    ...c.limiter.limits(c.rate),
  });
  // Ids from the plans, not the details: building a detail costs more than a short case's traffic.
  const ids = [...sim.world.visibleRuns()].slice(0, n).map((r) => r.plan.id);
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
          for await (const r of client.fetchRunDetails(shares[w] as string[])) if (r.ok) ok++;
          return ok;
        }),
      );
      return oks.reduce((a, b) => a + b, 0);
    };
    const watch = process.env.BENCH_TRACE ? watchBudget(store) : null;
    const o = await burst(sim, fetchAll, isDetail);
    const seen = await watch?.stop();
    if (process.env.BENCH_TRACE) trace(sim.counters.log(), seen ?? []);
    const ok = (r: RequestRecord) => r.status === 200;
    return {
      ...o,
      busiestList: sim.counters.maxInAlignedWindow(1000, isList),
      busiestAll: sim.counters.maxInAlignedWindow(1000, ok),
    };
  } finally {
    for (const client of clients) await client.close();
    await redis.del(key);
    await sim.close();
  }
}

/** What the shared budget believed of the key's bucket, each half second. */
function watchBudget(store: RedisBudgetStore) {
  const seen: string[] = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      const s = await store.read();
      const b = Object.values(s.buckets).find((x) => x.endpoint === null);
      seen.push(
        b
          ? `window ${b.windowMs / 1000}s burst ${b.burst} others ${b.others.toFixed(1)} factor ${b.factor.toFixed(2)}`
          : '-',
      );
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return seen;
    },
  };
}

/** Tenths of a second from the first request: `details/list pages/429s`, ten to a line. */
function trace(log: readonly RequestRecord[], seen: readonly string[]): void {
  const t0 = log[0]?.t ?? 0;
  const tenths: [number, number, number][] = [];
  for (const r of log) {
    const i = Math.floor((r.t - t0) / 100);
    while (tenths.length <= i) tenths.push([0, 0, 0]);
    const cell = tenths[i] as [number, number, number];
    if (r.status === 429) cell[2]++;
    else if (r.endpoint === 'runs.list') cell[1]++;
    else cell[0]++;
  }
  for (let s = 0; s * 10 < tenths.length; s++) {
    const second = tenths.slice(s * 10, s * 10 + 10);
    const sum = second.reduce((n, c) => n + c[0] + c[1], 0);
    const cells = second.map(([d, l, x]) => `${d}${l ? `+${l}` : ''}${x ? `!${x}` : ''}`);
    console.error(
      `     ${String(s).padStart(3)}s ${String(sum).padStart(4)}: ${cells.join(' ')}   ${seen[2 * s] ?? ''}`,
    );
  }
}

/** Wall time over the ideal: the requests counted at the rate left to us, plus spurious waits. */
function ratio(c: Case, o: Outcome): number {
  return o.seconds / (o.charged / (c.rate * c.limiter.share) + o.spuriousWaitSeconds);
}

function row(c: Case, o: Outcome, n: number): BenchRow {
  const share = (100 * o.limited) / Math.max(1, o.requests);
  const spurious =
    o.spurious > 0 ? `; spurious 429s ${o.spurious}, their Retry-After ${o.spuriousWaitSeconds.toFixed(1)} s` : '';
  return {
    bench: 'limiters',
    metric: `${c.limiter.name}, R ${c.rate}, ${c.workers} worker${c.workers > 1 ? 's' : ''}: wall / (requests / R)`,
    value: ratio(c, o),
    goal: '<= 1.05; 429s <= 0.5%',
    note:
      `${o.ok}/${n} details, ${o.charged} counted in ${o.seconds.toFixed(1)} s; ` +
      `429s ${o.limited}/${o.requests} (${share.toFixed(2)}%)${spurious}; busiest second: ` +
      `runs.get ${o.busiestSecond}, runs.list ${o.busiestList}, all ${o.busiestAll} of ${c.rate}`,
  };
}

/** The same outcomes as one line per limiter and rate, a compact table printed to the log. */
function pivot(results: { c: Case; o: Outcome }[]): string[] {
  const cell = (r: { c: Case; o: Outcome } | undefined) =>
    r === undefined
      ? '| | | '
      : `| ${ratio(r.c, r.o).toFixed(2)} | ${r.o.limited}/${r.o.requests} | ` +
        `${r.o.busiestSecond} / ${r.o.busiestList} / ${r.o.busiestAll} `;
  const lines = [
    '| limiter | R | 1 worker | 429s | busiest get / list / all | 3 workers | 429s | busiest get / list / all |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const { name } of LIMITER_CASES) {
    for (const rate of RATES) {
      const at = (w: number) =>
        results.find((r) => r.c.limiter.name === name && r.c.rate === rate && r.c.workers === w);
      if (!at(1) && !at(3)) continue;
      lines.push(`| ${name} | ${rate} ${cell(at(1))}${cell(at(3))}|`);
    }
  }
  return lines;
}

/**
 * For a limiter with a neighbour: the 429s a client that knew the rate left to it, sending evenly
 * at exactly that rate, meets on the same bucket and neighbour. The goal cannot ask less of a case.
 */
function floorRow(limiter: LimiterCase, rate: number, n: number): BenchRow | null {
  const limits = caseRateLimit({ rate, ...limiter.limits(rate) });
  const floor = evenPacerFloor(limits, DEFAULT_ORG, rate * limiter.share, n);
  if (floor === null) return null;
  return {
    bench: 'limiters',
    metric: `${limiter.name}, R ${rate}: an even pacer at the rate left, 429 share`,
    value: 100 * floor.share,
    unit: '%',
    goal: 'the floor pacing alone can reach',
    note:
      `${floor.meanRefused.toFixed(2)} refused of ${n} requests on average; ` +
      `at least one refused from ${floor.refusedAtAll} of ${floor.starts} starts`,
  };
}

/** The limiters BENCH_LIMITERS names (all by default); an unknown name is refused with the list. */
function chosenLimiters(names: string | undefined): LimiterCase[] {
  if (!names) return [...LIMITER_CASES];
  return names.split(',').map((name) => {
    const found = LIMITER_CASES.find((l) => l.name === name.trim());
    if (!found)
      throw new Error(`BENCH_LIMITERS: no limiter ${name}; have ${LIMITER_CASES.map((l) => l.name).join(', ')}`);
    return found;
  });
}

const bench: Bench = async (ctx: BenchContext) => {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
  const out: BenchRow[] = [];
  const results: { c: Case; o: Outcome }[] = [];
  const limiters = chosenLimiters(process.env.BENCH_LIMITERS);
  let run = 0;
  try {
    for (const limiter of limiters) {
      for (const rate of RATES) {
        const n = Math.max(MIN_REQUESTS, Math.round(rate * SECONDS * ctx.scale));
        for (const workers of WORKERS.flatMap((w) => Array<number>(REPEAT).fill(w))) {
          const c = { limiter, rate, workers };
          const o = await runCase(c, n, redis, run++);
          const spurious = o.spurious > 0 ? `, ${o.spurious} spurious` : '';
          ctx.log(`${limiter.name} R=${rate} x${workers}: ${ratio(c, o).toFixed(3)}, ${o.limited} x 429${spurious}`);
          out.push(row(c, o, n));
          results.push({ c, o });
        }
        const floor = floorRow(limiter, rate, n);
        if (floor) {
          ctx.log(`${limiter.name} R=${rate}, an even pacer at the rate left: ${floor.note}`);
          out.push(floor);
        }
      }
    }
  } finally {
    redis.disconnect();
  }
  for (const line of pivot(results)) ctx.log(line);
  return out;
};

export default bench;
