import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { type ExportResult, exportParquet, type ParquetTarget } from '../src/export/index.ts';
import { SimClock } from '../src/simulator/clock.ts';
import { SimWorld } from '../src/simulator/index.ts';
import { S3Store } from '../src/storage/s3.ts';
import { type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import { loadRunDetails, openWarehouse } from '../src/warehouse/index.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `The Parquet export of one warehouse (30,000 runs over 3 days; \`BENCH_SCALE\` scales it) to local
disk and to an S3-compatible bucket, side by side: a full export, then the export after a short
pass changed a few of the newest runs, two rounds each, the faster kept. The bucket is s3rver on
this machine, in the bench's process, so the figures compare runsync's own work for an object store
(uploads under the generation's names, manifests, the swap, the copies into the tables' folders)
with renames on disk; a real store adds its network on top.`;

const RUNS_PER_DAY = 10_000;
const DAYS = 3;
const CHANGED = 50;
const ROUNDS = 2;

type Detail = Record<string, unknown>;

async function timed(run: () => Promise<ExportResult>): Promise<{ s: number; files: number }> {
  const t0 = performance.now();
  const r = await run();
  return { s: (performance.now() - t0) / 1000, files: r.written.length };
}

const bench: Bench = async (ctx) => {
  const size = Math.max(2000, Math.round(RUNS_PER_DAY * DAYS * ctx.scale));
  const now = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
  const world = new SimWorld({ seed: 62, size, days: DAYS, initialNow: now }, new SimClock(now));
  const details = [...world.truthRunDetails()] as Detail[];
  const newest = [...details].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at))).slice(-CHANGED);
  const root = mkdtempSync(join(tmpdir(), 'runsync-bench-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory: join(root, 's3'),
    silent: true,
    configureBuckets: [{ name: 'bench', configs: [] }],
  });
  const { port } = (await server.run()) as { port: number };
  const store = new S3Store({
    bucket: 'bench',
    prefix: 'runsync/parquet',
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    pathStyle: true,
    credentialsFile: null,
    profile: 'default',
  });
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const rows: BenchRow[] = [];
  try {
    const wh = await openWarehouse(join(root, 'w'));
    try {
      for (let i = 0; i < details.length; i += 1000) await loadRunDetails(wh, details.slice(i, i + 1000) as never);
      const targets: [string, ParquetTarget][] = [
        ['local disk', { folder: join(root, 'w', 'parquet') }],
        ['bucket', { store, graceMs: 3_600_000 }],
      ];
      // The first export of a warehouse pays for what DuckDB reads in once: paid here, by neither side.
      await exportParquet(wh, { full: true, target: { folder: join(root, 'warm-up') } });
      // Rounds in turn, each side first once; the faster of a side's rounds is kept, as other work
      // on the machine slows one round or the other.
      const full: Record<string, { s: number; files: number }> = {};
      const change: Record<string, { s: number; files: number }> = {};
      const best = (into: typeof full, name: string, m: { s: number; files: number }) => {
        if (!into[name] || m.s < (into[name]?.s ?? 0)) into[name] = m;
      };
      let year = 2090;
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, target] of round % 2 ? [...targets].reverse() : targets) {
          const f = await timed(() => exportParquet(wh, { full: true, target }));
          // The same change for each: an export clears the marks, so the change is made again.
          await loadRunDetails(wh, newest.map((r) => ({ ...r, updated_at: `${year++}-01-01T00:00:00Z` })) as never);
          const c = await timed(() => exportParquet(wh, { target }));
          ctx.log(
            `${name}, round ${round + 1}: full ${f.s.toFixed(2)} s (${f.files} files), ` +
              `after a change ${c.s.toFixed(2)} s`,
          );
          best(full, name, f);
          best(change, name, c);
        }
      }
      const note = `${size} runs over ${DAYS} days; s3rver on this machine; faster of ${ROUNDS} rounds`;
      for (const [what, m] of [
        ['full export', full],
        [`export after ${CHANGED} newest runs changed`, change],
      ] as const) {
        const disk = m['local disk'] as { s: number; files: number };
        const bucket = m.bucket as { s: number; files: number };
        rows.push(
          {
            bench: 'export-s3',
            metric: `${what}, to local disk`,
            value: disk.s,
            unit: 's',
            note: `${disk.files} files; ${note}`,
          },
          {
            bench: 'export-s3',
            metric: `${what}, to the bucket`,
            value: bucket.s,
            unit: 's',
            note: `${bucket.files} files; ${note}`,
          },
          { bench: 'export-s3', metric: `${what}: bucket / local disk`, value: bucket.s / disk.s, unit: '×' },
        );
      }
    } finally {
      await wh.close();
    }
  } finally {
    await store.close();
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
};

export default bench;
