import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MICROS_PER_DAY, MICROS_PER_HOUR, type Micros } from '../../src/util/timestamp.ts';
import { beginListing, coverTo, type ListedRuns, stageListed } from '../../src/warehouse/completeness.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { tempDir } from '../sync/kit.ts';

// How listings become ledger rows, on a real DuckDB file: a day is written only once a listing
// without a gap has covered it whole; a listing that follows on (overlapping, as live windows do)
// extends the one before and counts a run listed twice once; one that starts elsewhere starts over,
// so a day read only in part is never written.

const D = 1_772_064_000_000_000 as Micros; // 2026-02-26T00:00:00Z
const H = MICROS_PER_HOUR;

/** Runs created every hour of [from, to), named by their hour. */
function runs(from: Micros, to: Micros): ListedRuns {
  const out: ListedRuns = { ids: [], createdUs: [], updatedUs: [] };
  for (let t = from; t < to; t += H) {
    out.ids.push(`run-${(t - D) / H}`);
    out.createdUs.push(t);
    out.updatedUs.push(t + 1);
  }
  return out;
}

describe('the completeness ledger from listings', () => {
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  beforeAll(async () => {
    tmp = tempDir('runsync-ledger-');
    wh = await openWarehouse(tmp.dir);
  });
  afterAll(async () => {
    await wh?.close();
    tmp?.cleanup();
  });

  const ledger = () =>
    wh.all<{ day: string; n: bigint }>(
      `SELECT CAST(day AS VARCHAR) AS day, listed_runs AS n FROM _sync_completeness ORDER BY day`,
    );
  /** A walk of [from, to) read as one slice, committed page by page. */
  async function walk(stream: string, from: Micros, to: Micros, fresh = true): Promise<void> {
    await wh.transaction(async (tx) => {
      if (fresh) await beginListing(tx, stream, from, 1);
      await stageListed(tx, stream, runs(from, to), 2);
      await coverTo(tx, stream, to, 'sync', 3);
    });
  }

  it('writes a day once it is covered whole, across listings that follow on, counting each run once', async () => {
    // Noon of day 0 to 06:00 of day 1: no day whole.
    await walk('live', D + 12 * H, D + MICROS_PER_DAY + 6 * H);
    expect(await ledger()).toEqual([]);
    // Overlapping by an hour, to the end of day 1: day 1 whole, its 05:00 run once.
    await walk('live', D + MICROS_PER_DAY + 5 * H, D + 2 * MICROS_PER_DAY);
    expect(await ledger()).toEqual([{ day: '2026-02-27', n: 24n }]);
    const [staged] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_listed WHERE stream = 'live'`);
    expect(staged?.n).toBe(0n);
  });

  it('starts over when a listing starts elsewhere, and never writes the part it did not read', async () => {
    await walk('rolling', D + 2 * MICROS_PER_DAY, D + 2 * MICROS_PER_DAY + 12 * H);
    // A gap: the next step starts an hour after the last one ended, so day 2 is not whole.
    await walk('rolling', D + 2 * MICROS_PER_DAY + 13 * H, D + 4 * MICROS_PER_DAY);
    expect((await ledger()).map((r) => r.day)).toEqual(['2026-02-27', '2026-03-01']);
    // Going back into a day already written reads it in part: it keeps its row.
    await walk('rolling', D + 3 * MICROS_PER_DAY + 18 * H, D + 5 * MICROS_PER_DAY);
    expect(await ledger()).toEqual([
      { day: '2026-02-27', n: 24n },
      { day: '2026-03-01', n: 24n },
      { day: '2026-03-02', n: 24n },
    ]);
  });
});
