import { describe, expect, it } from 'vitest';
import { logAnswered, logLate, logStart, oursAt, spanBounds } from '../../src/budget/sent-log.ts';
import type { SentEntry } from '../../src/budget/types.ts';

// Our own starts, as a sliding log is paced by them: each must stay in the log until the server
// has surely let it go, or the next turn a span on is refused. Times are ms from a whole second.

const T0 = 1_800_000_000_000;
const SPAN = 1000;

describe('the starts log', () => {
  it('moves a late start itself, not a later one that went out on time', () => {
    // Two turns 4 ms apart; the first went out 10 ms late. Moving the second instead left the
    // first at its planned time, to leave the log 10 ms before the server let it go.
    const log: SentEntry[] = [
      [T0 + 100, 1],
      [T0 + 104, 1],
    ];
    expect(logLate(log, T0 + 100, T0 + 110)).toEqual([
      [T0 + 104, 1],
      [T0 + 110, 1],
    ]);
  });

  it('keeps a start answered slower than the slack allows until its answer says it has left', () => {
    // The answer came 63 ms after the start, the quickest lately 21 ms: the server may have
    // counted it 42 ms after its start (a busy process, with the server beside it), more than the
    // slack read from the figures' round trips allows anyone. Kept in its class and capped at the
    // slack, it left the log 6 ms before the server let it go, and the turn a span on was refused.
    const lag = { slack: 36, quickest: 21 };
    const log = logAnswered(logStart(undefined, T0, SPAN, T0), T0, 63, 23, lag);
    expect(oursAt(log, T0 + SPAN + 42, SPAN, lag)).toBe(1);
    expect(oursAt(log, T0 + SPAN + 49, SPAN, lag)).toBe(0);
  });

  it("reads a volley's first figure against the volley it went out in", () => {
    // A volley of 20 a span ago, left by now, and one of 20 going out over 5 ms, joined in one
    // entry: the figure answering its first request counted that one alone. Read against the
    // entry before, as if the volley were older than the figure's start, it put the span at two
    // seconds or more, and a log learned at one second was learned again.
    const log: SentEntry[] = [
      [T0 + 5, 20, T0],
      [T0 + 1008, 20, T0 + 1003],
    ];
    const b = spanBounds(log, { startedAtMs: T0 + 1003, held: 1, resetAtMs: T0 + 3000, tolMs: 8, latencyMs: 20 }, SPAN);
    expect(b).not.toBeNull();
    expect(b?.lo).toBeLessThanOrEqual(SPAN);
    expect(b?.hi).toBeGreaterThanOrEqual(SPAN);
  });
});
