import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { RESOURCES } from '../resources/registry.ts';
import { defaultMemoryBudget } from '../util/memory-budget.ts';
import { inLanes } from '../warehouse/lanes.ts';
import { isOutOfMemory, OUTSIZED_MEMORY_LIMIT } from '../warehouse/out-of-memory.ts';
import { quoteIdent, quoteLiteral } from '../warehouse/sql.ts';
import { refreshSummaries } from '../warehouse/summaries.ts';
import type { SqlRunner, Warehouse } from '../warehouse/types.ts';
import { writeAnalyticsViews } from './analytics.ts';
import { openFolderTree } from './folder-tree.ts';
import {
  DAY_MINUTES,
  DEFAULT_RUNS_PER_FILE,
  everySpan,
  inSpanSql,
  type PartitionPlan,
  planPartitions,
  spanFile,
} from './spans.ts';
import { openStoreTree } from './store-tree.ts';
import { DATA_FILE, type ExportTable, exportTables, PARQUET_DIR, partitionDirName } from './tables.ts';
import type { ParquetTarget, ParquetTree } from './tree.ts';

// The Parquet export (DuckDB's COPY … TO, ZSTD). Only what the merges marked in
// _sync_export_dirty since the last export is written: the files of the run tables' created_date
// partitions that hold changed runs (a partition is one file, or one per span of created time on a
// busy day: spans.ts), the catalog tables that changed. Where the files go is a ParquetTree: a
// folder, where each file is renamed over the old one as it is written (folder-tree.ts), or an
// object store, where the export's files are swapped in together when it ends (store-tree.ts).
// Either way a reader sees a file whole, old or new. The marks are cleared once the files are
// published, so an export that dies leaves them for the next one.

export interface ExportOptions {
  /** Rewrite every partition and table, and drop partitions with no rows left. */
  full?: boolean;
  /** Runs a file of a new partition holds at most, as its span is chosen (DEFAULT_RUNS_PER_FILE). */
  runsPerFile?: number;
  /** Where the tree goes (RUNSYNC_PARQUET_URL); default the warehouse's parquet/ folder. */
  target?: ParquetTarget;
  /**
   * Files written at once (default the budget's bulkLanes). A pass's export writes one at a time,
   * within loading's memory limit: its process still holds what the pass's loads left in V8's heap.
   */
  lanes?: number;
}

export interface ExportResult {
  /** Files written: in a folder relative to the warehouse directory, in an object store as s3:// URLs. */
  written: string[];
  /** Partition files removed (no rows left). */
  removed: string[];
  /** created_date partitions of the run tables rewritten. */
  dates: string[];
  /** Unpartitioned tables rewritten. */
  tables: string[];
  /** created_date days whose sums for the report were made again (src/warehouse/summaries.ts). */
  summarized: string[];
  analyticsFile: string;
  durationMs: number;
  /** Where the tree is: its folder, or s3://bucket/prefix. */
  location: string;
  /** In an object store, the generation readers of _latest.json now read; null for a folder. */
  generation: number | null;
}

/** The export's DuckDB memory at the default budget; a warehouse's own budget sets its own. */
export const EXPORT_MEMORY_LIMIT = defaultMemoryBudget().exportMemoryLimit;

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
    const tables = exportTables(wh.resources);
    const tree = await openTree(wh, tables, options.target);
    let result: ExportResult;
    try {
      result = await writeTree(wh, tree, tables, options);
    } finally {
      await tree.close();
    }
    result.analyticsFile = await writeAnalyticsViews(wh, tree, tables);
    result.durationMs = performance.now() - t0;
    wh.logger.info(
      { dates: result.dates.length, tables: result.tables.length, files: result.written.length },
      'parquet export',
    );
    return result;
  });
}

function openTree(wh: Warehouse, tables: readonly ExportTable[], target?: ParquetTarget): Promise<ParquetTree> {
  if (target === undefined || 'folder' in target)
    return openFolderTree(target?.folder ?? join(wh.dir, PARQUET_DIR), wh.dir, wh.share);
  return openStoreTree(target.store, {
    graceMs: target.graceMs,
    logger: wh.logger,
    partitioned: new Map(tables.map((t) => [t.name, t.partitioned])),
    scratchParent: wh.dir,
    now: () => Math.floor(wh.now() / 1000),
  });
}

