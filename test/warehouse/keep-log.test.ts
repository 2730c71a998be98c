import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MERGE_ROW_GROUPS_EVERY, WarehouseGate } from '../../src/sync/warehouse-gate.ts';
import { createLogger, silentLogger } from '../../src/util/logger.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { KEEP_LOG_MAX, openWarehouse, withWarehouse } from '../../src/warehouse/open.ts';
import { DB_FILE } from '../../src/warehouse/types.ts';
import { simDetails, tempDir } from './wh-kit.ts';

// A pass's batches leave their write-ahead log to the units after them instead of checkpointing
// each: what they committed is there for any opener (a reader, a killed process's successor), and
// the next unit that closes normally folds it into the file.

let tmp: ReturnType<typeof tempDir>;
let dir: string;
const wal = () => join(dir, `${DB_FILE}.wal`);
const walBytes = () => (existsSync(wal()) ? statSync(wal()).size : 0);
/** DuckDB's rows per row group. */
const ROW_GROUP = 122_880;
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

  it("try a closing checkpoint that does not fit loading's limit once more with the export's", async () => {
    const lines: { msg: string }[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    await withWarehouse(dir, {}, async () => undefined);
    const wh = await openWarehouse(dir, { logger });
    await loadRunDetails(wh, simDetails(9, 400));
    // What DuckDB holds and no more, and nowhere to spill: no room for a checkpoint's work.
    const [held] = await wh.all<{ bytes: bigint }>('SELECT sum(memory_usage_bytes) AS bytes FROM duckdb_memory()');
    await wh.run(`SET max_temp_directory_size = '0B'`);
    await wh.setMemoryLimit(`${Number(held?.bytes ?? 0)}B`);
    expect(await wh.close()).toBe(true);
    expect(lines).toEqual([]);
    expect(walBytes()).toBe(0);
    expect(await runCount()).toBe(400);
  });

  it('checkpoint a long pass without rewriting the rows stored before them, and merge them every so often', async () => {
    const gate = new WarehouseGate({ dir, logger: silentLogger() });
    const rowGroups = () =>
      gate.use(async (wh) => {
        const [r] = await wh.all<{ groups: bigint; n: bigint; chars: bigint }>(
          `SELECT (SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('notes')) AS groups,
             count(*) AS n, sum(length(body)) AS chars FROM notes`,
        );
        return { groups: Number(r?.groups), rows: Number(r?.n), chars: Number(r?.chars) };
      });
    await gate.use((wh) =>
      wh.run(`CREATE TABLE notes AS SELECT i, repeat(md5(i::VARCHAR), 32) AS body FROM range(1000) t(i)`),
    );
    // Each batch logs more than a unit may leave behind, so each closes with a checkpoint.
    const rows = Math.ceil((1.25 * KEEP_LOG_MAX) / 1024);
    const batch = (k: number) =>
      gate.use(
        async (wh) => {
          await wh.run(
            `INSERT INTO notes SELECT i, repeat(md5(i::VARCHAR), 32) FROM range(${1000 + k * rows}, ${1000 + (k + 1) * rows}) t(i)`,
          );
          expect(walBytes()).toBeGreaterThan(KEEP_LOG_MAX);
        },
        { keepLog: true },
      );
    for (let k = 0; k < MERGE_ROW_GROUPS_EVERY - 1; k++) await batch(k);
    expect(walBytes()).toBe(0);
    // The 1,000 rows first stored, and each batch's, in row groups of their own: none rewritten.
    const before = await rowGroups();
    expect(before.groups).toBe(MERGE_ROW_GROUPS_EVERY);
    await batch(MERGE_ROW_GROUPS_EVERY - 1);
    const after = await rowGroups();
    const total = 1000 + MERGE_ROW_GROUPS_EVERY * rows;
    const merged = Math.ceil(total / ROW_GROUP);
    expect(after).toEqual({ groups: merged, rows: total, chars: total * 1024 });

    // Three more batches, then a unit that does not keep its log (a pass's last): it merges them.
    for (let k = MERGE_ROW_GROUPS_EVERY; k < MERGE_ROW_GROUPS_EVERY + 3; k++) await batch(k);
    expect((await rowGroups()).groups).toBe(merged + 3);
    await gate.use((wh) => wh.run(`INSERT INTO notes VALUES (-1, 'x')`));
    const end = total + 3 * rows + 1;
    const last = await rowGroups();
    expect(last).toMatchObject({ rows: end, chars: (end - 1) * 1024 + 1 });
    expect(last.groups).toBeLessThan(merged + 3);
  });

  it("replay a log that does not fit the open's memory limit with more, and fold it into the file", async () => {
    const lines: { msg: string }[] = [];
    const logger = createLogger({ level: 'warn', destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    const gate = new WarehouseGate({ dir, logger: silentLogger() });
    // A keyed table's batch: its replay rebuilds the index entries in memory as well as the rows.
    await gate.use((wh) => wh.run(`CREATE TABLE notes (id VARCHAR PRIMARY KEY, body VARCHAR)`));
    await gate.use(
      (wh) =>
        wh.run(
          `INSERT INTO notes SELECT 'note-' || md5(i::VARCHAR) || md5((-i)::VARCHAR), repeat('x', 20) FROM range(100000) t(i)`,
        ),
      { keepLog: true },
    );
    expect(walBytes()).toBeGreaterThan(0);
    expect(walBytes()).toBeLessThan(KEEP_LOG_MAX);
    const small = '16MB';
    // DuckDB alone cannot open the file at that limit.
    await expect(
      DuckDBInstance.create(join(dir, DB_FILE), { memory_limit: small, access_mode: 'READ_ONLY' }),
    ).rejects.toThrow(/Failure while replaying WAL/);

    const wh = await openWarehouse(dir, { logger, memoryLimit: small });
    try {
      expect(walBytes()).toBe(0);
      const [r] = await wh.all<{ n: bigint; limit: string }>(
        `SELECT count(*) AS n, current_setting('memory_limit') AS limit FROM notes`,
      );
      expect(Number(r?.n)).toBe(100_000);
      expect(r?.limit).toBe('15.2 MiB');
    } finally {
      await wh.close();
    }
    expect(lines.map((l) => l.msg)).toEqual([
      'the write-ahead log did not fit the memory limit to replay; replaying it with more',
    ]);
    // Nothing left to replay: the next open at that limit is a plain one.
    await withWarehouse(dir, { logger, memoryLimit: small, readOnly: true }, async () => undefined);
    expect(lines).toHaveLength(1);
  });
});
