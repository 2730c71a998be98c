import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { collect, runCli, spawnCli } from '../support/cli.ts';
import { diffWithTruth, startSim } from '../sync/kit.ts';

// The commands as a user runs them: backfill (filters, resuming, --force, the watermark left
// alone), status, and the demo.

describe('runsync backfill and status', () => {
  let sim: Simulator;
  let dir: string;
  let env: Record<string, string>;
  let from: string;
  let to: string;
  beforeAll(async () => {
    const now = systemMicros() - MICROS_PER_HOUR;
    // A token bucket whose Reset means "full again at", so status has a learned limit to show.
    const rateLimit = { perKey: { limit: 300, windowSeconds: 1, model: 'bucket-full-at' as const } };
    sim = await startSim({ seed: 51, size: 600, days: 9, now, rateLimit });
    dir = mkdtempSync(join(tmpdir(), 'runsync-cli-'));
    env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key, RUNSYNC_WAREHOUSE_DIR: dir, LOG_LEVEL: 'info' };
    from = formatTimestamp(now - 6 * MICROS_PER_DAY);
    to = formatTimestamp(now - 2 * MICROS_PER_DAY);
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replays a filtered range, resumes after a kill, and never moves the watermark', async () => {
    const args = ['backfill', '--from', from, '--to', to, '--status', 'completed', 'failed', '--slice', '6h'];
    // Killed after its first progress line, then the same command resumes it.
    const child = spawnCli(args, env);
    child.stderr?.on('data', (d: Buffer) => {
      if (String(d).includes('backfill progress')) child.kill('SIGKILL');
    });
    const killed = await collect(child, 60_000);
    expect(killed.signal).toBe('SIGKILL');
    const resumed = await runCli(args, env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/ok \(resumed\)/);
    expect(resumed.stderr).toMatch(/"msg":"backfill progress"/);

    const wh = await openWarehouse(dir, { readOnly: true });
    const rows = await wh.all<{ status: string; n: bigint; lo: bigint; hi: bigint }>(
      `SELECT status, count(*) AS n, min(epoch_us(created_at)) AS lo, max(epoch_us(created_at)) AS hi
       FROM runs GROUP BY status ORDER BY status`,
    );
    const watermark = await wh.all(`SELECT * FROM _sync_state WHERE key = 'runs.watermark'`);
    await wh.close();
    expect(watermark).toEqual([]);
    const truth = [...sim.world.truthRunDetails()].filter(
      (d) =>
        (d.created_at as string) >= from &&
        (d.created_at as string) < to &&
        ['completed', 'failed'].includes(d.status as string),
    );
    expect(rows.map((r) => r.status)).toEqual(['completed', 'failed']);
    expect(rows.reduce((a, r) => a + Number(r.n), 0)).toBe(truth.length);

    // Finished: the same command runs it again, and fetches nothing that did not change...
    const again = await runCli(args, env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/0 details loaded/);
    // ... unless forced.
    const forced = await runCli([...args, '--force'], env);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`${truth.length} details loaded`);
  });

  it('refuses a bad range or filter before any request, with exit 2', async () => {
    const before = sim.counters.count();
    const bad = await runCli(['backfill', '--from', to, '--to', from], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--from must be before --to/);
    const filter = await runCli(['backfill', '--from', from, '--to', to, '--status', 'sleeping'], env);
    expect(filter.code).toBe(2);
    expect(filter.stderr).toMatch(/status/);
    expect(sim.counters.count()).toBe(before);
  });

  it('status shows the watermark, the last pass, the backfill and row counts', async () => {
    const sync = await runCli(['sync'], env);
    expect(sync.code, sync.stderr).toBe(0);
    const r = await runCli(['status'], { RUNSYNC_WAREHOUSE_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^watermark\s+\d{4}-/m);
    expect(r.stdout).toMatch(/^last pass\s+sync ok/m);
    expect(r.stdout).toMatch(/^done\s+backfill /m);
    expect(r.stdout).toMatch(/^open runs\s+\d+ tracked/m);
    expect(r.stdout).toMatch(/^rows\s+runs \d+/m);
    // What the budget learned of the simulator's limit, and how much of it the pass used.
    expect(r.stdout).toMatch(
      /^rate budget\s+paced to [\d.]+ requests\/s(; pass \S+ used \d+% of what the key allowed over its length)?$/m,
    );
    expect(r.stdout).toMatch(
      /^ {2}key\s+sustained [\d.]+ requests\/s \(burst \d+ per \d+ s window\)(, others [\d.]+\/s)?; paced to [\d.]+\/s$/m,
    );
    const json = await runCli(['status', '--json'], { RUNSYNC_WAREHOUSE_DIR: dir });
    const report = JSON.parse(json.stdout) as {
      tables: Record<string, number>;
      watermark: string;
      lastPass: { status: string; startedAt: string; finishedAt: string };
      walks: { from: string; to: string; updatedAt: string }[];
      tableFreshness: Record<string, string | null>;
    };
    expect(report.tables.runs).toBe([...sim.world.truthRunDetails()].length);
    expect(report.lastPass.status).toBe('ok');
    // Times as ISO 8601 strings, microseconds kept.
    const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
    for (const t of [report.watermark, report.lastPass.startedAt, report.lastPass.finishedAt]) expect(t).toMatch(iso);
    for (const w of report.walks) for (const t of [w.from, w.to, w.updatedAt]) expect(t).toMatch(iso);
    expect(Object.values(report.tableFreshness).filter((t) => t !== null).length).toBeGreaterThan(0);
    for (const t of Object.values(report.tableFreshness)) if (t !== null) expect(t).toMatch(iso);
  });
});

