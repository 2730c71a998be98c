import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { WarehouseLockedError } from '../../src/warehouse/errors.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { DB_FILE } from '../../src/warehouse/types.ts';
import { spawnCli } from '../support/cli.ts';
import { runDetail } from './run-fixture.ts';
import { holdInAnotherProcess, releaseHolder, tempDir } from './wh-kit.ts';

let tmp: ReturnType<typeof tempDir>;
let child: ChildProcessWithoutNullStreams | null = null;
let dir: string;

beforeEach(async () => {
  tmp = tempDir();
  dir = join(tmp.dir, 'w');
  const w = await openWarehouse(dir);
  await loadRunDetails(w, [runDetail()]); // something in the raw archive, so rebuild gets as far as the lock
  await w.close();
  child = await holdInAnotherProcess(dir);
});
afterEach(async () => {
  if (child) await releaseHolder(child);
  child = null;
  tmp.cleanup();
});

describe('a warehouse held by another process', () => {
  it('refuses a writer and a reader with a typed error naming the file and the holder', async () => {
    const err = await openWarehouse(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WarehouseLockedError);
    const locked = err as WarehouseLockedError;
    expect(locked.file).toBe(join(dir, DB_FILE));
    expect(locked.holderPid).toBe(child?.pid);
    expect(locked.message).toBe(
      `the warehouse ${join(dir, DB_FILE)} is in use by process ${child?.pid} (${locked.holder});` +
        ' try again when it finishes, or read analytics.duckdb beside it, which is never locked',
    );
    await expect(openWarehouse(dir, { readOnly: true })).rejects.toBeInstanceOf(WarehouseLockedError);
  });

  it('waits for it when asked to, and opens once it is released', async () => {
    const seen: WarehouseLockedError[] = [];
    const wh = await openWarehouse(dir, {
      lockWaitMs: 60_000,
      onLocked: (e) => {
        if (seen.push(e) === 1) child?.stdin.write('release\n');
      },
    });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]?.holderPid).toBe(child?.pid);
    expect(await wh.all(`SELECT count(*) AS n FROM runs`)).toEqual([{ n: 1n }]);
    await wh.close();
  });

  it('a separate runsync process (export, rebuild) prints one clear line, no stack trace, and exits 1', async () => {
    for (const command of ['export', 'rebuild']) {
      const c = spawnCli([command], { RUNSYNC_WAREHOUSE_DIR: dir, LOG_LEVEL: 'silent' });
      let stdout = '';
      let stderr = '';
      c.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s));
      c.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
      const [code] = (await once(c, 'exit')) as [number | null];
      expect(code, command).toBe(1);
      expect(stdout, command).toBe('');
      const lines = stderr.trimEnd().split('\n');
      expect(lines, command).toHaveLength(1);
      expect(lines[0], command).toMatch(
        new RegExp(
          `^runsync: the warehouse .*${DB_FILE} is in use by process ${child?.pid}\\b.*read analytics\\.duckdb`,
        ),
      );
    }
  });

  it('makes `runsync export` print one clear line, no stack trace, and exit 1', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['export'], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: { RUNSYNC_WAREHOUSE_DIR: dir, LOG_LEVEL: 'silent' },
      signal: new AbortController().signal,
      isTty: false,
    });
    expect(code).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(new RegExp(`^runsync: the warehouse .*${DB_FILE} is in use by process ${child?.pid}`));
    expect(err.join('\n')).not.toMatch(/\n\s+at /);
  });
});
