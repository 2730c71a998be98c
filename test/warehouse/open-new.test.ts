import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { DB_FILE } from '../../src/warehouse/types.ts';
import { tempDir } from './wh-kit.ts';

// Two commands started together on a warehouse that does not exist yet: one of them creates the
// file, and the other may find it empty, before DuckDB has written its header.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('a warehouse file another process is still creating', () => {
  it('is waited for, then opened', async () => {
    const made = join(tmp.dir, 'made');
    await (await openWarehouse(made)).close();
    const dir = join(tmp.dir, 'w');
    await (await openWarehouse(dir)).close();
    writeFileSync(join(dir, DB_FILE), '');
    const done = setTimeout(() => renameSync(join(made, DB_FILE), join(dir, DB_FILE)), 300);
    try {
      const wh = await openWarehouse(dir);
      expect(await wh.all(`SELECT count(*) AS n FROM runs`)).toEqual([{ n: 0n }]);
      await wh.close();
    } finally {
      clearTimeout(done);
    }
  });

  it('is reported as not a database once it has stayed empty too long', async () => {
    const dir = join(tmp.dir, 'w');
    await (await openWarehouse(dir)).close();
    writeFileSync(join(dir, DB_FILE), 'x'.repeat(100 * 1024));
    await expect(openWarehouse(dir)).rejects.toThrow(/not a valid DuckDB database file/);
  });
});