describe('runsync demo', () => {
  it('syncs the bundled simulator into ./warehouse and answers three questions', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'runsync-demo-'));
    try {
      const r = await runCli(['demo'], {}, { cwd, timeoutMs: 120_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/first pass : 2000 runs listed, 2000 new/);
      expect(r.stdout).toMatch(/an hour on: .* new/);
      expect(r.stdout).toMatch(/^\s+runs\s+20\d\d$/m);
      for (const title of [
        'Runs per day by resolution',
        'Most called tools',
        'Deflection and escalation rate per agent',
      ])
        expect(r.stdout).toContain(title);
      const wh = await openWarehouse(join(cwd, 'warehouse'), { readOnly: true });
      const [n] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM run_steps`);
      await wh.close();
      expect(Number(n?.n)).toBeGreaterThan(10_000);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('leaves a warehouse that is not a demo alone', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'runsync-demo-'));
    try {
      const wh = await openWarehouse(join(cwd, 'warehouse'));
      await wh.close();
      const r = await runCli(['demo'], {}, { cwd });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/not a demo's; set RUNSYNC_WAREHOUSE_DIR/);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});

describe('a backfill beside a scheduled pass', () => {
  it('both finish, each waiting its turn at the warehouse, and the warehouse ends exact', async () => {
    const now = systemMicros() - MICROS_PER_HOUR;
    const sim = await startSim({ seed: 52, size: 700, days: 10, now, runs: { postSettleFraction: 0 } });
    const dir = mkdtempSync(join(tmpdir(), 'runsync-cli-'));
    try {
      const env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key, RUNSYNC_WAREHOUSE_DIR: dir, LOG_LEVEL: 'warn' };
      const from = formatTimestamp(now - 10 * MICROS_PER_DAY);
      const to = formatTimestamp(now - 3 * MICROS_PER_DAY);
      const [sync, backfill] = await Promise.all([
        runCli(['sync'], env, { timeoutMs: 120_000 }),
        runCli(['backfill', '--from', from, '--to', to, '--slice', '12h', '--force'], env, { timeoutMs: 120_000 }),
      ]);
      expect(sync.code, sync.stderr).toBe(0);
      expect(backfill.code, backfill.stderr).toBe(0);
      expect(await diffWithTruth(sim, dir, sim.clock.now())).toEqual([]);
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
