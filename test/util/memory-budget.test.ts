import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, memoryBudgetOf } from '../../src/config/index.ts';
import { sizeBytes } from '../../src/export/parquet.ts';
import { allocatorEnv, heapFlags, memoryBudget, parseMemorySize } from '../../src/util/memory-budget.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { runCli } from '../support/cli.ts';

// RUNSYNC_MEMORY_LIMIT is read as DuckDB reads sizes, shared out in proportion, refused with a line
// naming it when unreadable, and reaches DuckDB in the commands that open the warehouse.

const MB = 1e6;
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'runsync-membudget-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('memory budget', () => {
  it('reads sizes as DuckDB does', () => {
    expect(parseMemorySize('400MB')).toBe(400 * MB);
    expect(parseMemorySize('1.5GB')).toBe(1.5e9);
    expect(parseMemorySize('512MiB')).toBe(512 * 2 ** 20);
    expect(parseMemorySize('123456789')).toBe(123456789);
    expect(parseMemorySize('lots')).toBeNull();
    expect(parseMemorySize('12 parsecs')).toBeNull();
  });

  it('shares the default 400MB as the loader bench measured it, and grows every part with the budget', () => {
    const b = memoryBudget(400 * MB, 2);
    expect(b.duckdbMemoryLimit).toBe('80MB');
    expect(b.exportMemoryLimit).toBe('112MB');
    expect(b.threads).toBe(1);
    expect(b.exportThreads).toBe(2);
    expect(b.bulkThreads).toBe(1);
    expect(b.bulkLanes).toBe(2);
    const big = memoryBudget(2000 * MB, 8);
    expect(sizeBytes(big.duckdbMemoryLimit)).toBe(5 * sizeBytes(b.duckdbMemoryLimit));
    expect(big.heapMb).toBeGreaterThan(4 * b.heapMb);
    expect(big.threads).toBe(7);
    expect(big.bulkLanes).toBe(8);
    expect(memoryBudget(192 * MB, 2).bulkLanes).toBe(1);
    // The parts DuckDB and V8 are given leave room for what the process holds at start.
    const given = sizeBytes(b.exportMemoryLimit) + b.heapMb * 2 ** 20;
    expect(given).toBeLessThan(b.bytes);
  });

  it('refuses an unreadable or too small setting, naming it', () => {
    expect(() => memoryBudgetOf({ RUNSYNC_MEMORY_LIMIT: 'plenty' })).toThrow(ConfigError);
    expect(() => memoryBudgetOf({ RUNSYNC_MEMORY_LIMIT: '10MB' })).toThrow(/RUNSYNC_MEMORY_LIMIT/);
    expect(memoryBudgetOf({}).bytes).toBe(400 * MB);
    const config = loadConfig({ RUNSYNC_MEMORY_LIMIT: '1GB' }, { needApi: false });
    expect(config.memory.bytes).toBe(1e9);
  });

  it("sizes V8's heap, each part unless the operator did", () => {
    const b = memoryBudget(400 * MB, 2);
    expect(heapFlags(b, [''])).toEqual([`--max-old-space-size=${b.heapMb}`, '--max-semi-space-size=4']);
    expect(heapFlags(b, ['--max-old-space-size=900'])).toEqual(['--max-semi-space-size=4']);
    expect(heapFlags(b, ['--max_semi_space_size=8 --max-old-space-size=900'])).toEqual([]);
    expect(heapFlags(memoryBudget(2000 * MB, 2), [''])[1]).toBe('--max-semi-space-size=16');
  });

  it("limits glibc's malloc to two arenas, unless the operator chose a number", () => {
    expect(allocatorEnv({})).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
    expect(allocatorEnv({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' })).toEqual({
      GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2',
    });
    expect(allocatorEnv({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=8' })).toEqual({});
    expect(allocatorEnv({ MALLOC_ARENA_MAX: '4' })).toEqual({});
  });

  it("reaches DuckDB's memory_limit, threads and allocator when the warehouse opens", async () => {
    const dir = tempDir();
    const wh = await openWarehouse(dir, { budget: memoryBudget(1000 * MB, 4) });
    try {
      const [s] = await wh.all<{ m: string; t: bigint; f: string; bg: boolean }>(
        `SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t,
                current_setting('allocator_flush_threshold') AS f,
                current_setting('allocator_background_threads') AS bg`,
      );
      expect(Math.abs(sizeBytes(s?.m as string) - 200 * MB)).toBeLessThan(MB);
      expect(Number(s?.t)).toBe(3);
      // DuckDB's own default keeps 128MB a thread: 4% of the budget here.
      expect(Math.abs(sizeBytes(s?.f as string) - 40 * MB)).toBeLessThan(MB);
      expect(s?.bg).toBe(true);
      expect(wh.exportThreads).toBe(2);
    } finally {
      await wh.close();
    }
  });

  it('reaches DuckDB from the environment in a command run as a user runs it', async () => {
    const dir = tempDir();
    await (await openWarehouse(dir)).close();
    const r = await runCli(['query', "SELECT current_setting('memory_limit') AS m", '--format', 'csv'], {
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_MEMORY_LIMIT: '2GB',
    });
    expect(r.code).toBe(0);
    const shown = r.stdout.trim().split('\n').at(-1) as string;
    expect(Math.abs(sizeBytes(shown) - 400 * MB)).toBeLessThan(MB);
    const bad = await runCli(['query', 'SELECT 1'], { RUNSYNC_WAREHOUSE_DIR: dir, RUNSYNC_MEMORY_LIMIT: 'much' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/RUNSYNC_MEMORY_LIMIT/);
  });
});
