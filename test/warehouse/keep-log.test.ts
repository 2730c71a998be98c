import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WarehouseGate } from '../../src/sync/warehouse-gate.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { withWarehouse } from '../../src/warehouse/open.ts';
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
});
