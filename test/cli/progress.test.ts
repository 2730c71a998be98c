import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payload, TerminalProgress } from '../../src/cli/progress-bar.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { ProgressTracker } from '../../src/sync/progress.ts';
import { runCli } from '../support/cli.ts';
import { Screen } from '../support/screen.ts';
import { startSim, tempDir } from '../sync/kit.ts';

// Progress during long work: lines in the logs at a steady interval (runs listed, details fetched
// of those to fetch, rate, ETA), and on a terminal a bar that log lines never cut into.

describe('progress', () => {
  it('on a terminal: a bar with a readable ETA, and log lines printed whole above it', async () => {
    const screen = new Screen();
    const terminal = new TerminalProgress(screen as unknown as NodeJS.WriteStream);
    let now = 0;
    const tracker = new ProgressTracker('sync', () => now);
    const stop = terminal.show(tracker);
    const logs = Array.from(
      { length: 12 },
      (_, i) => `{"level":"info","msg":"log line ${i}","detail":"${'x'.repeat(40)}"}`,
    );
    for (const [i, log] of logs.entries()) {
      // Listing, then fetching at 20 per second; the logger writes between redraws.
      if (i < 4) tracker.pageListed(100);
      if (i < 4) tracker.detailsAsked(100);
      now += 1000;
      tracker.detailsDone(20);
      terminal.logSink.write(`${log}\n`);
      await new Promise((r) => setTimeout(r, 60));
    }
    // The bar redraws on its own timer: wait for the redraw that shows the last counts.
    const want = /240\/400 details · 400 listed · 20\.0\/s · ETA 8 s/;
    const barLine = () => screen.text().find((l) => l.startsWith('sync [')) ?? '';
    for (let waited = 0; !want.test(barLine()) && waited < 10_000; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(barLine(), screen.text().join('\n')).toMatch(want);
    stop();
    const after = screen.text().filter((l) => l !== '');
    // Every log line whole, on a line of its own, in order; the bar gone once the work is done.
    expect(after).toEqual(logs);
  });

  it("on a terminal: anyone's write to stderr while the bar shows lands whole above it", async () => {
    const screen = new Screen();
    const terminal = new TerminalProgress(screen as unknown as NodeJS.WriteStream);
    const tracker = new ProgressTracker('sync');
    const stop = terminal.show(tracker);
    tracker.pageListed(100);
    tracker.detailsAsked(100);
    await new Promise((r) => setTimeout(r, 250));
    // As the notice of a stop is written: straight to stderr, not through the logger.
    screen.write('runsync: SIGINT received; stopping\n');
    await new Promise((r) => setTimeout(r, 250));
    tracker.detailsDone(50);
    await new Promise((r) => setTimeout(r, 450));
    const during = screen.text().filter((l) => l !== '');
    expect(during[0]).toBe('runsync: SIGINT received; stopping');
    expect(during[1]).toMatch(/^sync \[.*\] 50\/100 details/);
    stop();
    expect(screen.text().filter((l) => l !== '')).toEqual(['runsync: SIGINT received; stopping']);
    // Once the bar is gone, writes go straight to the terminal again.
    screen.write('after\n');
    expect(screen.text().filter((l) => l !== '')).toEqual(['runsync: SIGINT received; stopping', 'after']);
  });

  it('the bar counts slices from 1: the one under way, the last once all are done', () => {
    const at = (done: number) =>
      payload({
        what: 'backfill',
        elapsedMs: 1000,
        listed: 10,
        toFetch: 10,
        fetched: 5,
        listing: false,
        slices: { done, total: 3 },
        ratePerSecond: 5,
        etaMs: 2000,
      }).text;
    expect(at(0)).toContain('slice 1 of 3');
    expect(at(2)).toContain('slice 3 of 3');
    expect(at(3)).toContain('slice 3 of 3');
  });

  it('ETA: unknown while the only slice is being listed, from the slices done across several', () => {
    let now = 0;
    const t = new ProgressTracker('backfill', () => now);
    t.listingStarted();
    t.pageListed(100);
    t.detailsAsked(100);
    now = 2000;
    t.detailsDone(50);
    expect(t.snapshot()).toMatchObject({ listing: true, etaMs: null, ratePerSecond: 25 });
    t.setSlices(1, 4);
    now = 30_000;
    expect(t.snapshot().etaMs).toBe(90_000);
  });

  describe('in the logs', () => {
    let sim: Simulator;
    beforeAll(async () => {
      sim = await startSim({ seed: 93, size: 300, days: 3, rateLimit: { perKey: { limit: 60, windowSeconds: 1 } } });
    });
    afterAll(async () => {
      await sim?.close();
    });

    it('a line every RUNSYNC_PROGRESS_EVERY: runs listed, details fetched of those to fetch, rate, ETA', {
      timeout: 120_000,
    }, async () => {
      const tmp = tempDir();
      try {
        const r = await runCli(['sync'], {
          RUNSYNC_API_URL: sim.url,
          RUNSYNC_API_KEY: sim.key,
          RUNSYNC_WAREHOUSE_DIR: tmp.dir,
          RUNSYNC_PROGRESS_EVERY: '1s',
          LOG_LEVEL: 'info',
        });
        expect(r.code, r.stderr).toBe(0);
        const lines = r.stderr
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        const progress = lines.filter((l) => l.progress === 'sync');
        expect(progress.length, r.stderr.slice(-3000)).toBeGreaterThanOrEqual(3);
        for (const p of progress) {
          expect(p).toMatchObject({
            listed: expect.any(Number),
            toFetch: expect.any(Number),
            fetched: expect.any(Number),
          });
          expect(p.msg).toMatch(/^sync: [\d,]+ runs listed, [\d,]+ of [\d,]+ details fetched, /);
          expect(p.fetched as number).toBeLessThanOrEqual(p.toFetch as number);
        }
        // Steadily: a second apart, each further on than the last.
        const times = progress.map((p) => Date.parse(p.time as string));
        for (let i = 1; i < times.length; i++) {
          expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThan(800);
          expect((times[i] as number) - (times[i - 1] as number)).toBeLessThan(1600);
          expect(progress[i]?.fetched as number).toBeGreaterThanOrEqual(progress[i - 1]?.fetched as number);
        }
        expect(progress.some((p) => typeof p.ratePerSecond === 'number' && (p.ratePerSecond as number) > 0)).toBe(true);
        expect(progress.some((p) => typeof p.etaSeconds === 'number')).toBe(true);
        // No field of one line sticks to the next: the migrations logged at the first open stay there.
        const finished = lines.find((l) => l.msg === 'pass finished');
        expect(finished).toBeDefined();
        expect(finished).not.toHaveProperty('migration');
        expect(finished).not.toHaveProperty('migrations');
        // A new warehouse's migrations are one line, not one each.
        const migrations = lines.filter((l) => 'migration' in l || 'migrations' in l);
        expect(migrations).toHaveLength(1);
        expect(migrations[0]?.msg).toMatch(/^applied \d+ schema migrations and the ready-made views$/);
      } finally {
        tmp.cleanup();
      }
    });
  });
});
