import { describe, expect, it } from 'vitest';
import {
  type BudgetClock,
  type HeaderMap,
  initialBudgetState,
  learn,
  MemoryBudgetStore,
  readRateHeaders,
  SharedRateBudget,
  takeTurn,
} from '../../src/budget/index.ts';
import type { Slot } from '../../src/budget/turns.ts';

// The budget over a manual clock, one rule of docs/rate-budget.md at a time: who waits for whom,
// and what each response makes it believe, without depending on real time.

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

class ManualClock implements BudgetClock {
  private t = 1_800_000_000_000;
  private waiting: { at: number; resolve: () => void }[] = [];
  now(): number {
    return this.t;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const entry = { at: this.t + ms, resolve };
      this.waiting.push(entry);
      signal?.addEventListener('abort', () => {
        this.waiting = this.waiting.filter((w) => w !== entry);
        reject(signal.reason);
      });
    });
  }
  async advance(ms: number): Promise<void> {
    this.t += ms;
    const due = this.waiting.filter((w) => w.at <= this.t);
    this.waiting = this.waiting.filter((w) => w.at > this.t);
    for (const w of due) w.resolve();
    await flush();
  }
}

function tracked<T>(p: Promise<T>): { done: () => boolean; promise: Promise<T> } {
  let settled = false;
  const promise = p.finally(() => (settled = true));
  return { done: () => settled, promise };
}

/** A turn, the clock moved on in steps of 10 ms until it comes. */
async function take(clock: ManualClock, budget: SharedRateBudget, endpoint: string) {
  const turn = tracked(budget.acquire(endpoint));
  await flush();
  while (!turn.done()) await clock.advance(10);
  return turn.promise;
}

/** A runs-list page's figures: `limit`, `remaining`, Reset `resetIn` seconds after `clock`'s now. */
const figures = (clock: ManualClock, limit: number, remaining: number, resetIn = 1): HeaderMap => ({
  'x-ratelimit-limit': String(limit),
  'x-ratelimit-remaining': String(remaining),
  'x-ratelimit-reset': String(Math.ceil(clock.now() / 1000) + resetIn),
});

async function warm(clock: ManualClock, limit: number, o: { reserve?: number; ceiling?: number } = {}) {
  const budget = new SharedRateBudget({ clock, reserve: o.reserve ?? 0, ceilingPerSecond: o.ceiling ?? null });
  const grant = await budget.acquire('runs.list');
  await budget.observe('runs.list', 200, figures(clock, limit, limit - 1), grant);
  return budget;
}

const keyBucket = async (b: SharedRateBudget) => (await b.snapshot()).buckets.find((x) => x.scope === 'key');

describe('a cold budget', () => {
  it('sends one request alone until a response tells the limits', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock });
    const first = await budget.acquire('runs.list');
    const second = tracked(budget.acquire('runs.get'));
    await clock.advance(100);
    expect(second.done()).toBe(false);
    await budget.observe('runs.list', 200, figures(clock, 20, 19), first);
    // Paced after the first: a twentieth of a second (less the margin and reserve) past its slot.
    await clock.advance(100);
    await second.promise;
  });

  it('goes on unpaced when a runs-list page carries no figures, as a server without limits sends', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock });
    const first = await budget.acquire('runs.list');
    await budget.observe('runs.list', 200, {}, first);
    const grants = await Promise.all([1, 2, 3].map(() => budget.acquire('runs.get')));
    expect(grants.map((g) => g.at)).toEqual([clock.now(), clock.now(), clock.now()]);
    expect((await budget.snapshot()).ratePerSecond).toBeNull();
  });
});

