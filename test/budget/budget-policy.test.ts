import { describe, expect, it } from 'vitest';
import {
  type BudgetPolicy,
  type BudgetState,
  initialBudgetState,
  learn,
  pacedRate,
  pauseUntil,
  readRateHeaders,
  reserveCount,
  takeEndpointSlot,
  takeSlot,
} from '../../src/budget/index.ts';

// The budget's decisions as pure functions: when the next request may start, what a response's
// headers teach, and how a window's allowance keeps a share for the key's other users.

const T0 = 1_800_000_000_000; // a whole second, as the API's windows are
const open: BudgetPolicy = { ceilingPerSecond: null, reserve: 0 };

/** Start times of n requests all asking at `at`, as concurrent callers would. */
function slots(state: BudgetState, policy: BudgetPolicy, n: number, at = T0): { times: number[]; state: BudgetState } {
  const times: number[] = [];
  let s = state;
  for (let i = 0; i < n; i++) {
    const r = takeSlot(s, at, policy);
    s = r.state;
    times.push(r.result.at - at);
  }
  return { times, state: s };
}

function observed(
  limit: number,
  remaining: number,
  resetIn: number,
  at = T0,
  limited = false,
  base = initialBudgetState(),
) {
  return learn(base, { limit, remaining, resetAtMs: at + resetIn, atMs: at }, limited);
}

describe('pacing', () => {
  it('lets requests through at once while nothing limits them', () => {
    expect(slots(initialBudgetState(), open, 5).times).toEqual([0, 0, 0, 0, 0]);
    expect(pacedRate(initialBudgetState(), open)).toBeNull();
  });

  it('spaces requests evenly under a ceiling, less the reserve', () => {
    expect(slots(initialBudgetState(), { ceilingPerSecond: 10, reserve: 0 }, 4).times).toEqual([0, 100, 200, 300]);
    expect(slots(initialBudgetState(), { ceilingPerSecond: 10, reserve: 0.2 }, 3).times).toEqual([0, 125, 250]);
  });

  it('paces to the learned limit per window, and to the ceiling when that is lower', () => {
    const s = observed(50, 50, 1000);
    expect(s.windowMs).toBe(1000);
    expect(pacedRate(s, { ceilingPerSecond: null, reserve: 0.05 })).toBeCloseTo(47.5);
    expect(pacedRate(s, { ceilingPerSecond: 20, reserve: 0.05 })).toBeCloseTo(19);
    const minute = observed(600, 600, 60_000);
    expect(pacedRate(minute, open)).toBeCloseTo(10);
  });

  it('never starts a request before a pause ends', () => {
    const paused = pauseUntil(initialBudgetState(), T0 + 2000);
    expect(slots(paused, open, 2).times).toEqual([2000, 2000]);
    expect(pauseUntil(paused, T0 + 500).pausedUntilMs).toBe(T0 + 2000);
  });
});

describe('the window counter', () => {
  it('spends what the server says is left, keeps the reserve, then waits for the reset', () => {
    const s = observed(10, 6, 1000);
    const policy = { ceilingPerSecond: null, reserve: 0.2 };
    expect(reserveCount(10, 0.2)).toBe(2);
    const { times } = slots(s, policy, 6);
    // 4 now-ish (paced at 8/s: 125 ms apart), then the window is spent down to its reserve.
    expect(times.slice(0, 4)).toEqual([0, 125, 250, 375]);
    expect(times.slice(4)).toEqual([1000, 1125]);
  });

  it('projects the next windows once it knows their length, each with a fresh allowance', () => {
    const s = observed(4, 0, 1000);
    const { times } = slots(s, open, 9);
    expect(times).toEqual([1000, 1250, 1500, 1750, 2000, 2250, 2500, 2750, 3000]);
  });

  it('tells each start which window counted it, so a caller woken too late can ask again', () => {
    const s = observed(4, 4, 1000);
    expect(takeSlot(s, T0, open).result).toEqual({ at: T0, countedUntil: T0 + 1000 });
    expect(takeSlot(initialBudgetState(), T0, open).result).toEqual({ at: T0, countedUntil: null });
  });

  it('always leaves at least one request per window, whatever the reserve', () => {
    expect(reserveCount(1, 0.5)).toBe(0);
    expect(reserveCount(3, 0.9)).toBe(2);
    const { times } = slots(observed(1, 1, 1000), { ceilingPerSecond: null, reserve: 0.5 }, 3);
    expect(times).toEqual([0, 2000, 4000]);
  });
});

