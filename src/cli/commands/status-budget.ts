import type { BucketView, BudgetUse } from '../../budget/index.ts';
import type { SqlRunner } from '../../warehouse/types.ts';

// The status lines on the rate budget: what it learned of each bucket the server keeps (the key's,
// an organization's, an endpoint's own), and how much of what the key allowed the last pass used.

const GUESS: Record<BucketView['guess'], string> = {
  unknown: 'limiter not yet told apart',
  window: 'a fixed window',
  sliding: 'a sliding window (room back as requests leave it)',
  bucket: 'refilled continuously (token bucket or GCRA)',
};

function bucketLine(b: BucketView): string {
  const rate = b.ratePerSecond === null ? 'rate not learned yet' : `${b.ratePerSecond.toFixed(1)} requests/s`;
  const how = b.measured ? 'measured' : 'estimated';
  const window = b.windowSeconds !== null ? ` per ${b.windowSeconds} s window` : '';
  return `  ${b.scope.padEnd(18)}${rate} (${how}), ${b.limit} at once${window}; ${GUESS[b.guess]}`;
}

/**
 * The most requests a bucket lets through over `seconds` without a 429. A full bucket lets its
 * size through at once, then its rate: an operation of a few seconds may send far more than its
 * rate times its length, and a share of the rate alone reads over 100 % with no 429. A fixed
 * window lets a whole window's worth through in each window the span touches.
 */
export function allowance(b: BucketView, seconds: number): number | null {
  if (b.ratePerSecond === null) return null;
  const refilled = b.limit + b.ratePerSecond * seconds;
  const windows = b.windowSeconds ? b.limit * (Math.ceil(seconds / b.windowSeconds) + 1) : 0;
  if (b.guess === 'window' && windows) return windows;
  return b.guess === 'unknown' ? Math.max(refilled, windows) : refilled;
}

/** The share of what the key's tightest bucket allowed over the span that `requests` used; null: not known. */
export function keyShare(buckets: readonly BucketView[], requests: number, seconds: number): number | null {
  const allowed = buckets
    .filter((b) => b.scope === 'key')
    .map((b) => allowance(b, seconds))
    .filter((a): a is number => a !== null && a > 0);
  if (allowed.length === 0 || seconds < 1) return null;
  return requests / Math.min(...allowed);
}

/** The pass's use of the key, from its audit row's requests and span; the stored share when that is gone. */
export async function withKeyShare(
  db: SqlRunner,
  use: (BudgetUse & { passId: string }) | null,
): Promise<(BudgetUse & { passId: string }) | null> {
  if (use === null) return null;
  const [row] = await db.all<{ requests: bigint | null; us: bigint | null }>(
    'SELECT requests, epoch_us(finished_at) - epoch_us(started_at) AS us FROM _sync_audit WHERE id = $1',
    [use.passId],
  );
  if (row?.requests === null || row?.requests === undefined || row.us === null) return use;
  return { ...use, usedShare: keyShare(use.buckets, Number(row.requests), Number(row.us) / 1e6) };
}

export function rateBudgetLines(use: (BudgetUse & { passId: string }) | null): string[] {
  if (use === null) return [];
  const paced = use.ratePerSecond === null ? 'not paced' : `paced to ${use.ratePerSecond.toFixed(1)} requests/s`;
  const used =
    use.usedShare === null
      ? ''
      : `; pass ${use.passId} used ${Math.round(use.usedShare * 100)}% of what the key allowed over its length`;
  return [`rate budget   ${paced}${used}`, ...use.buckets.map(bucketLine)];
}
