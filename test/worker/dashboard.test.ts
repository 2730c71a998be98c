import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { spawnCli, waitForLine } from '../support/cli.ts';
import { startSim, tempDir } from '../sync/kit.ts';
import { cleanRedis, eventually, type RunningWorker, stopWorker, uniquePrefix, workerEnv } from './kit.ts';

// `runsync worker --dashboard PORT`: Bull Board for the queues and Prometheus metrics for the
// passes, requests, queue depths and the lag behind the API.

describe('runsync worker --dashboard', () => {
  let sim: Simulator | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  let prefix = '';
  let worker: RunningWorker | null = null;
  afterEach(async () => {
    if (worker) await stopWorker(worker);
    await sim?.close();
    tmp?.cleanup();
    await cleanRedis(prefix);
  });

  it('serves the queue dashboard and /metrics that follow the passes', { timeout: 180_000 }, async () => {
    const rateLimit = { perKey: { limit: 300, windowSeconds: 1, model: 'gcra' as const } };
    sim = await startSim({ seed: 76, size: 300, days: 5, now: systemMicros() - MICROS_PER_HOUR, rateLimit });
    tmp = tempDir();
    prefix = uniquePrefix();
    // Passes back to back: each after the first costs what changed.
    const env = workerEnv(sim, tmp.dir, prefix, { RUNSYNC_SCHEDULE_RUNS: 'continuous' });
    const child = spawnCli(['worker', '--dashboard', '0'], env);
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (out += d));
    worker = {
      child,
      output: () => out,
      exited: new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))),
    };
    const line = await waitForLine(child, /^dashboard http:\/\/127\.0\.0\.1:\d+\//, 60_000);
    const base = (/^dashboard (http:\/\/127\.0\.0\.1:\d+)\//.exec(line) as RegExpExecArray)[1] as string;

    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<title>[^<]*Bull/i);

    let metrics = '';
    await eventually(
      async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return /runsync_passes_total\{kind="sync",status="ok"\} [1-9]/.test(metrics);
      },
      120_000,
      () => metrics,
    );
    expect(metrics).toMatch(/runsync_queue_jobs\{queue="write",state="waiting"\} \d+/);
    expect(metrics).toMatch(/runsync_api_requests_total\{status="200"\} [1-9]\d*/);
    expect(metrics).toMatch(/runsync_runs_loaded_total [1-9]\d*/);
    expect(metrics).toMatch(/runsync_lag_seconds \d/);
    expect(metrics).toMatch(/runsync_open_runs \d/);
    expect(metrics).toMatch(/runsync_rate_budget_burst\{scope="key"\} [1-9]\d*/);
    expect(metrics).toMatch(/runsync_rate_budget_window_seconds\{scope="key"\} [1-9]\d*/);
    expect(metrics).toMatch(/runsync_rate_budget_sustained_per_second\{scope="key"\} [1-9][\d.]*/);
    expect(metrics).toMatch(/runsync_rate_budget_others_per_second\{scope="key"\} [\d.]+/);
    expect(metrics).toMatch(/runsync_rate_budget_pace_per_second\{scope="key"\} [1-9][\d.]*/);
    expect(metrics).toMatch(/runsync_rate_budget_used_ratio (nan|[\d.]+)/i);
    // A first sync loads history, which says nothing of freshness; the passes after it do.
    expect(metrics).toMatch(/runsync_change_lag_seconds\{resource="runs",stage="warehouse",quantile="0.95"\} NaN/i);
    sim.advance('20m');
    await eventually(
      async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return /runsync_change_lag_seconds\{resource="runs",stage="warehouse",quantile="0.95"\} \d/.test(metrics);
      },
      60_000,
      () => metrics,
    );
    expect(metrics).toMatch(/runsync_change_lag_seconds\{resource="runs",stage="parquet",quantile="1"\} \d/);
    expect(metrics).toMatch(/runsync_change_lag_seconds\{resource="catalog",stage="parquet",quantile="1"\} (NaN|\d)/i);
    expect(metrics).toMatch(/runsync_horizon_verified_timestamp_seconds \d{10}/);
    await eventually(
      async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return /runsync_passes_total\{kind="sync",status="ok"\} ([4-9]|\d\d)/.test(metrics);
      },
      60_000,
      () => metrics,
    );
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