async function writeTree(
  wh: Warehouse,
  tree: ParquetTree,
  tables: readonly ExportTable[],
  options: ExportOptions,
): Promise<ExportResult> {
  const runTables = tables.filter((t) => t.partitioned);
  const flatTables = tables.filter((t) => !t.partitioned);
  // A table made since (a new array of objects) has nothing older to write: only the declared
  // run tables' absence means the tree was never written, or was removed.
  const declared = new Set(exportTables(RESOURCES).map((t) => t.name));
  let runsMissing = false;
  for (const t of runTables) if (declared.has(t.name) && !(await tree.hasTable(t.name))) runsMissing = true;
  const full = options.full === true || runsMissing;
  const dates = await datesToWrite(wh, full);
  const plans = await planPartitions(wh, dates, {
    full,
    written: async (d) => (await tree.files('runs', partitionDirName(d))).length > 0,
    runsPerFile: options.runsPerFile ?? DEFAULT_RUNS_PER_FILE,
  });
  const flat: ExportTable[] = [];
  for (const t of flatTables) if (full || !(await tree.files(t.name, null)).includes(DATA_FILE)) flat.push(t);
  const dirtyFlat = new Set(
    (
      await wh.all<{ t: string }>(`SELECT DISTINCT table_name AS t FROM _sync_export_dirty WHERE created_date IS NULL`)
    ).map((r) => r.t),
  );
  for (const t of flatTables) if (dirtyFlat.has(t.name) && !flat.includes(t)) flat.push(t);

  const result: ExportResult = {
    written: [],
    removed: [],
    dates,
    tables: flat.map((t) => t.name),
    summarized: [],
    analyticsFile: '',
    durationMs: 0,
    location: tree.url,
    generation: null,
  };
  // Each thread sorts a file's rows and buffers its row groups, which loading's memory limit does
  // not always hold: the export gets at least its budget's share, and its threads, for its run.
  // A pass's export (one file at a time) keeps loading's limit: its process still holds the pass's
  // heap, its files are a few spans each, and one that does not fit is written again alone with
  // more (below).
  const [setting] = await wh.all<{ t: bigint | number }>(`SELECT current_setting('threads') AS t`);
  const threads = Number(setting?.t ?? wh.exportThreads);
  const memoryLimit = wh.memoryLimit;
  const exportLimit = wh.budget.exportMemoryLimit;
  const raiseMemory = options.lanes !== 1 && sizeBytes(memoryLimit) < sizeBytes(exportLimit);
  if (threads !== wh.exportThreads) await wh.run(`SET threads = ${wh.exportThreads}`);
  if (raiseMemory) await wh.setMemoryLimit(exportLimit);
  try {
    const jobs: FileJob[] = [];
    for (const plan of plans) jobs.push(...(await partitionFiles(wh, runTables, plan, tree)));
    for (const t of flat)
      jobs.push({ table: t, select: `SELECT * FROM ${quoteIdent(t.name)} ORDER BY ${t.orderBy}`, path: DATA_FILE });
    const t0 = performance.now();
    await writeFiles(wh, jobs, tree, result, options.lanes ?? wh.budget.bulkLanes);
    wh.logger.debug({ files: jobs.length, ms: Math.round(performance.now() - t0) }, 'parquet files written');
    if (full) {
      await removeStalePartitions(tree, runTables, new Set(dates), result);
      // An empty table is still recorded, so the next export knows it was done.
      for (const t of runTables) await tree.ensureTable(t.name);
    }
    result.generation = await tree.publish();
    const t1 = performance.now();
    result.summarized = await endMarks(wh, dates);
    wh.logger.debug({ days: dates.length, ms: Math.round(performance.now() - t1) }, "the report's sums made again");
  } finally {
    if (threads !== wh.exportThreads) await wh.run(`SET threads = ${threads}`);
    if (raiseMemory) await wh.setMemoryLimit(memoryLimit);
  }
  return result;
}

