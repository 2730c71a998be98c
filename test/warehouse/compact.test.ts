import { cpSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compactNow } from '../../src/sync/compact-due.ts';
import { readStatus } from '../../src/sync/status.ts';
import { WarehouseGate } from '../../src/sync/warehouse-gate.ts';
import { createLogger, silentLogger } from '../../src/util/logger.ts';
import { COMPACT_SUFFIX, type CompactWhen, compactionDue, compactWarehouse } from '../../src/warehouse/compact.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse, withWarehouse } from '../../src/warehouse/open.ts';
import { DB_FILE } from '../../src/warehouse/types.ts';
import { runMain } from '../support/cli.ts';
import { clone, dumpAll, simDetails, tempDir } from './wh-kit.ts';

// Compaction rewrites runsync.duckdb into a fresh file and swaps it in: what a user reads from
// the warehouse (every row, the views, status's counts) is the same after as before.

let made: ReturnType<typeof tempDir>;
let tmp: ReturnType<typeof tempDir>;
let dir: string;
const file = () => join(dir, DB_FILE);
const RUNS = 60;

/** Everything a user would compare: every table's rows, a view's answer, status's row counts. */
async function whatUsersSee(): Promise<unknown> {
  return withWarehouse(dir, { readOnly: true }, async (wh) => ({
    tables: await dumpAll(wh),
    daily: await wh.all(`SELECT day::VARCHAR AS day, runs, resolved FROM v_runs_daily_resolution ORDER BY day`),
    counts: (await readStatus(wh)).tables,
  }));
}

// One warehouse, made once and copied for each test.
beforeAll(async () => {
  made = tempDir();
  const details = simDetails(41, RUNS);
  const wh = await openWarehouse(join(made.dir, 'w'));
  await loadRunDetails(wh, details);
  // Runs loaded again with a later change replace their rows: the deletes leave space behind.
  for (let round = 1; round <= 2; round++) {
    const changed = details.slice(0, RUNS / 2).map((d) => {
      const c = clone(d) as { updated_at: string };
      c.updated_at = `2026-03-0${round}T00:00:00Z`;
      return c;
    });
    await loadRunDetails(wh, changed);
    await wh.run('CHECKPOINT');
  }
  await wh.close();
});
afterAll(() => made.cleanup());
beforeEach(() => {
  tmp = tempDir();
  dir = join(tmp.dir, 'w');
  cpSync(join(made.dir, 'w'), dir, { recursive: true });
});
afterEach(() => tmp.cleanup());

describe('compaction', () => {
  it('runsync compact keeps what users see, leaves no copy beside, and the warehouse loads on', async () => {
    const before = await whatUsersSee();
    const size = statSync(file()).size;
    const r = await runMain(['compact'], { RUNSYNC_WAREHOUSE_DIR: dir });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^compacted .*runsync\.duckdb: [\d.]+ MB → [\d.]+ MB\n$/);
    expect(statSync(file()).size).toBeLessThanOrEqual(size);
    expect(existsSync(file() + COMPACT_SUFFIX)).toBe(false);
    expect(existsSync(`${file()}.wal`)).toBe(false);
    expect(await whatUsersSee()).toEqual(before);
    // Keys and constraints came along: a run loaded again replaces its row.
    const again = clone(simDetails(41, 1)[0] as { updated_at: string });
    again.updated_at = '2026-03-09T00:00:00Z';
    await withWarehouse(dir, {}, (wh) => loadRunDetails(wh, [again]));
    const runs = await withWarehouse(dir, { readOnly: true }, (wh) => wh.all(`SELECT count(*) AS n FROM runs`));
    expect(Number((runs[0] as { n: bigint }).n)).toBe(RUNS);
  });

  it('removes the copy a killed compaction left, and leaves the warehouse whole', async () => {
    const before = await whatUsersSee();
    writeFileSync(file() + COMPACT_SUFFIX, 'half a copy');
    const r = await runMain(['compact'], { RUNSYNC_WAREHOUSE_DIR: dir });
    expect(r.code).toBe(0);
    expect(existsSync(file() + COMPACT_SUFFIX)).toBe(false);
    expect(await whatUsersSee()).toEqual(before);
  });

  it('copies again with more memory when the copy does not fit the warehouse limit, and says so', async () => {
    const before = await whatUsersSee();
    const lines: { msg: string; memoryLimit?: string }[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    // Far below what the copy's key indexes need, as loading's limit is at a million runs.
    const r = await compactWarehouse(dir, { memoryLimit: '2MB', logger });
    expect(r.swapped).toBe(true);
    expect(lines.map((l) => [l.msg, l.memoryLimit])).toContainEqual([
      'compaction did not fit within this memory limit; copying again with more',
      '2MB',
    ]);
    expect(existsSync(file() + COMPACT_SUFFIX)).toBe(false);
    expect(await whatUsersSee()).toEqual(before);
  });

  it('is due once free blocks are the given share of the file, and passes compact through their gate', async () => {
    const before = await whatUsersSee();
    const due = (when?: CompactWhen) => withWarehouse(dir, { readOnly: true }, (wh) => compactionDue(wh, when));
    // A small warehouse is below the floor: not worth a copy.
    expect(await due()).toBe(false);
    expect(await due({ freeShare: 0.01, minFreeBytes: 0 })).toBe(true);
    expect(await compactNow({ gate: new WarehouseGate({ dir, logger: silentLogger() }), logger: silentLogger() })).toBe(
      true,
    );
    expect(await due({ freeShare: 0.01, minFreeBytes: 0 })).toBe(false);
    expect(await whatUsersSee()).toEqual(before);
  });
});
