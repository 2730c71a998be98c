import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WarehouseGate } from '../../src/sync/warehouse-gate.ts';
import { createLogger, silentLogger } from '../../src/util/logger.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse, withWarehouse } from '../../src/warehouse/open.ts';
import { DB_FILE } from '../../src/warehouse/types.ts';
import { simDetails, tempDir } from './wh-kit.ts';

// A pass's batches leave their write-ahead log to the units after them instead of checkpointing
// each: what they committed is there for any opener (a reader, a killed process's successor), and
// the next unit that closes normally folds it into the file.

let tmp: ReturnType<typeof tempDir>;
let dir: string;
const wal = () => join(dir, `${DB_FILE}.wal`);
const walBytes = () => (existsSync(wal()) ? statSync(wal()).size : 0);
const runCount = () =>
  withWarehouse(dir, { readOnly: true }, async (wh) => {
    const [r] = await wh.all<{ n: bigint }>('SELECT count(*) AS n FROM runs');
    return Number(r?.n ?? 0);
  });

beforeEach(() => {
  tmp = tempDir();
  dir = join(tmp.dir, 'w');
});
afterEach(() => tmp.cleanup());

describe('units that keep the write-ahead log', () => {
  it('leave what they committed readable, and the next plain unit checkpoints it', async () => {
    const gate = new WarehouseGate({ dir, logger: silentLogger() });
    const details = simDetails(7, 12);
    await gate.use(async () => undefined);
    expect(walBytes()).toBe(0);

    await gate.use((wh) => loadRunDetails(wh, details.slice(0, 6)), { keepLog: true });
    expect(walBytes()).toBeGreaterThan(0);
    await gate.use((wh) => loadRunDetails(wh, details.slice(6)), { keepLog: true });
    expect(await runCount()).toBe(12);

    await gate.use(async () => undefined);
    expect(walBytes()).toBe(0);
    expect(await runCount()).toBe(12);
  });

  it('leave it to the next opener when the closing checkpoint fails, and nothing committed is lost', async () => {
    const lines: { msg: string }[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    const details = simDetails(8, 10);
    await withWarehouse(dir, {}, async () => undefined);
    const wh = await openWarehouse(dir, { logger });
    await loadRunDetails(wh, details);
    // Another transaction still writing: DuckDB refuses to checkpoint while it is open.
    const lane = await wh.connect();
    await lane.run('BEGIN TRANSACTION');
    await lane.run('CREATE TABLE scratch AS SELECT 1 AS x');
    await wh.close();
    lane.close();
    expect(lines.map((l) => l.msg)).toContain('the write-ahead log was not checkpointed; the next open replays it');
    expect(walBytes()).toBeGreaterThan(0);
    expect(await runCount()).toBe(10);

    await withWarehouse(dir, {}, async () => undefined);
    expect(walBytes()).toBe(0);
    expect(await runCount()).toBe(10);
    const scratch = await withWarehouse(dir, { readOnly: true }, (r) =>
      r.all(`SELECT table_name FROM duckdb_tables() WHERE table_name = 'scratch'`),
    );
    expect(scratch).toEqual([]);
  });
});