async function datesToWrite(db: SqlRunner, full: boolean): Promise<string[]> {
  const sql = full
    ? `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM runs
       UNION SELECT DISTINCT CAST(created_date AS VARCHAR) FROM _sync_export_dirty WHERE table_name = 'runs'`
    : `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d FROM _sync_export_dirty
       WHERE table_name = 'runs' AND created_date IS NOT NULL`;
  return (await db.all<{ d: string }>(`SELECT d FROM (${sql}) ORDER BY d`)).map((r) => r.d);
}

/**
 * Sums again for the report the days written (and a few never summed), then clears the export's
 * marks. A crash between the two leaves the marks, and the next export sums those days again.
 */
async function endMarks(wh: Warehouse, dates: readonly string[]): Promise<string[]> {
  const summed = await refreshSummaries(wh, dates, (day, error) =>
    wh.logger.warn({ day, error: error.message }, "the report's sums of a day failed; it reads the day's rows"),
  );
  // What the sums' aggregates freed is handed back, as after every file (open.ts).
  await wh.releaseFreed();
  await wh.run('DELETE FROM _sync_export_dirty');
  return summed;
}

/** One file of the tree: the rows of `select`, at `path` under the table's folder. */
interface FileJob {
  table: ExportTable;
  select: string;
  path: string;
}

/** The files of a created_date partition to write: each span's file of each run table. */
async function partitionFiles(
  db: Warehouse,
  runTables: readonly ExportTable[],
  plan: PartitionPlan,
  tree: ParquetTree,
): Promise<FileJob[]> {
  const part = partitionDirName(plan.date);
  const existing: string[] = [];
  for (const t of runTables) existing.push(...(await tree.files(t.name, part)));
  const starts = plan.starts ?? (await everySpan(db, plan, existing));
  const day = `created_date = ${quoteLiteral(plan.date)}::DATE`;
  const whole = plan.span >= DAY_MINUTES;
  const jobs: FileJob[] = [];
  for (const start of starts) {
    const runs = whole ? day : `${day} AND ${inSpanSql(plan.date, plan.span, start)}`;
    for (const t of runTables) {
      // One COPY per file: each sorts at most a day's rows, which stays within the memory limit
      // however large the table grows (one partitioned COPY of the whole set does not).
      // A child table's rows are written as stored: a run's rows went in together, so they lie
      // together, and sorting a day of steps would add much to the time writing them takes.
      const select = t.ownCreatedAt
        ? `SELECT * EXCLUDE (created_date) FROM ${quoteIdent(t.name)} WHERE ${runs} ORDER BY ${t.orderBy}`
        : whole
          ? `SELECT * EXCLUDE (created_date) FROM ${quoteIdent(t.name)} WHERE ${day}`
          : childRowsOf(t, day, runs);
      jobs.push({ table: t, select, path: `${part}/${spanFile(plan.span, start)}` });
    }
  }
  return jobs;
}

/**
 * A child table's rows of a span's runs, found by row id: a first scan reads only the run key of
 * the day's rows, and the rows it finds bound the row ids the second scan reads every column of
 * (DuckDB passes a join's bounds to the scan), where filtering by run key alone reads every column
 * of the day's rows. A run's rows go in together and a day's runs mostly in created order, so a
 * span's rows lie in few row groups.
 */
function childRowsOf(t: ExportTable, day: string, runs: string): string {
  const table = quoteIdent(t.stored.table);
  const own = t.stored.where ? `(${t.stored.where}) AND ` : '';
  const found = `SELECT rowid FROM ${table} WHERE ${own}${day} AND ${quoteIdent(t.runKey)} IN (SELECT id FROM runs WHERE ${runs})`;
  return `SELECT * EXCLUDE (created_date) FROM ${table} WHERE ${day} AND rowid IN (${found})`;
}

type Copy = (db: SqlRunner, select: string, file: string) => Promise<number>;