describe('what the figures prove', () => {
  it('paces a margin below burst per window, less the reserve, and no faster than the ceiling', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20, { reserve: 0.1 });
    expect(await keyBucket(budget)).toMatchObject({ burst: 20, windowSeconds: 1, sustainedPerSecond: 20 });
    expect((await budget.snapshot()).ratePerSecond).toBeCloseTo(20 * 0.97 * 0.9, 6);
    const capped = await warm(new ManualClock(), 20, { reserve: 0.1, ceiling: 5 });
    expect((await capped.snapshot()).ratePerSecond).toBeCloseTo(5 * 0.9, 6);
  });

  it('spaces requests evenly at the pace, never in a burst', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 10);
    const t0 = clock.now();
    const pending = Promise.all([1, 2, 3, 4].map(() => budget.acquire('runs.get')));
    for (let i = 0; i < 10; i++) await clock.advance(100);
    const grants = await pending;
    const gaps = grants.slice(1).map((g, i) => g.at - (grants[i] as { at: number }).at);
    expect(grants[0]?.at).toBeGreaterThanOrEqual(t0);
    for (const gap of gaps) expect(gap).toBeCloseTo(1000 / (10 * 0.97), 3);
  });

  it('catches up a turn taken late, by no more than half the margin of a window', () => {
    const policy = { ceilingPerSecond: null, reserve: 0 };
    const t0 = 1_800_000_000_000;
    const list = takeTurn(initialBudgetState(), 'runs.list', t0, policy);
    const headers = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9', 'x-ratelimit-reset': '1800000001' };
    let s = learn(list.state, 'runs.list', 200, readRateHeaders(headers, t0), list.result as Slot, t0, policy);
    const at = (now: number) => {
      const t = takeTurn(s, 'runs.get', now, policy);
      s = t.state;
      return (t.result as Slot).at;
    };
    const gap = 1000 / (10 * 0.97);
    // Taken a while after the schedule, a turn lets the next catch up 15 ms (half the margin of a
    // 1 s window) and no more.
    const idle = at(t0 + 5_000);
    const due = at(idle);
    expect(due).toBeCloseTo(idle + gap - 15, 6);
    // Taken 10 ms late, the turn after keeps the schedule.
    expect(at(due + gap + 10)).toBe(due + gap + 10);
    expect(at(due + gap + 10)).toBeCloseTo(due + 2 * gap, 6);
  });

  it('reads the window from how far ahead Reset lies, rounded down to whole seconds, and keeps the longest', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    const g = await take(clock, budget, 'runs.list');
    await budget.observe('runs.list', 200, figures(clock, 20, 5, 3), g);
    expect(await keyBucket(budget)).toMatchObject({ windowSeconds: 3 });
    expect((await keyBucket(budget))?.sustainedPerSecond).toBeCloseTo(20 / 3, 6);
    // A full bucket's Reset is now: it proves nothing about the window's length.
    const again = await take(clock, budget, 'runs.list');
    await budget.observe('runs.list', 200, figures(clock, 20, 20, 0), again);
    expect(await keyBucket(budget)).toMatchObject({ windowSeconds: 3 });
  });

  it('counts every request of ours that went before a bucket was first heard of', () => {
    // Three workers start at once: three runs-list pages are out before the first figure comes.
    const policy = { ceilingPerSecond: null, reserve: 0 };
    const now = 1_800_000_000_000;
    let s = { ...initialBudgetState(), heard: true };
    const turns = [0, 1, 2].map(() => {
      const t = takeTurn(s, 'runs.list', now, policy);
      s = t.state;
      return t.result;
    });
    turns.forEach((turn, i) => {
      if ('wait' in turn) throw new Error('a turn was held');
      const headers = {
        'x-ratelimit-limit': '20',
        'x-ratelimit-remaining': String(19 - i),
        'x-ratelimit-reset': String(Math.ceil(now / 1000) + 1),
      };
      s = learn(s, 'runs.list', 200, readRateHeaders(headers, now + 30), turn, now + 30, policy);
    });
    expect(s.buckets['key:20']?.others).toBe(0);
  });

  it("reads others' use from Remaining lower than our own requests explain", async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    await clock.advance(200);
    // Of 20, two of ours in the last second, and 10 remaining: others took at least 8.
    const g = await take(clock, budget, 'runs.list');
    await budget.observe('runs.list', 200, figures(clock, 20, 10), g);
    expect((await keyBucket(budget))?.othersPerSecond).toBe(8);
    expect((await budget.snapshot()).ratePerSecond).toBeCloseTo(12 * 0.97, 6);
    // A fuller bucket later does not lower it: a full bucket hides others.
    await clock.advance(2000);
    const later = await take(clock, budget, 'runs.list');
    await budget.observe('runs.list', 200, figures(clock, 20, 19), later);
    expect((await keyBucket(budget))?.othersPerSecond).toBe(8);
  });
});

