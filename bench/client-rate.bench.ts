import { ApiClient } from '../src/api/index.ts';
import { SharedRateBudget } from '../src/budget/index.ts';
import type { Simulator } from '../src/simulator/index.ts';
import type { Bench, BenchContext, BenchRow } from './bench-types.ts';
import { type Burst, burst, rateLimitedSimulator, share429Row } from './rate-kit.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The API client fetching run details from a simulator that allows R requests per second per
key (R = 50, \`BENCH_RATE_LIMIT\` to change it), at 0 and 50 ms of network latency, three ways: the
budgeted client cold (a fresh budget that knows nothing and learns the limit from one runs-list
page before the burst), the budgeted client warm (the budget that just paged the runs list, as a
sync does), and a naive sequential loop that waits out each 429's Retry-After. Each case fetches
2,000 details (\`BENCH_SCALE\` scales it) and reports the rate achieved over R and the share of
requests answered 429. The budget keeps its default 5% reserve for the key's other users, so 0.95
of R is the most it aims for.`;

type ClientKind = 'budgeted, cold' | 'budgeted, warm' | 'naive sequential';
const CLIENTS: ClientKind[] = ['budgeted, cold', 'budgeted, warm', 'naive sequential'];

/** The simulator's per-key limit, requests per second (BENCH_RATE_LIMIT to change it). */
const R = Number(process.env.BENCH_RATE_LIMIT ?? '50');
const LATENCIES_MS = [0, 50];

async function runIds(sim: Simulator, n: number, budget: SharedRateBudget): Promise<string[]> {
  const lister = new ApiClient({ baseUrl: sim.url, apiKey: sim.key, budget });
  const ids: string[] = [];
  for await (const run of lister.iterateRuns({}, { pageSize: 100 })) {
    ids.push(run.id);
    if (ids.length === n) break;
  }
  await lister.close();
  return ids;
}

async function budgeted(sim: Simulator, ids: string[], budget: SharedRateBudget): Promise<number> {
  const client = new ApiClient({ baseUrl: sim.url, apiKey: sim.key, budget });
  let ok = 0;
  for await (const r of client.fetchRunDetails(ids, { concurrency: 8 })) if (r.ok) ok++;
  await client.close();
  return ok;
}

async function naive(sim: Simulator, ids: string[]): Promise<number> {
  let ok = 0;
  for (const id of ids) {
    for (;;) {
      const res = await fetch(`${sim.url}/api/v1/runs/${id}`, { headers: { authorization: `Bearer ${sim.key}` } });
      await res.arrayBuffer();
      if (res.status === 429) {
        await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? '1') * 1000));
        continue;
      }
      if (res.ok) ok++;
      break;
    }
  }
  return ok;
}

function rows(client: string, latencyMs: number, n: number, r: Burst): BenchRow[] {
  const label = `${client}, ${latencyMs} ms`;
  return [
    {
      bench: 'client-rate',
      metric: `${label}: rate / R`,
      value: r.ok / r.seconds / R,
      goal: '>= 0.90',
      note: `${r.ok}/${n} in ${r.seconds.toFixed(1)} s; busiest second ${r.busiestSecond}`,
    },
    share429Row('client-rate', label, r, '<= 1%'),
  ];
}

const bench: Bench = async (ctx: BenchContext) => {
  const n = Math.max(100, Math.round(2000 * ctx.scale));
  const out: BenchRow[] = [];
  for (const latencyMs of LATENCIES_MS) {
    for (const client of CLIENTS) {
      const sim = await rateLimitedSimulator({ seed: 21, size: n + 100, rate: R, latencyMs });
      try {
        const listing = new SharedRateBudget();
        const ids = await runIds(sim, n, listing);
        ctx.log(`${client}, ${latencyMs} ms: ${n} details at R = ${R}/s`);
        const fetchAll =
          client === 'naive sequential'
            ? () => naive(sim, ids)
            : () => budgeted(sim, ids, client === 'budgeted, warm' ? listing : new SharedRateBudget());
        // Start in a fresh window of the server's limiter.
        await new Promise((r) => setTimeout(r, 1100));
        const r = await burst(sim, fetchAll);
        ctx.log(`  ${(r.ok / r.seconds / R).toFixed(3)} of R, ${r.limited} x 429 of ${r.requests}`);
        out.push(...rows(client, latencyMs, n, r));
      } finally {
        await sim.close();
      }
    }
  }
  return out;
};

export default bench;
