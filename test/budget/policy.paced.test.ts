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
  type Slot,
  takeSlot,
} from '../../src/budget/index.ts';
import { unsent } from '../../src/budget/policy.ts';

// The budget's decisions as pure functions: when the next request may start, what a response's
// headers teach, and how a share is kept for the key's other users.

const T0 = 1_800_000_000_000; // a whole second, as the API's windows are
const open: BudgetPolicy = { ceilingPerSecond: null, reserve: 0 };

interface Taken {
  times: number[];
  state: BudgetState;
}

/** Start times of n requests to `endpoint` all asking at `at`, as concurrent callers would. */
function slots(state: BudgetState, policy: BudgetPolicy, n: number, at = T0, endpoint = 'runs.get'): Taken {
  const times: number[] = [];
  let s = state;
  for (let i = 0; i < n; i++) {
    const r = takeSlot(s, endpoint, at, policy);
    if ('wait' in r.result) throw new Error('no turn given');
    s = r.state;
    times.push(r.result.at - at);
  }
  return { times, state: s };
}

/** A figure of a runs-list page answering the newest grant. */
function figure(s: BudgetState, limit: number, remaining: number, resetIn: number, at = T0, limited = false) {
  const endpoint = limited ? 'runs.get' : 'runs.list';
  const grant = { seq: s.seq, endpointSeq: s.seqByEndpoint[endpoint] ?? 0 };
  return learn(s, { limit, remaining, resetAtMs: at + resetIn, atMs: at }, limited, endpoint, grant, open);
}

/** A state after one list request has been granted, so figures have a request to answer. */
function started(): BudgetState {
  return slots(initialBudgetState(), open, 1, T0, 'runs.list').state;
}

describe('pacing', () => {
  it('sends one request alone until a response tells the limits', () => {
    const first = takeSlot(initialBudgetState(), 'runs.get', T0, open);
    expect(first.result).toMatchObject({ at: T0, probe: false });
    const second = takeSlot(first.state, 'runs.get', T0 + 10, open);
    expect(second.result).toEqual({ wait: T0 + 60 });
    // Some servers never send the headers: after a moment requests go ahead without them.
    const later = takeSlot(first.state, 'runs.get', T0 + 2500, open);
    expect(later.result).toMatchObject({ at: T0 + 2500 });
  });

  it('lets one runs-list page go beside a first request whose answer cannot tell the limits', () => {
    const catalog = takeSlot(initialBudgetState(), 'tools.list', T0, open);
    const list = takeSlot(catalog.state, 'runs.list', T0 + 5, open);
    expect(list.result).toMatchObject({ at: T0 + 5 });
    // One page is enough to ask: the rest wait for its answer as before.
    expect(takeSlot(list.state, 'runs.list', T0 + 10, open).result).toEqual({ wait: T0 + 60 });
    expect(takeSlot(list.state, 'runs.get', T0 + 10, open).result).toEqual({ wait: T0 + 60 });
    // A page whose turn was given up (woken late) leaves the next one to ask.
    const retried = takeSlot(unsent(list.state, 'runs.list', list.result as Slot), 'runs.list', T0 + 10, open);
    expect(retried.result).toMatchObject({ at: T0 + 10 });
    // A first request that was a runs-list page leaves no second one to go.
    const first = takeSlot(initialBudgetState(), 'runs.list', T0, open);
    expect(takeSlot(first.state, 'runs.list', T0 + 5, open).result).toEqual({ wait: T0 + 55 });
  });

  it('spaces requests evenly under a ceiling, less the reserve', () => {
    const s = figure(started(), 1000, 1000, 1000);
    expect(slots(s, { ceilingPerSecond: 10, reserve: 0 }, 4).times).toEqual([0, 100, 200, 300]);
    expect(slots(s, { ceilingPerSecond: 10, reserve: 0.2 }, 3).times).toEqual([0, 125, 250]);
    expect(pacedRate(s, { ceilingPerSecond: 20, reserve: 0.05 })).toBeCloseTo(19);
  });

  it('never starts a request before a pause ends', () => {
    const s = figure(started(), 1000, 1000, 1000);
    const paused = pauseUntil(s, T0 + 2000);
    expect(slots(paused, open, 2).times).toEqual([2000, 2000]);
    expect(pauseUntil(paused, T0 + 500).pausedUntilMs).toBe(T0 + 2000);
  });
});

