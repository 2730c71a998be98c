import { listValue } from '@duckdb/node-api';
import { MICROS_PER_DAY, type Micros } from '../util/timestamp.ts';
import { setAsideVanished } from './deletions.ts';
import { US_TO_TSTZ } from './sql.ts';
import { getState, setState } from './sync-state.ts';
import type { SqlRunner } from './types.ts';

// The completeness ledger's writing side (schemas/duckdb/0021_completeness.sql). A listing by
// created time is a stream: the range it has read without a gap, [from, to), kept in _sync_state
// with the summaries it read of days not yet covered in _sync_listed. Walks of one stream that
// follow on (the rolling reconciliation's steps, live windows that overlap by the lookback)
// extend it; one that starts elsewhere starts it over. Whenever a stream's range covers a UTC day
// whole, what it listed of that day becomes the day's row of _sync_completeness, computed in SQL
// from the staged summaries, so memory does not grow with the runs listed.

export interface ListedStream {
  from: Micros;
  to: Micros;
  /** Days before this are written to the ledger, or can no longer be covered by this stream. */
  done: Micros;
}

/** What the API listed, as a page gives it: one entry per summary. */
export interface ListedRuns {
  ids: string[];
  createdUs: number[];
  /** Null where the summary's updated_at could not be read. */
  updatedUs: (number | null)[];
}

const streamKey = (stream: string) => `completeness.stream.${stream}`;

/** _sync_state key of what the ledger expects (RUNSYNC_RECONCILE_EVERY and the horizon). */
export const EXPECTED_KEY = 'completeness.expected';

export const dayFloor = (t: Micros): Micros => Math.floor(t / MICROS_PER_DAY) * MICROS_PER_DAY;
export const dayCeil = (t: Micros): Micros => Math.ceil(t / MICROS_PER_DAY) * MICROS_PER_DAY;

export function readStream(db: SqlRunner, stream: string): Promise<ListedStream | undefined> {
  return getState<ListedStream>(db, streamKey(stream));
}

/**
 * A listing of `stream` starts at `from`: it extends the stream when it starts within the part
 * not yet written to the ledger (summaries it will read again leave the stage), or starts the
 * stream over.
 */
export async function beginListing(tx: SqlRunner, stream: string, from: Micros, at: Micros): Promise<void> {
  const s = await readStream(tx, stream);
  if (s && Math.max(s.from, s.done) <= from && from <= s.to) {
    await tx.run(`DELETE FROM _sync_listed WHERE stream = $1 AND created_us >= $2`, [stream, BigInt(from)]);
    await setState(tx, streamKey(stream), { ...s, to: from }, at);
    return;
  }
  await tx.run(`DELETE FROM _sync_listed WHERE stream = $1`, [stream]);
  await setState(tx, streamKey(stream), { from, to: from, done: dayCeil(from) }, at);
}

/** Stages a page's summaries, in the page's commit. */
export async function stageListed(tx: SqlRunner, stream: string, runs: ListedRuns, at: Micros): Promise<void> {
  if (runs.ids.length === 0) return;
  await tx.run(
    `INSERT INTO _sync_listed
     SELECT $1, unnest($2::VARCHAR[]), unnest($3::BIGINT[]), unnest($4::BIGINT[]), ${US_TO_TSTZ('$5')}`,
    [
      stream,
      listValue(runs.ids),
      listValue(runs.createdUs.map(BigInt)),
      listValue(runs.updatedUs.map((u) => (u === null ? null : BigInt(u)))),
      BigInt(at),
    ],
  );
}

/**
 * The stream has read everything up to `to`: the days it now covers whole get their ledger rows
 * (a day of no runs too: the API listed none), and their summaries leave the stage. Returns the
 * days written.
 */
export async function coverTo(tx: SqlRunner, stream: string, to: Micros, by: string, at: Micros): Promise<number> {
  const s = await readStream(tx, stream);
  if (!s || to < s.to) return 0;
  const end = Math.max(s.done, dayFloor(to));
  let days = 0;
  if (end > s.done) {
    days = (end - s.done) / MICROS_PER_DAY;
    await writeDays(tx, stream, { from: s.done, to: end }, by, at);
    // The stored runs of those days the listing did not show may be deleted upstream.
    await setAsideVanished(tx, stream, { from: s.done, to: end }, at);
    await tx.run(`DELETE FROM _sync_listed WHERE stream = $1 AND created_us < $2`, [stream, BigInt(end)]);
  }
  await setState(tx, streamKey(stream), { from: s.from, to, done: end }, at);
  return days;
}

/** Forgets a stream and what it staged. */
export async function dropStream(tx: SqlRunner, stream: string): Promise<void> {
  await tx.run(`DELETE FROM _sync_listed WHERE stream = $1`, [stream]);
  await tx.run(`DELETE FROM _sync_state WHERE key = $1`, [streamKey(stream)]);
}

const DAY_OF = (us: string) => `CAST(timezone('UTC', make_timestamptz(CAST(${us} AS BIGINT))) AS DATE)`;

async function writeDays(
  tx: SqlRunner,
  stream: string,
  range: { from: Micros; to: Micros },
  by: string,
  at: Micros,
): Promise<void> {
  // A run listed twice (a slice read again after a refused cursor) counts once, at its newest.
  await tx.run(
    `INSERT OR REPLACE INTO _sync_completeness
     WITH listed AS (
       SELECT id, max(created_us) AS c, max(updated_us) AS u, min(listed_at) AS listed_at FROM _sync_listed
       WHERE stream = $1 AND created_us >= $2 AND created_us < $3 GROUP BY id
     ), per_day AS (
       SELECT ${DAY_OF('c')} AS day, count(*) AS n, bit_xor(completeness_hash(id, u)) AS checksum,
         min(listed_at) AS started
       FROM listed GROUP BY 1
     ), days AS (
       SELECT CAST(d AS DATE) AS day
       FROM generate_series(${DAY_OF('$2')}, ${DAY_OF('$3')} - 1, INTERVAL 1 DAY) AS t(d)
     )
     SELECT days.day, coalesce(p.n, 0), coalesce(p.checksum, 0), coalesce(p.started, ${US_TO_TSTZ('$4')}),
       ${US_TO_TSTZ('$4')}, $5
     FROM days LEFT JOIN per_day p ON p.day = days.day`,
    [stream, BigInt(range.from), BigInt(range.to), BigInt(at), by],
  );
}

/** What the ledger expects, for sync_completeness_issues: kept by every pass. */
export async function setExpected(
  tx: SqlRunner,
  expected: { every: Micros | null; horizon: Micros },
  at: Micros,
): Promise<void> {
  const current = await getState<{ every: Micros | null; horizon: Micros }>(tx, EXPECTED_KEY);
  if (current?.every === expected.every && current?.horizon === expected.horizon) return;
  await setState(tx, EXPECTED_KEY, expected, at);
}