describe('learning from headers', () => {
  it('reads X-RateLimit-Reset as a Unix time, a delta in seconds, or milliseconds', () => {
    const at = T0 + 250;
    expect(readRateHeaders({ 'x-ratelimit-reset': String(T0 / 1000 + 3) }, at)?.resetAtMs).toBe(T0 + 3000);
    expect(readRateHeaders({ 'x-ratelimit-reset': '3' }, at)?.resetAtMs).toBe(at + 3000);
    expect(readRateHeaders({ 'x-ratelimit-reset': String(T0 + 3000) }, at)?.resetAtMs).toBe(T0 + 3000);
    expect(readRateHeaders({ 'x-ratelimit-limit': '50', 'x-ratelimit-remaining': '7' }, at)).toMatchObject({
      limit: 50,
      remaining: 7,
      resetAtMs: null,
    });
    expect(readRateHeaders({ 'content-type': 'application/json' }, at)).toBeNull();
    expect(readRateHeaders({ 'x-ratelimit-limit': 'lots' }, at)).toBeNull();
  });

  it('takes the window length from successes, and from a 429 only until a success says better', () => {
    const hinted = observed(10, 0, 2000, T0, true);
    expect(hinted).toMatchObject({ windowMs: null, windowHintMs: 2000 });
    expect(pacedRate(hinted, open)).toBeCloseTo(5);
    const told = learn(hinted, { limit: 10, remaining: 9, resetAtMs: T0 + 3000, atMs: T0 + 2100 }, false);
    expect(told.windowMs).toBe(1000);
    expect(pacedRate(told, open)).toBeCloseTo(10);
  });

  it('adopts a lower remaining in the same window (others use the key) and ignores a higher or stale one', () => {
    let s = observed(20, 15, 1000);
    s = takeSlot(s, T0, open).state; // we think 14 are left
    const lower = learn(s, { limit: 20, remaining: 5, resetAtMs: T0 + 1000, atMs: T0 + 10 }, false);
    expect(lower).toMatchObject({ remaining: 5, grantedInWindow: 0 });
    const higher = learn(s, { limit: 20, remaining: 18, resetAtMs: T0 + 1000, atMs: T0 + 10 }, false);
    expect(higher).toMatchObject({ remaining: 15, grantedInWindow: 1 });
    const stale = learn(s, { limit: 20, remaining: 0, resetAtMs: T0 - 1000, atMs: T0 + 10 }, false);
    expect(stale).toMatchObject({ remaining: 15, resetAtMs: T0 + 1000 });
  });

  it('starts over when the limit changes (another bucket is now the tightest)', () => {
    const s = observed(50, 10, 1000);
    const other = learn(s, { limit: 5, remaining: 4, resetAtMs: T0 + 1000, atMs: T0 + 10 }, false);
    expect(other).toMatchObject({ limit: 5, remaining: 4, windowMs: 1000 });
    expect(pacedRate(other, open)).toBeCloseTo(5);
  });
});

describe('an endpoint with a bucket of its own', () => {
  const key = observed(50, 50, 1000);
  const tight = learn(key, { limit: 4, remaining: 0, resetAtMs: T0 + 600, atMs: T0 }, true, 'runs.get');

  it("takes a limit below the key's, reported on one endpoint, for that endpoint alone", () => {
    expect(tight).toMatchObject({
      limit: 50,
      remaining: 50,
      windowMs: 1000,
      endpoints: { 'runs.get': { limit: 4, windowMs: 1000 } },
    });
    expect(pacedRate(tight, open)).toBeCloseTo(50);
  });

  it('keeps both when the endpoints answer in turn, instead of swinging between them', () => {
    let s = learn(tight, { limit: 50, remaining: 45, resetAtMs: T0 + 1000, atMs: T0 + 5 }, false, 'runs.list');
    s = learn(s, { limit: 4, remaining: 2, resetAtMs: T0 + 1000, atMs: T0 + 6 }, false, 'runs.get');
    s = learn(s, { limit: 50, remaining: 44, resetAtMs: T0 + 1000, atMs: T0 + 7 }, false, 'runs.list');
    expect(s).toMatchObject({ limit: 50, remaining: 44, endpoints: { 'runs.get': { limit: 4 } } });
  });

  it("paces that endpoint to its own limit and leaves the others to the key's pace", () => {
    const times: (number | null)[] = [];
    let s = tight;
    for (let i = 0; i < 3; i++) {
      const r = takeEndpointSlot(s, 'runs.get', T0, open);
      s = r.state;
      times.push(r.result === null ? null : r.result.at - T0);
    }
    expect(times).toEqual([0, 250, 500]);
    expect(takeEndpointSlot(s, 'runs.list', T0, open).result).toBeNull();
    expect(takeEndpointSlot(pauseUntil(tight, T0 + 2000), 'runs.get', T0, open).result).toEqual({
      at: T0 + 2000,
      pausedUntilMs: T0 + 2000,
    });
    // The reserve applies to it as well: 4 a second less 20% is one request every 312.5 ms.
    expect(
      takeEndpointSlot(
        takeEndpointSlot(tight, 'runs.get', T0, { ceilingPerSecond: null, reserve: 0.2 }).state,
        'runs.get',
        T0,
        open,
      ).result?.at,
    ).toBe(T0 + 312.5);
  });
});
