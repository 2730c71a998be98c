import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { runCli, spawnCli, waitForLine } from '../support/cli.ts';
import { eventually, perWorkerTest, type RunningWorker, workerEnv } from '../worker/kit.ts';

// A worker as an operator starts it: it passes at once rather than at the first tick of its
// schedule, its metrics say "unknown" until a pass has finished, and `status` tells how long a
// load has waited for a warehouse someone holds.

const HOLD = new URL('../warehouse/hold-warehouse.ts', import.meta.url).pathname;
const TSX = import.meta.resolve('tsx');
// Schedules that do not fire during a test.
const NEVER = { RUNSYNC_SCHEDULE_RUNS: '0 0 1 1 *', RUNSYNC_SCHEDULE_CATALOG: '0 0 1 1 *' };

describe('runsync worker, operated', () => {
  const each = perWorkerTest();

  function start(env: Record<string, string>, args: string[] = []): RunningWorker {
    const child = spawnCli(['worker', ...args], env);
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (out += d));
    return {
      child,
      output: () => out,
      exited: new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))),
    };
  }

  it('passes at start, before any tick; /metrics read NaN until a pass has finished', {
    timeout: 180_000,
  }, async () => {
    // A slow API, so that the first pass is still running when /metrics is first read. (prom-client
    // spells NaN "Nan"; Prometheus reads either.)
    const sim = await each.sim({
      seed: 97,
      size: 400,
      days: 5,
      now: systemMicros() - MICROS_PER_HOUR,
      rateLimit: { perKey: { limit: 25, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const prefix = each.prefix();
    const worker = start({ ...workerEnv(sim, dir, prefix), ...NEVER, LOG_LEVEL: 'info' }, ['--dashboard', '0']);
    each.workers.push(worker);
    const line = await waitForLine(worker.child, /^dashboard http:\/\/127\.0\.0\.1:\d+\//, 60_000);
    const base = (/^dashboard (http:\/\/127\.0\.0\.1:\d+)\//.exec(line) as RegExpExecArray)[1] as string;
    const early = await (await fetch(`${base}/metrics`)).text();
    expect(early).toMatch(/^runsync_lag_seconds NaN$/im);
    expect(early).toMatch(/^runsync_last_pass_timestamp_seconds NaN$/im);
    expect(early).toMatch(/^runsync_open_runs NaN$/im);
    let metrics = '';
    await eventually(
      async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return /runsync_passes_total\{kind="sync",status="ok"\} 1/.test(metrics);
      },
      150_000,
      () => `${metrics}\n${worker.output().slice(-2000)}`,
    );
    expect(metrics).toMatch(/^runsync_lag_seconds \d+(\.\d+)?$/m);
    expect(metrics).toMatch(/^runsync_last_pass_timestamp_seconds \d{10}(\.\d+)?$/m);
    expect(worker.output()).toMatch(/queued a first pass at start/);
    expect(sim.counters.count('runs.get')).toBeGreaterThan(0);
  });

  it('status says how long a load has waited for the warehouse, and who holds it', { timeout: 180_000 }, async () => {
    const sim = await each.sim({ seed: 98, size: 200, days: 5, now: systemMicros() - MICROS_PER_HOUR });
    const dir = each.dir();
    const prefix = each.prefix();
    const holder = spawn(process.execPath, ['--import', TSX, HOLD, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
    each.defer(() => holder.kill('SIGKILL'));
    await new Promise<void>((r) => holder.stdout?.once('data', () => r()));
    const env = { ...workerEnv(sim, dir, prefix), ...NEVER, LOG_LEVEL: 'info' };
    const w = start(env);
    each.workers.push(w);
    await eventually(
      async () => /held by another process/.test(w.output()),
      60_000,
      () => w.output(),
    );
    const since = Date.now();
    await new Promise((r) => setTimeout(r, 9000));
    const r = await runCli(['status'], { ...env, LOG_LEVEL: 'silent' });
    const waited = Number(/has waited (\d+) s for the warehouse, held by process (\d+)/.exec(r.stdout)?.[1]);
    const heldFor = (Date.now() - since) / 1000;
    expect(waited, r.stdout).toBeGreaterThanOrEqual(8);
    // The log line is looked for every 2 s: the wait began up to that much before it was seen.
    expect(waited).toBeLessThanOrEqual(heldFor + 5);
    expect(r.stdout).toContain(`held by process ${holder.pid}`);
  });

  it('a clean SIGTERM is not a failure: info lines only, the jobs in flight handed back', {
    timeout: 180_000,
  }, async () => {
    // Slow enough that fetch jobs are in flight when the stop comes.
    const sim = await each.sim({
      seed: 96,
      size: 600,
      days: 5,
      now: systemMicros() - MICROS_PER_HOUR,
      rateLimit: { perKey: { limit: 30, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const w = start({ ...workerEnv(sim, dir, each.prefix()), ...NEVER, LOG_LEVEL: 'info' });
    each.workers.push(w);
    const lines = () =>
      w
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string; job?: string });
    await eventually(
      async () => sim.counters.count('runs.get') >= 60,
      120_000,
      () => w.output().slice(-2000),
    );
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    const stopping = lines().findIndex((l) => l.msg === 'worker stopping');
    expect(stopping).toBeGreaterThan(0);
    const after = lines().slice(stopping);
    expect(
      after.filter((l) => l.level !== 'info'),
      w.output().slice(-3000),
    ).toEqual([]);
    expect(after.some((l) => l.msg === 'pass finished')).toBe(true);
    const handedBack = after.filter((l) => /handed the job back/.test(l.msg));
    expect(
      handedBack.some((l) => l.job === 'fetch-details'),
      w.output().slice(-3000),
    ).toBe(true);
    expect(lines().filter((l) => l.msg === 'job failed')).toEqual([]);
  });
});
