import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { ROOT, runCli } from '../support/cli.ts';
import { startSim } from '../sync/kit.ts';

// A warehouse this user may not read is not a missing one: status, query and report run as
// another user name the permission problem and RUNSYNC_SHARE_GROUP, and a member of the share
// group gets its report from analytics.duckdb. The child runs under a uid and gid of its own,
// which needs root.

const UID = 61_000 + Math.floor(Math.random() * 1000);
const BIN = join(ROOT, 'bin', 'runsync.js');
const asRoot = process.getuid?.() === 0;
// The other user runs the build in place: every folder down to it must let others through.
const buildReachable =
  asRoot &&
  spawnSync(
    process.execPath,
    ['-e', `require('fs').readFileSync(${JSON.stringify(join(ROOT, 'dist', 'src', 'cli', 'main.js'))})`],
    {
      uid: UID,
      gid: UID,
    },
  ).status === 0;
const why = !asRoot
  ? ' (skipped: running a command as another user needs root)'
  : !buildReachable
    ? ' (skipped: another user cannot read this checkout)'
    : '';

describe(`a warehouse another user may not read${why}`, () => {
  let sim: Simulator;
  let root = '';
  beforeAll(async () => {
    if (!buildReachable) return;
    sim = await startSim({ seed: 51, size: 60, days: 2 });
    root = mkdtempSync(join(tmpdir(), 'runsync-unreadable-'));
    chmodSync(root, 0o711);
    mkdirSync(join(root, 'out'), { mode: 0o777 });
    chmodSync(join(root, 'out'), 0o777);
  });
  afterAll(async () => {
    await sim?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const sync = async (dir: string, env: Record<string, string> = {}) => {
    const r = await runCli(['sync'], {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      ...env,
    });
    expect(r.code, r.stderr).toBe(0);
  };
  const asOther = (args: string[], dir: string) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      uid: UID,
      gid: UID,
      cwd: join(root, 'out'),
      env: { PATH: process.env.PATH ?? '', HOME: join(root, 'out'), RUNSYNC_WAREHOUSE_DIR: dir, NO_COLOR: '1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it.skipIf(!buildReachable)(
    'status, query and report name the permission and RUNSYNC_SHARE_GROUP',
    {
      timeout: 120_000,
    },
    async () => {
      const dir = join(root, 'closed');
      await sync(dir);
      for (const args of [['status'], ['query', 'SELECT 1'], ['report', '--out', join(root, 'out', 'r.html')]]) {
        const r = asOther(args, dir);
        expect(r.code, `${args[0]}: ${r.stderr}`).toBe(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines, args[0]).toHaveLength(1);
        expect(lines[0]).toMatch(/^runsync: cannot read .*\/closed\/runsync\.duckdb: permission denied for this user/);
        expect(lines[0]).toContain('RUNSYNC_SHARE_GROUP');
        expect(lines[0]).not.toContain('no warehouse');
      }
      for (const args of [
        ['query', '--analytics', 'SELECT 1'],
        ['report', '--analytics', '--out', join(root, 'out', 'r.html')],
      ]) {
        const r = asOther(args, dir);
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr.trim()).toMatch(
          /^runsync: cannot read .*\/closed\/analytics\.duckdb: permission denied .*RUNSYNC_SHARE_GROUP[^\n]*$/,
        );
      }
      // Where there is truly nothing, it still says so.
      const none = asOther(['status'], join(root, 'out', 'nothing'));
      expect(none.stderr).toMatch(/there is no warehouse at .*nothing\/runsync\.duckdb yet/);
    },
  );

  it.skipIf(!buildReachable)(
    'a member of the share group reads analytics.duckdb: query and report',
    {
      timeout: 120_000,
    },
    async () => {
      const dir = join(root, 'shared');
      await sync(dir, { RUNSYNC_SHARE_GROUP: String(UID) });
      const q = asOther(['query', '--analytics', '--format', 'csv', 'SELECT count(*) AS n FROM runs'], dir);
      expect(q.code, q.stderr).toBe(0);
      expect(q.stdout).toBe('n\n60\n');
      const status = asOther(['status'], dir);
      expect(status.code).toBe(1);
      expect(status.stderr).toMatch(/runsync\.duckdb is for the user that syncs alone.*query --analytics/);
      const report = asOther(['report', '--out', join(root, 'out', 'shared.html')], dir);
      expect(report.code, report.stderr).toBe(0);
      expect(report.stderr).toMatch(
        /cannot read .*runsync\.duckdb \(permission denied\); reporting from analytics\.duckdb/,
      );
      expect(report.stdout).toMatch(/^wrote .*shared\.html .* from .*analytics\.duckdb$/m);
    },
  );
});
