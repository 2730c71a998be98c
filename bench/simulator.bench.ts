import { startSimulator } from '../src/simulator/index.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The simulator serving a million runs without a million objects in memory: its heap after paging
20,000 summaries and fetching 2,000 details, the rates it serves them at, and the time of the
tool-options list (which counts every run: the first request reads them all, later ones only what
changed), at 10,000 and at 1,000,000 runs, side by side.`;

interface Measured {
  heapMb: number;
  summariesPerS: number;
  detailsPerS: number;
  toolOptionsFirstMs: number;
  toolOptionsNextMs: number;
}

async function measure(size: number): Promise<Measured> {
  const sim = await startSimulator({
    seed: 1,
    size,
    days: 365,
    now: '2026-03-01T00:00:00Z',
    rateLimit: { perKey: null },
  });
  const headers = { authorization: `Bearer ${sim.key}` };
  try {
    let cursor: string | null = null;
    const ids: string[] = [];
    const t0 = performance.now();
    while (ids.length < Math.min(20_000, size)) {
      const url = `${sim.url}/api/v1/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = (await (await fetch(url, { headers })).json()) as {
        data: { id: string }[];
        pagination: { next_cursor: string | null };
      };
      ids.push(...page.data.map((r) => r.id));
      cursor = page.pagination.next_cursor;
      if (!cursor) break;
    }
    const t1 = performance.now();
    const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(ids.length / 2000)) === 0).slice(0, 2000);
    for (const id of sample) await (await fetch(`${sim.url}/api/v1/runs/${id}`, { headers })).arrayBuffer();
    const t2 = performance.now();
    await (await fetch(`${sim.url}/api/v1/runs/tool-options`, { headers })).arrayBuffer();
    const t3 = performance.now();
    sim.advance('1h');
    await (await fetch(`${sim.url}/api/v1/runs/tool-options`, { headers })).arrayBuffer();
    const t4 = performance.now();
    global.gc?.();
    return {
      heapMb: process.memoryUsage().heapUsed / 2 ** 20,
      summariesPerS: ids.length / ((t1 - t0) / 1000),
      detailsPerS: sample.length / ((t2 - t1) / 1000),
      toolOptionsFirstMs: t3 - t2,
      toolOptionsNextMs: t4 - t3,
    };
  } finally {
    await sim.close();
  }
}

const bench: Bench = async ({ log }) => {
  const rows: BenchRow[] = [];
  for (const size of [10_000, 1_000_000]) {
    const m = await measure(size);
    log(`${size} runs: heap ${m.heapMb.toFixed(0)} MB`);
    rows.push(
      {
        bench: 'simulator',
        metric: `heap after serving, ${size} runs`,
        value: m.heapMb,
        unit: 'MB',
        goal: 'flat in size',
      },
      { bench: 'simulator', metric: `summaries served/s, ${size} runs`, value: m.summariesPerS, unit: '/s' },
      { bench: 'simulator', metric: `details served/s, ${size} runs`, value: m.detailsPerS, unit: '/s' },
      {
        bench: 'simulator',
        metric: `tool-options, first request, ${size} runs`,
        value: m.toolOptionsFirstMs,
        unit: 'ms',
      },
      { bench: 'simulator', metric: `tool-options, 1h later, ${size} runs`, value: m.toolOptionsNextMs, unit: 'ms' },
    );
  }
  return rows;
};
export default bench;
