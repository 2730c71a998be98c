import { describe, expect, it } from 'vitest';
import { createLogger, withLogFields } from '../../src/util/logger.ts';

// Fields given to one log line stay on that line: the fields every line of a pass carries
// (withLogFields) are not a place where a line's own fields (a migration's name, the pid holding
// the warehouse) are kept for the lines after it.

describe('logger', () => {
  it("a line's own fields do not stick to later lines of the same context", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    await withLogFields({ passId: 'p1' }, async () => {
      logger.info({ migration: '0007_views.sql' }, 'applied schema migration');
      await withLogFields({ backfill: 'b1' }, async () => {
        logger.warn({ holderPid: 42 }, 'the warehouse is held by another process; waiting for it');
        await new Promise((r) => setTimeout(r, 5));
        logger.info('backfill progress');
      });
      logger.child({ job: 'runs-pass' }).info('pass finished');
    });
    expect(lines.map(({ time: _t, level: _l, ...rest }) => rest)).toEqual([
      { passId: 'p1', migration: '0007_views.sql', msg: 'applied schema migration' },
      { passId: 'p1', backfill: 'b1', holderPid: 42, msg: 'the warehouse is held by another process; waiting for it' },
      { passId: 'p1', backfill: 'b1', msg: 'backfill progress' },
      { passId: 'p1', job: 'runs-pass', msg: 'pass finished' },
    ]);
  });

  it('on a terminal: one line a log; fields only for warnings and errors, and no secret', () => {
    const out: string[] = [];
    const key = 'svc_live_terminal_secret_123';
    const logger = createLogger({
      pretty: true,
      color: false,
      secrets: [key],
      destination: { write: (l: string) => out.push(l) },
    });
    logger.info({ migrations: ['0001.sql', '0002.sql'], passId: 'p' }, 'applied 2 schema migrations');
    logger.warn({ err: new Error(`refused ${key}`), downForS: 3 }, 'redis is unreachable');
    const text = out.join('');
    expect(text.trimEnd().split('\n')).toHaveLength(2);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: applied 2 schema migrations\n/);
    expect(text).toMatch(/WARN: redis is unreachable: refused \[REDACTED\] \(downForS=3\)\n$/);
  });

  it('times are ISO 8601 in UTC in a line, not microseconds since 1970; small numbers stay numbers', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    const from = Date.UTC(2026, 10, 1, 22, 48, 27) * 1000 + 870867;
    await withLogFields({ passId: 'p' }, async () => {
      logger.info(
        { from, to: from + 3_600_000_000, at: 0, slices: 3, listedAt: from, durationMs: 1500 },
        'backfill started',
      );
    });
    expect(lines[0]).toMatchObject({
      from: '2026-11-01T22:48:27.870867Z',
      to: '2026-11-01T23:48:27.870867Z',
      listedAt: '2026-11-01T22:48:27.870867Z',
      at: 0,
      slices: 3,
      durationMs: 1500,
      passId: 'p',
    });
    expect(String(lines[0]?.time)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
