import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportParquet } from '../src/export/index.ts';
import { DEFAULT_RUNS_PER_FILE } from '../src/export/spans.ts';
import { SimClock } from '../src/simulator/clock.ts';
import { SimWorld } from '../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import { loadRunDetails, openWarehouse } from '../src/warehouse/index.ts';
import type { Warehouse } from '../src/warehouse/types.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `What the Parquet export after a short pass writes on busy days (20,000 runs a day, two days;
\`BENCH_SCALE\` scales it). The runs a continuous pass changes are the newest ones (new runs, open
runs settling) or a few scattered ones (what the rolling reconciliation finds): 50 of each are
changed, and the same warehouse is exported with each partition as one file (a quiet day's layout)
and split by span of created time. Bytes written are compared with the bytes of the changed runs'
rows, their share of the partitions they lie in.`;

const RUNS_PER_DAY = 20_000;
const DAYS = 2;
const CHANGED = 50;

type Detail = Record<string, unknown>;

function bytesOf(dir: string, files: readonly string[]): number {
  return files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

/** A newer version of each of the runs: the same content, a later updated_at and another status. */
function touched(runs: readonly Detail[], year: number): Detail[] {
  return runs.map((r) => ({ ...r, updated_at: `${year}-01-01T00:00:00.000000Z`, status: 'failed' }));
}

async function measure(wh: Warehouse, changed: readonly Detail[], runsPerFile: number) {
  await loadRunDetails(wh, changed as never);
  const t0 = performance.now();
  const r = await exportParquet(wh, { runsPerFile });
  const ms = performance.now() - t0;
  return { ms, written: bytesOf(wh.dir, r.written), files: r.written.length };
}

const bench: Bench = async (ctx) => {
  const size = Math.max(2000, Math.round(RUNS_PER_DAY * DAYS * ctx.scale));
  const now = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
  const world = new SimWorld({ seed: 61, size, days: DAYS, initialNow: now }, new SimClock(now));
  const details = [...world.truthRunDetails()] as Detail[];
  const byCreated = [...details].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
  const newest = byCreated.slice(-CHANGED);
  const scattered = Array.from({ length: CHANGED }, (_, i) => byCreated[Math.floor((i * byCreated.length) / CHANGED)]);
  const rows: BenchRow[] = [];
  for (const [layout, runsPerFile] of [
    ['one file a day', Number.MAX_SAFE_INTEGER],
    ['spans of created time', DEFAULT_RUNS_PER_FILE],
  ] as const) {
    const root = mkdtempSync(join(tmpdir(), 'runsync-bench-export-'));
    try {
      const wh = await openWarehouse(join(root, 'w'));
      try {
        // In batches, as a pass loads them: one call with every run would merge them in one go.
        for (let i = 0; i < details.length; i += 1000) await loadRunDetails(wh, details.slice(i, i + 1000) as never);
        const first = await exportParquet(wh, { full: true, runsPerFile });
        const tree = bytesOf(wh.dir, first.written);
        ctx.log(`${layout}: ${first.written.length} files, ${(tree / 1e6).toFixed(1)} MB`);
        for (const [what, runs, year] of [
          [`${CHANGED} newest runs`, newest, 2098],
          [`${CHANGED} runs spread over the days`, scattered, 2099],
        ] as const) {
          const m = await measure(wh, touched(runs as Detail[], year), runsPerFile);
          const changedBytes = (tree / size) * CHANGED;
          ctx.log(`${layout}, ${what}: ${m.files} files, ${(m.written / 1e6).toFixed(2)} MB in ${m.ms.toFixed(0)} ms`);
          rows.push({
            bench: 'export-change',
            metric: `${layout}, ${what}: bytes written / bytes of the changed rows`,
            value: m.written / changedBytes,
            note: `${m.files} files, ${(m.written / 1e6).toFixed(2)} MB in ${(m.ms / 1000).toFixed(2)} s; tree ${(
              tree / 1e6
            ).toFixed(1)} MB, ${size} runs over ${DAYS} days`,
          });
        }
      } finally {
        await wh.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  return rows;
};

export default bench;
