import type { Micros } from '../util/timestamp.ts';
import { EXPECTED_KEY } from '../warehouse/completeness.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import { getState } from '../warehouse/sync-state.ts';
import type { SqlRunner } from '../warehouse/types.ts';

// What `runsync status` says of the completeness ledger (the view sync_completeness), in one line:
// how many days were listed whole, how long ago the oldest of the horizon's was, which disagree.

export interface CompletenessSummary {
  /** Days with runs on either side, but the one the live window has not finished. */
  days: number;
  verified: number;
  unverified: number;
  disagree: number;
  /** Days of the horizon last listed whole longer ago than RUNSYNC_RECONCILE_EVERY. */
  stale: number;
  /** The oldest whole listing of a day of the horizon (of any day, when none is in the horizon). */
  oldestVerifiedAt: Micros | null;
  /** The first few days that disagree. */
  disagreeing: { day: string; listed: number; warehouse: number }[];
}

/** Days named in status, at most. */
const NAMED = 3;

export async function readCompleteness(db: SqlRunner, now: Micros): Promise<CompletenessSummary> {
  const expected = await getState<{ every: Micros | null; horizon: Micros }>(db, EXPECTED_KEY);
  const horizonStart = expected ? now - expected.horizon : null;
  const staleBefore = expected?.every ? now - expected.every : null;
  const inHorizon = `day + INTERVAL 1 DAY > ${US_TO_TSTZ('$1')}`;
  // One read of the view: each reads every stored run (its days' counts and checksums).
  const [r] = await db.all<{
    days: bigint;
    verified: bigint;
    unverified: bigint;
    disagree: bigint;
    stale: bigint;
    oldest_horizon: bigint | null;
    oldest: bigint | null;
    disagreeing: { day: string; listed: bigint; warehouse: bigint }[] | null;
  }>(
    `SELECT count(*) FILTER (WHERE state <> 'current') AS days,
       count(*) FILTER (WHERE verified_at IS NOT NULL AND state <> 'current') AS verified,
       count(*) FILTER (WHERE state = 'unverified') AS unverified,
       count(*) FILTER (WHERE state = 'disagree') AS disagree,
       count(*) FILTER (WHERE $2::BIGINT IS NOT NULL AND ${inHorizon} AND verified_at < ${US_TO_TSTZ('$2')}) AS stale,
       min(epoch_us(verified_at)) FILTER (WHERE ${inHorizon}) AS oldest_horizon,
       min(epoch_us(verified_at)) AS oldest,
       list_slice(list({'day': CAST(day AS VARCHAR), 'listed': listed_runs, 'warehouse': warehouse_runs} ORDER BY day)
         FILTER (WHERE state = 'disagree'), 1, ${NAMED}) AS disagreeing
     FROM sync_completeness`,
    [horizonStart === null ? null : BigInt(horizonStart), staleBefore === null ? null : BigInt(staleBefore)],
  );
  const disagreeing = r?.disagreeing ?? [];
  const oldest = r?.oldest_horizon ?? r?.oldest ?? null;
  return {
    days: Number(r?.days ?? 0),
    verified: Number(r?.verified ?? 0),
    unverified: Number(r?.unverified ?? 0),
    disagree: Number(r?.disagree ?? 0),
    stale: Number(r?.stale ?? 0),
    oldestVerifiedAt: oldest === null ? null : Number(oldest),
    disagreeing: disagreeing.map((d) => ({ day: d.day, listed: Number(d.listed), warehouse: Number(d.warehouse) })),
  };
}

/** The status line, e.g. "all 412 days verified within 58 min; 0 disagree". */
export function completenessText(c: CompletenessSummary, now: Micros, seconds: (s: number) => string): string {
  if (c.days === 0) return 'no day listed whole yet';
  const within = c.oldestVerifiedAt === null ? '' : ` within ${seconds(Math.max(0, now - c.oldestVerifiedAt) / 1e6)}`;
  const verified =
    c.verified === c.days
      ? `all ${c.days} days verified${within}`
      : `${c.verified} of ${c.days} days verified${within}, ${c.unverified} never listed whole`;
  const named = c.disagreeing.map((d) => `${d.day} (API ${d.listed}, warehouse ${d.warehouse})`);
  const more = c.disagree > named.length ? `, ${c.disagree - named.length} more` : '';
  const disagree = `${c.disagree} disagree${named.length ? `: ${named.join(', ')}${more}` : ''}`;
  const stale = c.stale ? `; ${c.stale} of the horizon listed whole longer ago than RUNSYNC_RECONCILE_EVERY` : '';
  const checkWith = c.disagree ? ' (runsync verify repairs them)' : '';
  return `${verified}; ${disagree}${checkWith}${stale}`;
}
