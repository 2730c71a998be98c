import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp } from '../../src/util/timestamp.ts';
import { runMain as cli } from '../support/cli.ts';
import { diffWithTruth, SETTLE, spanStart, startSim } from '../sync/kit.ts';

// The warehouse's disk filling up, or turning read-only: a clear message, exit 1, nothing
// half-written (no stray temporary files, a warehouse that opens), and once there is room again
// the next pass ends exact. The directory is a small tmpfs of its own (this needs root, as the
// test machines run; elsewhere the test is skipped and says so).

function canMount(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'runsync-mnt-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MOUNT = canMount();

function tempFiles(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((f) => /\.tmp$|\.staging-/.test(f));
}

describe.skipIf(!MOUNT)('a full or read-only warehouse disk', () => {
  let sim: Simulator | null = null;
  let dir = '';
  afterEach(async () => {
    await sim?.close();
    try {
      execFileSync('umount', [dir], { stdio: 'ignore' });
    } catch {
      // not mounted
    }
    rmSync(dir, { recursive: true, force: true });
  });

  async function setUp(size: string) {
    sim = await startSim({ seed: 93, size: 400, days: 5 });
    dir = mkdtempSync(join(tmpdir(), 'runsync-disk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
    return {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
    };
  }

  it('a full disk: a clear error, nothing half-written, and the next pass ends exact once there is room', async () => {
    const env = await setUp('6m');
    const t0 = Date.now();
    const full = await cli(['sync'], env);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(full.code).toBe(1);
    expect(full.err).toMatch(/the disk holding .* is full/);
    expect(tempFiles(dir)).toEqual([]);
    // The file stays readable, and status does not show the pass that failed as running.
    const status = await cli(['status'], env);
    expect(status.code, status.err).toBe(0);
    expect(status.out).not.toMatch(/running now/);
    expect(status.out).toMatch(/last pass +sync (failed|running)/);
    // One line says what happened and where.
    expect(full.err.split('\n').filter((l) => /is full/.test(l))).toHaveLength(1);
    execFileSync('mount', ['-o', 'remount,size=200m', dir]);
    const again = await cli(['sync'], env);
    expect(again.code, again.err).toBe(0);
    expect(await diffWithTruth(sim as Simulator, dir, (sim as Simulator).clock.now() - SETTLE)).toEqual([]);
  });

  it('a read-only warehouse directory: a clear error naming it', async () => {
    const env = await setUp('200m');
    expect((await cli(['sync'], env)).code).toBe(0);
    (sim as Simulator).advance('2h');
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    const r = await cli(['sync'], env);
    // A warehouse directory this user cannot write is a setting to fix: exit 2, named, at start.
    expect(r.code).toBe(2);
    expect(r.err).toContain(`RUNSYNC_WAREHOUSE_DIR: cannot write in ${dir} (EROFS: read-only file system)`);
  });
});
