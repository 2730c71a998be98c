import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { RESOURCES } from '../resources/registry.ts';
import { shareDir, shareFile } from '../util/file-share.ts';
import { quoteIdent, quoteLiteral } from '../warehouse/sql.ts';
import type { SqlRunner, Warehouse } from '../warehouse/types.ts';
import { writeAnalyticsViews } from './analytics.ts';
import {
  DAY_MINUTES,
  DEFAULT_RUNS_PER_FILE,
  everySpan,
  inSpanSql,
  type PartitionPlan,
  planPartitions,
  spanFile,
} from './spans.ts';
import { DATA_FILE, type ExportTable, exportTables, PARQUET_DIR, partitionDirName } from './tables.ts';

// The Parquet export (DuckDB's COPY … TO, ZSTD). Only what the merges marked in
// _sync_export_dirty since the last export is written: the files of the run tables' created_date
// partitions that hold changed runs (a partition is one file, or one per span of created time on a
// busy day: spans.ts), the catalog tables that changed. Each file is written in a hidden
// staging directory and then renamed over the old one, so a reader sees the old file or the new
// one, never part of one. The marks are cleared once every file is in place.

export interface ExportOptions {
  /** Rewrite every partition and table, and drop partitions with no rows left. */
  full?: boolean;
  /** Runs a file of a new partition holds at most, as its span is chosen (DEFAULT_RUNS_PER_FILE). */
  runsPerFile?: number;
}

export interface ExportResult {
  /** Files written, relative to the warehouse directory. */
  written: string[];
  /** Partition files removed (no rows left). */
  removed: string[];
  /** created_date partitions of the run tables rewritten. */
  dates: string[];
  /** Unpartitioned tables rewritten. */
  tables: string[];
  analyticsFile: string;
  durationMs: number;
}

export const EXPORT_MEMORY_LIMIT = '192MB';

