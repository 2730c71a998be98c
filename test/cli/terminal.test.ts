import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { hasScript, runInTerminal } from '../support/terminal.ts';
import { startSim, tempDir } from '../sync/kit.ts';
import { eventually } from '../worker/kit.ts';

// What a person at a terminal sees: each log line on one line, a new warehouse's migrations as one
// line, the progress bar instead of progress lines, a refused key said once, and Ctrl-C answered
// by the summary once and one line saying it stopped.

const why = hasScript ? '' : ' (skipped: no `script` to give the command a terminal)';
const LOG_LINE = /^\[\d\d:\d\d:\d\d\] (INFO|WARN|ERROR|DEBUG): /;

describe(`on a terminal${why}`, () => {
  let sim: Simulator;
  beforeAll(async () => {
    if (!hasScript) return;
    sim = await startSim({ seed: 61, size: 600, days: 4, rateLimit: { perKey: { limit: 40, windowSeconds: 1 } } });
  });
  afterAll(async () => {
    await sim?.close();
  });
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    RUNSYNC_PROGRESS_EVERY: '1s',
    ...extra,
  });

  it.skipIf(!hasScript)(
    'a first sync: one line a log, one for the migrations, the bar and no progress lines',
    {
      timeout: 150_000,
    },
    async () => {
      const tmp = tempDir();
      try {
        const t = runInTerminal(['sync'], env(tmp.dir));
        expect(await t.exited, t.screen().join('\n')).toBe(0);
        const screen = t.screen().filter((l) => l !== '');
        const text = screen.join('\n');
        expect(
          screen.filter((l) => /schema migration/.test(l)),
          text,
        ).toHaveLength(1);
        // A log line is one line: no field of it on the lines after.
        expect(text).not.toMatch(/^\s+(passId|migration|status|runs):/m);
        expect(
          screen.filter((l) => /details fetched/.test(l)),
          text,
        ).toEqual([]);
        expect(
          screen.filter((l) => l.startsWith('pass ')),
          text,
        ).toHaveLength(1);
        // The bar is gone once the work is done.
        expect(
          screen.some((l) => /^sync \[/.test(l)),
          text,
        ).toBe(false);
      } finally {
        tmp.cleanup();
      }
    },
  );

  it.skipIf(!hasScript)('a refused key is said once', { timeout: 60_000 }, async () => {
    const tmp = tempDir();
    try {
      const t = runInTerminal(['sync'], env(tmp.dir, { RUNSYNC_API_KEY: 'svc_live_not_the_key' }));
      expect(await t.exited).toBe(1);
      const text = t.screen().join('\n');
      expect(text.match(/refused the key/g), text).toHaveLength(1);
      expect(text).toMatch(
        /^runsync: the API refused the key in RUNSYNC_API_KEY \(HTTP 401 unauthenticated: .*\); correct it/m,
      );
    } finally {
      tmp.cleanup();
    }
  });

  it.skipIf(!hasScript)('Ctrl-C: the summary once and one line saying it stopped', { timeout: 150_000 }, async () => {
    const tmp = tempDir();
    try {
      const t = runInTerminal(['sync'], env(tmp.dir));
      await eventually(
        async () => t.screen().some((l) => /^sync \[.*\] [1-9]\d*\/\d+ details/.test(l)),
        60_000,
        () => t.screen().join('\n'),
      );
      t.interrupt();
      await t.exited;
      const screen = t.screen().filter((l) => l !== '');
      const text = screen.join('\n');
      expect(
        screen.filter((l) => /^pass \S+ \(sync\): interrupted/.test(l)),
        text,
      ).toHaveLength(1);
      expect(
        screen.filter((l) => l.startsWith('runsync: stopped;')),
        text,
      ).toEqual(['runsync: stopped; the next pass resumes where this one stopped']);
      expect(text).not.toMatch(/ERROR|WARN/);
      // Said once beside the log's own closing line: no block of the pass's figures, no repeat.
      const said = screen.filter((l) => !LOG_LINE.test(l)).join('\n');
      expect(said.match(/interrupted/g), text).toHaveLength(1);
      expect(
        screen.filter((l) => LOG_LINE.test(l) && /pass finished/.test(l)),
        text,
      ).toHaveLength(1);
      // Nothing was written into the bar's line: every line is a log line, the summary or runsync's own.
      for (const l of screen) expect(l, text).toMatch(new RegExp(`${LOG_LINE.source}|^pass |^  \\S|^runsync: `));
    } finally {
      tmp.cleanup();
    }
  });
});
