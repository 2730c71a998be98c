import type { BucketView, BudgetUse } from '../../budget/index.ts';

// The status lines on the rate budget: what it learned of each bucket the server keeps (the key's,
// an organization's, an endpoint's own), and how much of the key's rate the last pass used.

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

export function rateBudgetLines(use: (BudgetUse & { passId: string }) | null): string[] {
  if (use === null) return [];
  const paced = use.ratePerSecond === null ? 'not paced' : `paced to ${use.ratePerSecond.toFixed(1)} requests/s`;
  const used =
    use.usedShare === null ? '' : `; pass ${use.passId} used ${Math.round(use.usedShare * 100)}% of the key's rate`;
  return [`rate budget   ${paced}${used}`, ...use.buckets.map(bucketLine)];
}
