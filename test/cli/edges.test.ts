import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { ROOT, runMain } from '../support/cli.ts';
import { startSim, tempDir } from '../sync/kit.ts';

// What a new user runs into first: the version, help that names the settings, a warehouse
// directory that cannot be written, a key the API refuses.

describe('first contact', () => {
  let sim: Simulator;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    sim = await startSim({ seed: 95, size: 50, days: 2 });
    tmp = tempDir();
  });
  afterAll(async () => {
    await sim?.close();
    tmp?.cleanup();
  });

  it('--version prints the package version', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const r = await runMain(['--version'], {});
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(version);
  });

  it("each command's help lists the environment settings it reads", async () => {
    const sync = await runMain(['sync', '--help'], {});
    expect(sync.code).toBe(0);
    const env = sync.out.slice(sync.out.indexOf('Environment:'));
    for (const s of [
      'RUNSYNC_API_URL',
      'RUNSYNC_API_KEY',
      'RUNSYNC_WAREHOUSE_DIR',
      'RUNSYNC_PROGRESS_EVERY',
      'LOG_LEVEL',
    ])
      expect(env).toContain(s);
    const worker = await runMain(['worker', '--help'], {});
    for (const s of ['REDIS_URL', 'RUNSYNC_SHUTDOWN_GRACE', 'RUNSYNC_PASS_AT_START', 'RUNSYNC_SHARE_GROUP'])
      expect(worker.out).toContain(s);
    const top = await runMain(['--help'], {});
    expect(top.out).toMatch(/Environment:[\s\S]*RUNSYNC_STAGING_DIR[\s\S]*Exit codes: 0 success/);
  });

  it('a warehouse directory that cannot be written exits 2 naming the setting, before any request', async () => {
    const file = join(tmp.dir, 'a-file');
    writeFileSync(file, '');
    const before = sim.counters.count();
    const env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key };
    // Inside /proc, Node's recursive mkdir never returns: this must not hang.
    const proc = await runMain(['sync'], { ...env, RUNSYNC_WAREHOUSE_DIR: '/proc/runsync-no-such/warehouse' });
    expect(proc.code).toBe(2);
    expect(proc.err).toMatch(/^runsync: RUNSYNC_WAREHOUSE_DIR: cannot create \/proc\/runsync-no-such \(ENOENT\)/);
    const notDir = await runMain(['sync'], { ...env, RUNSYNC_WAREHOUSE_DIR: file });
    expect(notDir.code).toBe(2);
    expect(notDir.err).toMatch(/RUNSYNC_WAREHOUSE_DIR: .*a-file is not a directory/);
    const below = await runMain(['export'], { RUNSYNC_WAREHOUSE_DIR: join(file, 'warehouse') });
    expect(below.code).not.toBe(0);
    const worker = await runMain(['worker'], {
      ...env,
      REDIS_URL: 'redis://127.0.0.1:6379',
      RUNSYNC_WAREHOUSE_DIR: '/proc/runsync-no-such/warehouse',
    });
    expect(worker.code).toBe(2);
    expect(worker.err).toMatch(/RUNSYNC_WAREHOUSE_DIR: cannot create/);
    expect(sim.counters.count()).toBe(before);
  });

  it('a refused key names the setting it came from', async () => {
    const keyFile = join(tmp.dir, 'key');
    writeFileSync(keyFile, `${sim.key}\n`);
    sim.keys.revoke(sim.key);
    const fromFile = await runMain(['sync'], {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY_FILE: keyFile,
      RUNSYNC_WAREHOUSE_DIR: join(tmp.dir, 'wh1'),
    });
    expect(fromFile.code).toBe(1);
    expect(fromFile.err).toMatch(/refused the key in RUNSYNC_API_KEY_FILE \(HTTP 401 unauthenticated/);
    const direct = await runMain(['sync'], {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: join(tmp.dir, 'wh2'),
    });
    expect(direct.code).toBe(1);
    expect(direct.err).toMatch(/refused the key in RUNSYNC_API_KEY\b(?!_FILE)/);
    expect(`${fromFile.err}${direct.err}`).not.toContain(sim.key);
  });
});