/**
 * Writes the files, several at once on connections of their own (lanes.ts), each placed in the
 * tree as it is done; a file with no rows is removed instead. Results list the files in the order
 * given, however the lanes finish them.
 */
async function writeFiles(
  wh: Warehouse,
  jobs: readonly FileJob[],
  tree: ParquetTree,
  result: ExportResult,
  lanes: number,
) {
  const done = new Map<FileJob, { written?: string; removed?: string }>();
  const write = async (db: SqlRunner, job: FileJob, copy: Copy) => {
    const fresh = join(tree.scratch, `${job.table.name}-${job.path.replaceAll('/', '-')}`);
    const rows = await copy(db, job.select, fresh);
    if (rows > 0 || !job.table.partitioned) {
      done.set(job, { written: await tree.place(job.table.name, job.path, fresh, rows) });
      return;
    }
    await rm(fresh, { force: true });
    const gone = await tree.remove(job.table.name, job.path);
    done.set(job, gone === null ? {} : { removed: gone });
  };
  const limit = wh.memoryLimit;
  const inLane: Copy = async (db, select, file) => {
    try {
      return await copyTo(db, select, file);
    } finally {
      // DuckDB's allocator keeps what a COPY freed for reuse, and the next file's sort and row
      // groups then land beside it; setting the limit (from any connection) hands it back (open.ts).
      await db.run(`SET memory_limit = ${quoteLiteral(limit)}`).catch(() => undefined);
    }
  };
  // Never two files of one folder at once: a file's removal takes its emptied folder away.
  const folder = (job: FileJob) => `${job.table.name}/${dirname(job.path)}`;
  const undone = await inLanes(wh, jobs, { lanes, key: folder }, (db, job) => write(db, job, inLane));
  // A file whose rows did not fit the export's memory beside another is written again alone, and
  // with room for its rows if it still does not fit.
  for (const job of undone) await write(wh, job, (_, select, file) => copyAlone(wh, select, file));
  for (const job of jobs) {
    const d = done.get(job);
    if (d?.written !== undefined) result.written.push(d.written);
    if (d?.removed !== undefined) result.removed.push(d.removed);
  }
}

/**
 * Rows per Parquet row group. The writer holds a whole row group of every column in memory, most of
 * it beyond DuckDB's memory_limit, so at DuckDB's default (122,880 rows) the row group would set
 * the export's peak; the files grow a little at this size, and readers still skip by row group.
 */
export const ROW_GROUP_ROWS = 16_384;

/** COPYs `select` to `file`; the rows written. */
async function copyTo(db: SqlRunner, select: string, file: string): Promise<number> {
  const [copied] = await db.all<{ Count: bigint }>(
    `COPY (${select}) TO ${quoteLiteral(file)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${ROW_GROUP_ROWS})`,
  );
  return Number(copied?.Count ?? 0);
}

/** copyTo on the handle's own connection, then with OUTSIZED_MEMORY_LIMIT (said in the log) if need be. */
async function copyAlone(wh: Warehouse, select: string, file: string): Promise<number> {
  try {
    return await copyTo(wh, select, file);
  } catch (e) {
    if (!isOutOfMemory(e)) throw e;
  } finally {
    await wh.releaseFreed();
  }
  const limit = wh.memoryLimit;
  wh.logger.warn(
    { file, memoryLimit: OUTSIZED_MEMORY_LIMIT },
    'a Parquet file did not fit in memory; writing it again with more',
  );
  await wh.setMemoryLimit(OUTSIZED_MEMORY_LIMIT);
  try {
    return await copyTo(wh, select, file);
  } finally {
    await wh.setMemoryLimit(limit);
  }
}

async function removeStalePartitions(
  tree: ParquetTree,
  runTables: readonly ExportTable[],
  keep: ReadonlySet<string>,
  result: ExportResult,
): Promise<void> {
  for (const t of runTables) {
    for (const part of await tree.partitions(t.name)) {
      const m = /^created_date=(\d{4}-\d{2}-\d{2})$/.exec(part);
      if (!m || keep.has(m[1] as string)) continue;
      result.removed.push(await tree.removePartition(t.name, part));
    }
  }
}
