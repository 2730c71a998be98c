import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/error.ts';
import { workerSettings } from '../../src/worker/config.ts';

describe('worker settings', () => {
  it('has the documented defaults', () => {
    const s = workerSettings({}, '/w');
    expect(s).toMatchObject({
      prefix: 'runsync',
      schedules: { runs: '*/5 * * * *', catalog: '*/3 * * * *', reconcile: null },
      fetchConcurrency: 4,
      fetchChunk: 10,
      staging: { kind: 'folder', dir: '/w/staging' },
      graceMs: 25_000,
      passAtStart: true,
      takeoverMs: 60_000,
    });
  });

  it('reads the takeover as a duration and refuses one too short to keep a live job', () => {
    expect(workerSettings({ RUNSYNC_TAKEOVER_AFTER: '2m' }, '/w').takeoverMs).toBe(120_000);
    expect(workerSettings({ RUNSYNC_TAKEOVER_AFTER: '9s' }, '/w').takeoverMs).toBe(9_000);
    for (const bad of ['1s', 'soon', '0s']) {
      expect(() => workerSettings({ RUNSYNC_TAKEOVER_AFTER: bad }, '/w')).toThrow(ConfigError);
      expect(() => workerSettings({ RUNSYNC_TAKEOVER_AFTER: bad }, '/w')).toThrow(/RUNSYNC_TAKEOVER_AFTER/);
    }
  });

  it('refuses a schedule that is not a cron pattern and a prefix Redis keys should not hold', () => {
    expect(() => workerSettings({ RUNSYNC_SCHEDULE_RUNS: 'every minute' }, '/w')).toThrow(/RUNSYNC_SCHEDULE_RUNS/);
    expect(workerSettings({ RUNSYNC_SCHEDULE_RUNS: 'off' }, '/w').schedules.runs).toBeNull();
    expect(workerSettings({ RUNSYNC_SCHEDULE_RUNS: 'continuous' }, '/w').schedules.runs).toBe('continuous');
    expect(workerSettings({ RUNSYNC_SCHEDULE_RUNS: '*/10 * * * * *' }, '/w').schedules.runs).toBe('*/10 * * * * *');
    expect(() => workerSettings({ RUNSYNC_QUEUE_PREFIX: 'a b' }, '/w')).toThrow(/RUNSYNC_QUEUE_PREFIX/);
  });
});