describe('room', () => {
  it('spends what the server says is left, keeping the reserve, and waits for the rest', () => {
    const s = figure(started(), 10, 6, 1000);
    const policy = { ceilingPerSecond: null, reserve: 0.2 };
    expect(reserveCount(10, 0.2)).toBe(2);
    const { times } = slots(s, policy, 5);
    expect(times.slice(0, 4)).toEqual([0, 0, 0, 0]);
    // Nothing is known of how room comes back but the Reset: the fifth waits at least until it.
    expect(times[4]).toBeGreaterThanOrEqual(1000);
  });

  it('learns a bucket from Reset moving before it passes, and the rate from how much came back', () => {
    // A token bucket of 20 refilled at 10/s, Reset meaning "full again at": each second we send
    // 10, 10 come back, and the figures stay at 2 left, full again 1.8 s on.
    let s = figure(started(), 20, 2, 1800);
    for (let i = 1; i <= 4; i++) {
      s = slots(s, open, 10, T0 + i * 1000).state;
      s = figure(s, 20, 2, 1800, T0 + i * 1000);
    }
    const bucket = Object.values(s.buckets)[0];
    expect(bucket).toMatchObject({ guess: 'bucket', measured: true });
    expect(bucket?.rate).toBeCloseTo(10, 5);
    // Credited at that rate: past what is left, requests come 100 ms apart.
    const { times } = slots(s, open, 6, T0 + 4000);
    expect(times.slice(3).map((t, i) => t - (times[i + 2] as number))).toEqual([100, 100, 100]);
  });

  it('does not send a whole bucket at once when it reads full again by refill alone', () => {
    // The same bucket, spent to its last request and left alone for 2 s: full again by its refill.
    // Our requests are counted as much earlier or later after their starts as round trips vary,
    // so a volley sent the moment it reads full may find it a fraction of a request short.
    let s = figure(started(), 20, 2, 1800);
    for (let i = 1; i <= 4; i++) {
      s = slots(s, open, 10, T0 + i * 1000).state;
      s = figure(s, 20, 2, 1800, T0 + i * 1000);
    }
    s = slots(s, open, 2, T0 + 4000).state;
    const { times } = slots(s, open, 20, T0 + 6000);
    expect(times.slice(0, 19).every((t) => t === 0)).toBe(true);
    expect(times[19]).toBeGreaterThan(0);
  });

  it('does not halve the rate for a first figure whose Reset was rounded up past a second', () => {
    // A bucket of 20 a second whose Reset means "full again at", sent in whole seconds rounded up:
    // a response 30 ms after a second began says full again 1.97 s on, not 0.05 s.
    const s = figure(started(), 20, 19, 1970, T0 + 30);
    expect(Object.values(s.buckets)[0]?.rate).toBe(20);
    expect(pacedRate(s, open)).toBe(20);
  });

  it('holds every caller on a 429 from a bucket all requests draw on, and only its own on one of its own', () => {
    let s = figure(started(), 100, 50, 1000);
    s = figure(s, 5, 0, 1000, T0 + 10, true); // a limit no list page reported: the detail endpoint's own
    const own = Object.values(s.buckets).find((b) => b.endpoint === 'runs.get');
    expect(own?.limit).toBe(5);
    s = pauseUntil(s, T0 + 1000, 'runs.get');
    expect(slots(s, open, 1, T0 + 20, 'runs.get').times[0]).toBeGreaterThanOrEqual(980);
    expect(slots(s, open, 1, T0 + 20, 'runs.list').times[0]).toBe(0);
  });

  it('gives a window no more than its limit when callers keep asking before it begins', () => {
    // A window of 10 a second, spent: callers asking during its last moments are given turns in
    // the windows after it, and callers asking later, while those windows run, are queued behind
    // them: no window gets more than 10, however many ask and whenever.
    let s = figure(started(), 10, 0, 1000);
    const starts: number[] = [];
    for (let i = 0; i < 45; i++) {
      const r = takeSlot(s, 'runs.get', i < 25 ? T0 + 900 + i : T0 + 1500 + i, open);
      if ('wait' in r.result) throw new Error('no turn given');
      s = r.state;
      starts.push(r.result.at);
    }
    const perWindow = (k: number) => starts.filter((t) => t >= T0 + k * 1000 && t < T0 + (k + 1) * 1000).length;
    expect(perWindow(0)).toBe(0);
    expect(perWindow(1)).toBe(10);
    expect(perWindow(2)).toBe(10);
    expect(perWindow(3)).toBe(10);
    expect(perWindow(4)).toBe(10);
  });
});

describe('reading the headers', () => {
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

  it('always leaves at least one request of a bucket to spend, whatever the reserve', () => {
    expect(reserveCount(1, 0.5)).toBe(0);
    expect(reserveCount(3, 0.9)).toBe(2);
  });
});
