import type { BucketView, BudgetUse } from '../../budget/index.ts';
import type { SqlRunner } from '../../warehouse/types.ts';
import { keyShare } from '../../worker/key-share.ts';

export { allowance, keyShare } from '../../worker/key-share.ts';

// The status lines on the rate budget, in the words of docs/rate-budget.md: what it believes of
// each bucket the server keeps (the key's, an organization's, an endpoint's own), and how much of
// what the key allowed the last pass used.

const n = (x: number) => x.toFixed(1);

function bucketLine(b: BucketView): string {
  const others = b.othersPerSecond > 0 ? `, others ${n(b.othersPerSecond)}/s` : '';
  return (
    `  ${b.scope.padEnd(18)}sustained ${n(b.sustainedPerSecond)} requests/s (burst ${b.burst} per ${b.windowSeconds} s` +
    ` window)${others}; paced to ${n(b.pacePerSecond)}/s`
  );
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
