import { describe, expect, it } from 'vitest';
import { dueOpenRuns, RECHECK_FAST, RECHECK_SHARE } from '../../src/sync/open-due.ts';
import { changeRate, type HazardStats, observe, quietBucket } from '../../src/sync/open-hazard.ts';
import { MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_SECOND, type Micros } from '../../src/util/timestamp.ts';

// Which open runs get the fast lane, once the looks have shown which kinds of open run change.

const SEC = MICROS_PER_SECOND;
const now = 1_000_000 * SEC;

describe('how likely an open run is to change', () => {
  it('starts from the assumption that a run quiet for q changes about once in q', () => {
    const stats: HazardStats = {};
    const hour = changeRate(stats, 'paused', MICROS_PER_HOUR as Micros);
    const day = changeRate(stats, 'paused', MICROS_PER_DAY as Micros);
    expect(hour * 3600).toBeCloseTo(1, 5);
    expect(day).toBeLessThan(hour);
  });

  it('follows what the looks found: a kind watched for long without a change falls behind', () => {
    const stats: HazardStats = {};
    const day = MICROS_PER_DAY as Micros;
    // Paused runs quiet for a day, watched for 500 days in all: no change.
    for (let i = 0; i < 1000; i++) observe(stats, 'paused', day, (day / 2) as Micros, false);
    // Approvals quiet for a day: one change in every ten looks of an hour.
    for (let i = 0; i < 1000; i++) observe(stats, 'paused+approval', day, MICROS_PER_HOUR as Micros, i % 10 === 0);
    const paused = changeRate(stats, 'paused', day);
    const approval = changeRate(stats, 'paused+approval', day);
    expect(approval).toBeGreaterThan(50 * paused);
    expect(approval * 3600).toBeCloseTo(0.1, 1);
    // Another quiet bucket of the same kind keeps its own figures.
    expect(changeRate(stats, 'paused', MICROS_PER_HOUR as Micros) * 3600).toBeCloseTo(1, 5);
  });

  it('halves old figures once a cell has seen enough changes, so newer behaviour counts', () => {
    const stats: HazardStats = {};
    const q = MICROS_PER_HOUR as Micros;
    for (let i = 0; i < 2001; i++) observe(stats, 'running', q, (10 * SEC) as Micros, true);
    const cell = stats[`running/${quietBucket(q)}`];
    expect(cell?.changes).toBeLessThan(1500);
    expect((cell?.changes ?? 0) / (cell?.watched ?? 1)).toBeCloseTo(0.1, 3);
  });

  it('gives the fast lane to the kinds that change, quieter or not', () => {
    const stats: HazardStats = {};
    const day = MICROS_PER_DAY as Micros;
    for (let i = 0; i < 1000; i++) observe(stats, 'paused', (day / 4) as Micros, (day / 2) as Micros, false);
    for (let i = 0; i < 1000; i++) observe(stats, 'paused+approval', day, MICROS_PER_HOUR as Micros, i % 10 === 0);
    const rate = 10;
    const fit = Math.floor((RECHECK_SHARE * rate * 80 * RECHECK_FAST) / MICROS_PER_SECOND);
    const run = (kind: string, quiet: number, i: number) => ({
      id: `${kind}-${i}`,
      kind,
      updatedAt: now - RECHECK_FAST - quiet,
      lastCheckedAt: now - RECHECK_FAST,
      scheduledResumeAt: null,
    });
    const idle = Array.from({ length: fit }, (_, i) => run('paused', day / 4, i));
    const approvals = Array.from({ length: fit / 2 }, (_, i) => run('paused+approval', day, i));
    const likely = (r: { kind: string }, quiet: Micros) => changeRate(stats, r.kind, quiet);
    const due = dueOpenRuns([...idle, ...approvals], now as Micros, rate, likely);
    expect(due.filter((r) => r.kind === 'paused+approval')).toHaveLength(approvals.length);
    expect(due.filter((r) => r.kind === 'paused').length).toBeLessThan(fit / 2 + 10);
    // By quiet alone, the paused runs (a quarter of a day quiet) would have come first.
    const byQuiet = dueOpenRuns([...idle, ...approvals], now as Micros, rate);
    expect(byQuiet.filter((r) => r.kind === 'paused').length).toBeGreaterThanOrEqual(fit - 1);
    expect(byQuiet.filter((r) => r.kind === 'paused+approval').length).toBeLessThan(5);
  });
});