describe('a 429', () => {
  async function refused(clock: ManualClock, budget: SharedRateBudget, headers: HeaderMap) {
    const g = await take(clock, budget, 'runs.get');
    const answer = { 'retry-after': '2', ...headers };
    await budget.pause(2000, 'runs.get', answer);
    await budget.observe('runs.get', 429, answer, g);
    const probe = tracked(budget.acquire('runs.get'));
    const other = tracked(budget.acquire('tools.list'));
    await clock.advance(1900);
    expect([probe.done(), other.done()]).toEqual([false, false]);
    await clock.advance(200);
    // The first turn after the pause is a probe's, and the others wait for its figure.
    const grant = await probe.promise;
    expect(grant.probe).toBe(true);
    await clock.advance(100);
    expect(other.done()).toBe(false);
    return { grant, other };
  }

  it('holds every caller for its Retry-After; a probe that finds room changes nothing of the rate', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    const before = (await budget.snapshot()).ratePerSecond;
    const { grant, other } = await refused(clock, budget, figures(clock, 20, 0, 2));
    await budget.observe('runs.list', 200, figures(clock, 20, 19), grant);
    await clock.advance(60);
    await other.promise;
    expect((await budget.snapshot()).ratePerSecond).toBe(before);
    expect(await keyBucket(budget)).toMatchObject({ windowSeconds: 1, othersPerSecond: 0 });
    expect((await budget.snapshot()).pauses).toBe(1);
  });

  it('sends the next turn as the probe at once when the probe fails with a 5xx or no answer', async () => {
    for (const status of [503, 0]) {
      const clock = new ManualClock();
      const budget = await warm(clock, 20);
      const { grant, other } = await refused(clock, budget, figures(clock, 20, 0, 2));
      await budget.observe('runs.list', status, {}, grant);
      // Not the cold wait's two seconds: the waiting turn goes out at its next look, as the new probe.
      await clock.advance(60);
      expect(other.done()).toBe(true);
      expect((await other.promise).probe).toBe(true);
    }
  });

  it('without figures holds every caller too', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    const { grant, other } = await refused(clock, budget, {});
    await budget.observe('runs.list', 200, figures(clock, 20, 19), grant);
    await clock.advance(60);
    await other.promise;
  });

  it('halves the pace when the probe after the pause finds the bucket still near zero, then grows back', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    const { grant } = await refused(clock, budget, figures(clock, 20, 0));
    await budget.observe('runs.list', 200, figures(clock, 20, 1), grant);
    // Still near zero a whole window after: the factor halves. What the probe's figure shows of
    // others is not believed: it was read just after a 429, when a neighbour's burst is likeliest.
    const b = await keyBucket(budget);
    const target = ((b?.sustainedPerSecond ?? 0) - (b?.othersPerSecond ?? 0)) * 0.97;
    expect(b?.othersPerSecond).toBe(0);
    expect((await budget.snapshot()).ratePerSecond).toBeCloseTo(target / 2, 3);
    await clock.advance(3000);
    expect((await budget.snapshot()).ratePerSecond).toBeCloseTo(target * 0.8, 3);
    await clock.advance(3000);
    expect((await budget.snapshot()).ratePerSecond).toBeCloseTo(target, 3);
  });

  it("from a limit never seen is an endpoint's own bucket, pacing that endpoint alone", async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 100);
    const g = await take(clock, budget, 'runs.get');
    const answer = { 'retry-after': '1', ...figures(clock, 4, 0) };
    await budget.pause(1000, 'runs.get', answer);
    await budget.observe('runs.get', 429, answer, g);
    const paused = clock.now();
    const list = await take(clock, budget, 'runs.list');
    expect(list.at - paused).toBeLessThan(100);
    const detail = await take(clock, budget, 'runs.get');
    expect(detail.at - paused).toBeGreaterThanOrEqual(1000);
    expect((await budget.snapshot()).buckets).toContainEqual(
      expect.objectContaining({ scope: 'runs.get', burst: 4, sustainedPerSecond: 4 }),
    );
  });

  it("on a cold budget holds every caller, for it may be the key's own bucket", async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock, reserve: 0 });
    const g = await budget.acquire('runs.get');
    await clock.advance(30);
    const answer = { 'retry-after': '2', ...figures(clock, 100, 0, 2) };
    await budget.pause(2000, 'runs.get', answer);
    await budget.observe('runs.get', 429, answer, g);
    const paused = clock.now();
    const other = await take(clock, budget, 'tools.get');
    expect(other.at - paused).toBeGreaterThanOrEqual(2000);
  });
});

describe('the first figure', () => {
  it('paces the turns that went before it too: no window holds more than the burst', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock, reserve: 0 });
    const first = await budget.acquire('runs.list');
    await clock.advance(30);
    await budget.observe('runs.list', 200, figures(clock, 5, 4), first);
    const starts = [first.at ?? 0];
    for (let i = 0; i < 8; i++) starts.push((await take(clock, budget, 'runs.get')).at ?? 0);
    for (const t of starts) expect(starts.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(5);
  });
});

describe('SharedRateBudget', () => {
  it('shares its state through the store: two budgets over one store pace together', async () => {
    const clock = new ManualClock();
    const store = new MemoryBudgetStore();
    const a = new SharedRateBudget({ clock, store, ceilingPerSecond: 10, reserve: 0 });
    const b = new SharedRateBudget({ clock, store, ceilingPerSecond: 10, reserve: 0 });
    const g = await a.acquire('runs.list');
    await a.observe('runs.list', 200, figures(clock, 1000, 999), g);
    await take(clock, a, 'runs.get');
    const second = tracked(b.acquire('runs.get'));
    await flush();
    expect(second.done()).toBe(false);
    await clock.advance(100);
    await second.promise;
  });

  it('stops waiting when the caller aborts', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock });
    await budget.pause(10_000);
    const controller = new AbortController();
    const waiting = budget.acquire('runs.get', controller.signal);
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
  });

  it('counts what it granted per endpoint', async () => {
    const clock = new ManualClock();
    const budget = await warm(clock, 20);
    await take(clock, budget, 'runs.get');
    expect(await budget.snapshot()).toMatchObject({ limit: 20, granted: { 'runs.list': 1, 'runs.get': 1 } });
  });

  it('refuses a ceiling or reserve that makes no sense', () => {
    expect(() => new SharedRateBudget({ ceilingPerSecond: 0 })).toThrow(/ceiling/);
    expect(() => new SharedRateBudget({ reserve: 1 })).toThrow(/reserve/);
    expect(() => new SharedRateBudget({ reserve: -0.1 })).toThrow(/reserve/);
  });
});
