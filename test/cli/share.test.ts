import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { runCli } from '../support/cli.ts';
import { startSim } from '../sync/kit.ts';

// Who may read the outputs: with RUNSYNC_SHARE_GROUP, a BI tool running as another user in that
// group reads the Parquet tree and analytics.duckdb; the raw archive and runsync.duckdb stay its
// owner's. The test makes a group and a user of its own, which needs root and the shadow tools.

const canMakeUsers =
  process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v groupadd && command -v useradd']).status === 0;
const why = canMakeUsers ? '' : ' (skipped: making a group and a user needs root and groupadd/useradd)';
const SUFFIX = Math.random().toString(36).slice(2, 8);
const GROUP = `rsbi${SUFFIX}`;
const USER = `rsbi${SUFFIX}u`;
const DUCKDB_PACKAGES = join(fileURLToPath(import.meta.resolve('@duckdb/node-api')), '..', '..', '..');

// Run as the BI user: reads a Parquet file, counts runs through analytics.duckdb, and tries the
// raw archive and runsync.duckdb.
const reader = (duckdb: string) => `
import { readFileSync, readdirSync } from 'node:fs';
import { DuckDBInstance } from ${JSON.stringify(duckdb)};
const dir = process.argv[1];
const out = {};
const attempt = (name, fn) => { try { out[name] = fn(); } catch (e) { out[name] = e.code ?? e.message; } };
attempt('parquetBytes', () => {
  const part = readdirSync(dir + '/parquet/runs')[0];
  return readFileSync(dir + '/parquet/runs/' + part + '/data.parquet').length;
});
attempt('raw', () => readdirSync(dir + '/raw').length);
attempt('runsyncDb', () => readFileSync(dir + '/runsync.duckdb').length);
try {
  const db = await DuckDBInstance.create(dir + '/analytics.duckdb', { access_mode: 'READ_ONLY' });
  const c = await db.connect();
  out.analyticsRuns = Number((await c.runAndReadAll('SELECT count(*) AS n FROM runs')).getRowObjects()[0].n);
  const byCategory = await c.runAndReadAll('SELECT count(*) AS n FROM v_resolution_by_category');
  out.byCategory = byCategory.getRowObjects()[0].n > 0;
  c.closeSync();
  db.closeSync();
} catch (e) { out.analyticsRuns = e.message; }
console.log(JSON.stringify(out));
`;

describe(`files a BI tool can read${why}`, () => {
  let sim: Simulator;
  let root = '';
  beforeAll(async () => {
    if (!canMakeUsers) return;
    execFileSync('groupadd', [GROUP]);
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--gid', GROUP, USER]);
    sim = await startSim({ seed: 99, size: 120, days: 3 });
    // Another user must be able to pass through the directories above the warehouse.
    root = mkdtempSync(join(tmpdir(), 'runsync-share-'));
    chmodSync(root, 0o711);
    // The BI user's own copy of DuckDB: the checkout may sit where only its owner may go.
    cpSync(DUCKDB_PACKAGES, join(root, 'node_modules', '@duckdb'), { recursive: true });
  });
  afterAll(async () => {
    await sim?.close();
    if (root) rmSync(root, { recursive: true, force: true });
    if (!canMakeUsers) return;
    spawnSync('userdel', [USER]);
    spawnSync('groupdel', [GROUP]);
  });

  const asBiUser = (dir: string): Record<string, unknown> => {
    const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('getent', ['group', GROUP], { encoding: 'utf8' }).split(':')[2]);
    const duckdb = pathToFileURL(join(root, 'node_modules', '@duckdb', 'node-api', 'lib', 'index.js')).href;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', reader(duckdb), dir], {
      uid,
      gid,
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: root },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  it.skipIf(!canMakeUsers)(
    'a user of the group reads the Parquet tree and analytics.duckdb, never the raw archive',
    {
      timeout: 120_000,
    },
    async () => {
      const dir = join(root, 'warehouse');
      const env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key, RUNSYNC_WAREHOUSE_DIR: dir };
      const r = await runCli(['sync'], { ...env, RUNSYNC_SHARE_GROUP: GROUP });
      expect(r.code, r.stderr).toBe(0);
      const seen = asBiUser(dir);
      expect(seen.parquetBytes).toBeGreaterThan(0);
      expect(seen.analyticsRuns).toBe(120);
      expect(seen.byCategory).toBe(true);
      expect(seen.raw).toBe('EACCES');
      expect(seen.runsyncDb).toBe('EACCES');
      // Owner-only as created: the archive's files, runsync.duckdb; the group's: the Parquet files.
      const mode = (p: string) => statSync(p).mode & 0o777;
      expect(mode(join(dir, 'runsync.duckdb'))).toBe(0o600);
      expect(mode(join(dir, 'raw'))).toBe(0o700);
      expect(mode(join(dir, 'analytics.duckdb'))).toBe(0o640);
      const part = readdirSync(join(dir, 'parquet', 'runs'))[0] as string;
      expect(mode(join(dir, 'parquet', 'runs', part, 'data.parquet'))).toBe(0o640);

      // Without the setting, the same user reads nothing, as before.
      const closed = join(root, 'closed');
      const c = await runCli(['sync'], { ...env, RUNSYNC_WAREHOUSE_DIR: closed });
      expect(c.code, c.stderr).toBe(0);
      const none = asBiUser(closed);
      expect(none.parquetBytes).toBe('EACCES');
      expect(String(none.analyticsRuns)).toMatch(/Permission denied|EACCES|Cannot open/i);
    },
  );

  it.skipIf(!canMakeUsers)(
    'a group this user cannot give files to, or that does not exist, exits 2 naming the setting',
    async () => {
      const env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key, RUNSYNC_WAREHOUSE_DIR: join(root, 'nogroup') };
      const r = await runCli(['sync'], { ...env, RUNSYNC_SHARE_GROUP: `${GROUP}-missing` });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/RUNSYNC_SHARE_GROUP: there is no group named/);
    },
  );
});
