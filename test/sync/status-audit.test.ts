import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/commands/status.ts';
import type { FreshnessSummary } from '../../src/sync/freshness.ts';
import { lastHourLags, readStatus } from '../../src/sync/status.ts';
import { MICROS_PER_MINUTE, parseTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { US_TO_TSTZ } from '../../src/warehouse/sql.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { tempDir } from '../warehouse/wh-kit.ts';

// Status reads _sync_audit newest first: what it shows of the rate budget and the last hour's lags
// is the same however many passes the audit holds, and however far back the budget was recorded.

let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
const T0 = parseTimestamp('2026-03-01T00:00:00Z') as number;
const lag = (p50: number): FreshnessSummary => ({
  warehouse: { count: 10, p50, p95: p50 * 2, max: p50 * 3 },
  parquet: null,
});
const budget = { buckets: [], ratePerSecond: 12.5, usedShare: 0.25 };

async function pass(i: number, counts: Record<string, unknown>): Promise<void> {
  const at = T0 + i * 5 * MICROS_PER_MINUTE;
  await wh.run(
    `INSERT INTO _sync_audit (id, kind, started_at, finished_at, status, counts)
     VALUES ($1, 'sync', ${US_TO_TSTZ('$2')}, ${US_TO_TSTZ('$3')}, 'ok', $4::JSON)`,
    [`pass-${String(i).padStart(4, '0')}`, BigInt(at), BigInt(at + MICROS_PER_MINUTE), JSON.stringify(counts)],
  );
}

beforeAll(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'));
  // The budget recorded once, long ago, then 300 passes without it; lags in every pass.
  await pass(0, { rate_budget: budget, freshness: lag(100) });
  await wh.run(
    `INSERT INTO _sync_audit (id, kind, started_at, finished_at, status, counts)
     SELECT 'pass-' || lpad(i::VARCHAR, 4, '0'), 'sync', ${US_TO_TSTZ('($1 + i * $2)')},
       ${US_TO_TSTZ('($1 + i * $2 + $3)')}, 'ok',
       json_object('freshness', json_object('warehouse', json_object('count', 10, 'p50', i, 'p95', i * 2,
         'max', i * 3), 'parquet', NULL))
     FROM range(1, 301) AS t(i)`,
    [BigInt(T0), BigInt(5 * MICROS_PER_MINUTE), BigInt(MICROS_PER_MINUTE)],
  );
});
afterAll(async () => {
  await wh.close();
  tmp.cleanup();
});

describe('status over a long audit', () => {
  it('finds the rate budget however far back it was recorded', async () => {
    const s = await readStatus(wh);
    expect(s.rateBudget).toEqual({ ...budget, passId: 'pass-0000' });
  });

  it("reads the last hour's lags from the passes of that hour only", async () => {
    const s = await readStatus(wh);
    // Passes finish every 5 minutes: the last one and the 12 before it are within its hour (an
    // hour exactly counts).
    const hour = Array.from({ length: 13 }, (_, k) => lag(300 - k));
    expect(s.lag).toEqual(lastHourLags(hour));
  });

  it('says since when every open run has been looked at', async () => {
    const at = (minutes: number) => BigInt(T0 + minutes * MICROS_PER_MINUTE);
    const open = (id: string, reason: string, lookedAt: number) =>
      wh.run(
        `INSERT INTO _sync_open_runs (run_id, created_at, updated_at, reason, last_checked_at)
         VALUES ($1, ${US_TO_TSTZ('$2')}, ${US_TO_TSTZ('$2')}, $3, ${US_TO_TSTZ('$4')})`,
        [id, at(-600), reason, at(lookedAt)],
      );
    await open('a', 'paused', 55);
    await open('b', 'paused', 31);
    await open('c', 'resolution_pending', 59);
    const s = await readStatus(wh);
    expect(s.openRuns.total).toBe(3);
    expect(s.openRuns.lookedAtSince).toBe(T0 + 31 * MICROS_PER_MINUTE);
    const lines = statusLines(wh.file, s, T0 + 60 * MICROS_PER_MINUTE);
    expect(lines.join('\n')).toMatch(/^open runs +3 tracked .*; every one looked at in the last 29 ?min/m);
    await wh.run('DELETE FROM _sync_open_runs');
  });

  it('says how many open runs the last pass deferred, and when the clocks differ', async () => {
    await pass(400, { openRunsDeferred: 1234, openRunsLongestUncheckedSeconds: 1800, clockSkewMs: -1_200_000 });
    const s = await readStatus(wh);
    expect(s.openRuns.deferred).toBe(1234);
    expect(s.clockSkewMs).toBe(-1_200_000);
    const text = statusLines(wh.file, s, T0 + 401 * 5 * MICROS_PER_MINUTE).join('\n');
    expect(text).toMatch(/1234 open runs deferred by the last pass, the longest unchecked for 30 ?min .*--all-open/);
    expect(text).toMatch(/^clock +the API's clock is 20 ?min behind this machine's/m);
    await pass(401, { openRunsDeferred: 0, clockSkewMs: 3 });
    const later = statusLines(wh.file, await readStatus(wh), T0 + 402 * 5 * MICROS_PER_MINUTE).join('\n');
    expect(later).not.toMatch(/deferred|^clock/m);
  });
});