const UNITS: Record<string, number> = {
  bytes: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Bytes of a DuckDB memory size ('96MB', '91.5 MiB'); unknown forms count as unlimited. */
export function sizeBytes(size: string): number {
  const m = /^\s*([\d.]+)\s*([a-z]+)\s*$/i.exec(size);
  const unit = m ? UNITS[(m[2] as string).toLowerCase()] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : Number.POSITIVE_INFINITY;
}

export async function exportParquet(wh: Warehouse, options: ExportOptions = {}): Promise<ExportResult> {
  return wh.serial(async () => {
    const t0 = performance.now();
    const root = join(wh.dir, PARQUET_DIR);
    await mkdir(root, { recursive: true });
    await shareDir(root, wh.share);
    const tables = exportTables(wh.resources);
    const runTables = tables.filter((t) => t.partitioned);
    const flatTables = tables.filter((t) => !t.partitioned);
    // A table made since (a new array of objects) has nothing older to write: only the declared
    // run tables' absence means the tree was never written, or was removed.
    const declared = new Set(exportTables(RESOURCES).map((t) => t.name));
    const runsMissing = runTables.some((t) => declared.has(t.name) && !existsSync(join(root, t.name)));
    const full = options.full === true || runsMissing;
    const dates = await datesToWrite(wh, full);
    const plans = await planPartitions(wh, dates, {
      full,
      root,
      runsPerFile: options.runsPerFile ?? DEFAULT_RUNS_PER_FILE,
    });
    const flat = flatTables.filter((t) => full || !existsSync(join(root, t.name, DATA_FILE)));
    const dirtyFlat = new Set(
      (
        await wh.all<{ t: string }>(
          `SELECT DISTINCT table_name AS t FROM _sync_export_dirty WHERE created_date IS NULL`,
        )
      ).map((r) => r.t),
    );
    for (const t of flatTables) if (dirtyFlat.has(t.name) && !flat.includes(t)) flat.push(t);

    // An export killed half way leaves its staging directory behind; the warehouse lock makes this
    // export the only one, so any staging directory found is such a leftover.
    for (const f of await readdir(root))
      if (f.startsWith('.staging-')) await rm(join(root, f), { recursive: true, force: true });
    const staging = join(root, `.staging-${process.pid}-${randomBytes(4).toString('hex')}`);
    await mkdir(staging, { recursive: true });
    const result: ExportResult = {
      written: [],
      removed: [],
      dates,
      tables: flat.map((t) => t.name),
      analyticsFile: '',
      durationMs: 0,
    };
    // Loading leaves a core to JavaScript; here JavaScript only waits, so DuckDB gets them all.
    // Each thread buffers a whole row group of a day's sorted rows, which loading's memory limit
    // does not always hold: the export gets at least EXPORT_MEMORY_LIMIT for its run.
    const [setting] = await wh.all<{ t: bigint | number }>(`SELECT current_setting('threads') AS t`);
    const threads = Number(setting?.t ?? wh.exportThreads);
    const memoryLimit = wh.memoryLimit;
    const raiseMemory = sizeBytes(memoryLimit) < sizeBytes(EXPORT_MEMORY_LIMIT);
    if (threads !== wh.exportThreads) await wh.run(`SET threads = ${wh.exportThreads}`);
    if (raiseMemory) await wh.setMemoryLimit(EXPORT_MEMORY_LIMIT);
    try {
      const files = { root, staging, share: wh.share };
      for (const plan of plans) await writePartition(wh, runTables, plan, files, result);
      if (full) {
        await removeStalePartitions(root, runTables, new Set(dates), result);
        // An empty table still gets its directory, so the next export knows it was done.
        for (const t of runTables) await mkdir(join(root, t.name), { recursive: true });
        for (const t of runTables) await shareDir(join(root, t.name), wh.share);
      }
      for (const t of flat) await writeFlat(wh, t, root, staging, result, wh.share);
      await wh.run(`DELETE FROM _sync_export_dirty`);
    } finally {
      await rm(staging, { recursive: true, force: true });
      if (threads !== wh.exportThreads) await wh.run(`SET threads = ${threads}`);
      if (raiseMemory) await wh.setMemoryLimit(memoryLimit);
    }
    result.analyticsFile = await writeAnalyticsViews(wh, root, tables);
    result.durationMs = performance.now() - t0;
    wh.logger.info({ dates: dates.length, tables: flat.length, files: result.written.length }, 'parquet export');
    return result;
  });
}

async function datesToWrite(db: SqlRunner, full: boolean): Promise<string[]> {
  const sql = full
    ? `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM runs
       UNION SELECT DISTINCT CAST(created_date AS VARCHAR) FROM _sync_export_dirty WHERE table_name = 'runs'`
    : `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM _sync_export_dirty
       WHERE table_name = 'runs' AND created_date IS NOT NULL`;
  return (await db.all<{ d: string }>(`SELECT d FROM (${sql}) ORDER BY d`)).map((r) => r.d);
}

interface Files {
  root: string;
  staging: string;
  share: Warehouse['share'];
}

async function writePartition(
  db: SqlRunner,
  runTables: readonly ExportTable[],
  plan: PartitionPlan,
  files: Files,
  result: ExportResult,
): Promise<void> {
  const part = partitionDirName(plan.date);
  const dirs = runTables.map((t) => join(files.root, t.name, part));
  const starts = plan.starts ?? (await everySpan(db, plan, dirs));
  const day = `created_date = ${quoteLiteral(plan.date)}::DATE`;
  const whole = plan.span >= DAY_MINUTES;
  for (const start of starts) {
    const runs = whole ? day : `${day} AND ${inSpanSql(plan.date, plan.span, start)}`;
    for (const t of runTables) {
      // One COPY per file: each sorts at most a day's rows, which stays within the memory limit
      // however large the table grows (one partitioned COPY of the whole set does not).
      const where =
        whole || t.name === 'runs' ? runs : `${day} AND ${quoteIdent(t.runKey)} IN (SELECT id FROM runs WHERE ${runs})`;
      await writeFile(db, t, where, join(part, spanFile(plan.span, start)), files, result);
    }
  }
}

async function writeFile(
  db: SqlRunner,
  t: ExportTable,
  where: string,
  name: string,
  files: Files,
  result: ExportResult,
): Promise<void> {
  const target = join(files.root, t.name, name);
  const dir = dirname(target);
  const fresh = join(files.staging, `${t.name}-${name.replaceAll('/', '-')}`);
  const [copied] = await db.all<{ Count: bigint }>(
    `COPY (SELECT * EXCLUDE (created_date) FROM ${quoteIdent(t.name)} WHERE ${where} ORDER BY ${t.orderBy})
     TO ${quoteLiteral(fresh)} (FORMAT parquet, COMPRESSION zstd)`,
  );
  if (Number(copied?.Count ?? 0) > 0) {
    await mkdir(dir, { recursive: true });
    await shareDir(join(files.root, t.name), files.share);
    await shareDir(dir, files.share);
    await shareFile(fresh, files.share);
    await rename(fresh, target);
    result.written.push(join(PARQUET_DIR, t.name, name));
  } else {
    await rm(fresh, { force: true });
    if (existsSync(target)) {
      await rm(target);
      await rmdir(dir).catch(() => undefined);
      result.removed.push(join(PARQUET_DIR, t.name, name));
    }
  }
}

async function removeStalePartitions(
  root: string,
  runTables: readonly ExportTable[],
  keep: ReadonlySet<string>,
  result: ExportResult,
): Promise<void> {
  for (const t of runTables) {
    const dir = join(root, t.name);
    if (!existsSync(dir)) continue;
    for (const part of await readdir(dir)) {
      const m = /^created_date=(\d{4}-\d{2}-\d{2})$/.exec(part);
      if (!m || keep.has(m[1] as string)) continue;
      await rm(join(dir, part), { recursive: true, force: true });
      result.removed.push(join(PARQUET_DIR, t.name, part, DATA_FILE));
    }
  }
}

async function writeFlat(
  db: SqlRunner,
  t: ExportTable,
  root: string,
  staging: string,
  result: ExportResult,
  share: Warehouse['share'],
): Promise<void> {
  const tmp = join(staging, `${t.name}.parquet`);
  await db.run(
    `COPY (SELECT * FROM ${quoteIdent(t.name)} ORDER BY ${t.orderBy})
     TO ${quoteLiteral(tmp)} (FORMAT parquet, COMPRESSION zstd)`,
  );
  await mkdir(join(root, t.name), { recursive: true });
  await shareDir(join(root, t.name), share);
  await shareFile(tmp, share);
  await rename(tmp, join(root, t.name, DATA_FILE));
  result.written.push(join(PARQUET_DIR, t.name, DATA_FILE));
}
