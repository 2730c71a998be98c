import { quoteLiteral } from '../warehouse/sql.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import { DATA_FILE } from './tables.ts';

// A created_date partition of the run tables is one file, or, on a day busy enough, one file per
// span of created time (part-HHMM.parquet, named by the span's first minute, UTC). Passes change
// the newest runs and the open ones, which lie in the last spans, so an export after a short pass
// rewrites a few small files instead of the whole day. All rows of a run lie in the file of its
// created time, so a reader listing the files sees each run once. A partition's span is chosen
// when it is first written, from how many runs that day or the day before had, and then kept
// (_sync_export_layout), so the names of its files never change under a reader.

/** Runs a file of a partition holds at most, as the span is chosen. */
export const DEFAULT_RUNS_PER_FILE = 2000;
/** Spans in minutes, widest first; each divides a day. */
const SPANS = [1440, 720, 360, 240, 120, 60, 30, 15, 10, 5];
export const DAY_MINUTES = 1440;

/** The widest span whose files would hold at most `runsPerFile` of a day of `expectedRuns`. */
export function chooseSpan(expectedRuns: number, runsPerFile: number): number {
  for (const s of SPANS) if ((expectedRuns * s) / DAY_MINUTES <= runsPerFile) return s;
  return SPANS[SPANS.length - 1] as number;
}

/** The file of the span starting at minute `start` of the day. */
export function spanFile(span: number, start: number): string {
  if (span >= DAY_MINUTES) return DATA_FILE;
  const hh = String(Math.floor(start / 60)).padStart(2, '0');
  const mm = String(start % 60).padStart(2, '0');
  return `part-${hh}${mm}.parquet`;
}

/** The first minute of the span a file holds, or null for a name the export does not write. */
export function spanStartOf(name: string): number | null {
  if (name === DATA_FILE) return 0;
  const m = /^part-(\d{2})(\d{2})\.parquet$/.exec(name);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** SQL: the first minute of the span a run's created time falls in, within its created_date. */
export function spanStartSql(span: number, createdAt = 'created_at', createdDate = 'created_date'): string {
  return `((epoch(${createdAt})::BIGINT - epoch(${createdDate})::BIGINT) // 60 // ${span} * ${span})`;
}

/** SQL: whether a run's created time lies in the span starting at `start` of `date`. */
export function inSpanSql(date: string, span: number, start: number, createdAt = 'created_at'): string {
  const day = `TIMESTAMPTZ ${quoteLiteral(`${date} 00:00:00+00`)}`;
  return (
    `${createdAt} >= ${day} + INTERVAL (${start}) MINUTE AND ` +
    `${createdAt} < ${day} + INTERVAL (${start + span}) MINUTE`
  );
}

/** What an export writes of one created_date partition. */
export interface PartitionPlan {
  date: string;
  span: number;
  /** The spans to rewrite; null: every span, those on disk included. */
  starts: number[] | null;
}

/**
 * The span of every partition to write, chosen for those that have none yet, and which of its
 * spans changed. A partition already on disk without a recorded span was written whole.
 */
export async function planPartitions(
  db: SqlRunner,
  dates: readonly string[],
  options: { full: boolean; written: (date: string) => Promise<boolean>; runsPerFile: number },
): Promise<PartitionPlan[]> {
  if (dates.length === 0) return [];
  const list = dates.map((d) => `${quoteLiteral(d)}::DATE`).join(', ');
  const spans = new Map(
    (
      await db.all<{ d: string; s: number }>(
        `SELECT CAST(created_date AS VARCHAR) AS d, span_minutes AS s FROM _sync_export_layout
         WHERE created_date IN (${list})`,
      )
    ).map((r) => [r.d, Number(r.s)]),
  );
  const unplanned = dates.filter((d) => !spans.has(d));
  if (unplanned.length > 0) {
    const days = unplanned.map((d) => `${quoteLiteral(d)}::DATE`).join(', ');
    const counts = new Map(
      (
        await db.all<{ d: string; n: bigint }>(
          `SELECT CAST(d.day AS VARCHAR) AS d, max(c.n) AS n FROM (SELECT unnest([${days}]) AS day) d
           LEFT JOIN (SELECT created_date, count(*) AS n FROM runs
                      WHERE created_date IN (SELECT unnest([${days}]) UNION ALL SELECT unnest([${days}]) - 1)
                      GROUP BY created_date) c
             ON c.created_date = d.day OR c.created_date = d.day - 1
           GROUP BY d.day`,
        )
      ).map((r) => [r.d, Number(r.n ?? 0)]),
    );
    for (const d of unplanned) {
      const written = await options.written(d);
      const span = written ? DAY_MINUTES : chooseSpan(counts.get(d) ?? 0, options.runsPerFile);
      spans.set(d, span);
      await db.run(`INSERT INTO _sync_export_layout VALUES (${quoteLiteral(d)}::DATE, ${span})`);
    }
  }
  const changed = new Map<string, number[] | null>();
  if (!options.full) {
    const marks = await db.all<{ d: string; m: bigint | null }>(
      `SELECT DISTINCT CAST(created_date AS VARCHAR) AS d,
              ${spanStartSql(1)} AS m
       FROM _sync_export_dirty WHERE table_name = 'runs' AND created_date IN (${list})`,
    );
    for (const { d, m } of marks) {
      const span = spans.get(d) as number;
      const have = changed.get(d);
      if (m === null || have === null) {
        changed.set(d, null);
        continue;
      }
      const start = Math.floor(Number(m) / span) * span;
      changed.set(d, [...new Set([...(have ?? []), start])]);
    }
  }
  return dates.map((d) => ({ date: d, span: spans.get(d) as number, starts: changed.get(d) ?? null }));
}

/** The spans of a partition that have runs, and those with a file of a table in the tree. */
export async function everySpan(db: SqlRunner, plan: PartitionPlan, existing: readonly string[]): Promise<number[]> {
  if (plan.span >= DAY_MINUTES) return [0];
  const rows = await db.all<{ m: bigint }>(
    `SELECT DISTINCT ${spanStartSql(plan.span)} AS m FROM runs WHERE created_date = ${quoteLiteral(plan.date)}::DATE`,
  );
  const starts = new Set(rows.map((r) => Number(r.m)));
  for (const f of existing) {
    const s = spanStartOf(f);
    if (s !== null) starts.add(s);
  }
  return [...starts].sort((a, b) => a - b);
}
