import { describe, expect, it } from 'vitest';
import {
  type BudgetClock,
  type BudgetState,
  type BudgetStore,
  MemoryBudgetStore,
  SharedRateBudget,
} from '../../src/budget/index.ts';

// The budget object over a manual clock: who waits for whom, without depending on real time.

/** Lets every pending promise chain run to its next real wait. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

class ManualClock implements BudgetClock {
  private t = 1_800_000_000_000;
  private waiting: { at: number; resolve: () => void; reject: (e: unknown) => void }[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const entry = { at: this.t + ms, resolve, reject };
      this.waiting.push(entry);
      signal?.addEventListener('abort', () => {
        this.waiting = this.waiting.filter((w) => w !== entry);
        reject(signal.reason);
      });
    });
  }

  /** Moves time on and lets every sleeper whose time has come continue. */
  async advance(ms: number): Promise<void> {
    this.t += ms;
    const due = this.waiting.filter((w) => w.at <= this.t);
    this.waiting = this.waiting.filter((w) => w.at > this.t);
    for (const w of due) w.resolve();
    await flush();
  }
}

/**
 * A shared store whose updates come back `ms` after they were applied, when set: a busy process,
 * or a store far away or queued behind other callers. Reads come back at once.
 */
class SlowStore implements BudgetStore {
  readonly memory = new MemoryBudgetStore();
  ms = 0;
  constructor(private readonly clock: ManualClock) {}
  read(): Promise<BudgetState> {
    return this.memory.read();
  }
  async update<R>(step: (state: BudgetState) => { state: BudgetState; result: R }): Promise<R> {
    const result = await this.memory.update(step);
    if (this.ms > 0) await this.clock.sleep(this.ms);
    return result;
  }
}

/** Our starts the shared state logs, as ms from `t0`. */
async function loggedStarts(store: BudgetStore, t0: number): Promise<number[]> {
  const s = await store.read();
  return (Object.values(s.buckets)[0]?.sent ?? []).flatMap(([at, count]) => Array<number>(count).fill(at - t0));
}

function tracked(p: Promise<unknown>): { done: () => boolean; promise: Promise<unknown> } {
  let settled = false;
  const promise = p.finally(() => (settled = true));
  return { done: () => settled, promise };
}

describe('SharedRateBudget', () => {
  it('holds every caller for a 429 another caller received', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock });
    await budget.acquire('runs.get');
    // A 429 without rate-limit headers: only the pause can hold the others.
    await budget.observe('runs.get', 429, { 'retry-after': '2' });
    await budget.pause(2000);
    const others = [tracked(budget.acquire('runs.get')), tracked(budget.acquire('tools.list'))];
    await flush();
    await clock.advance(1500);
    expect(others.map((o) => o.done())).toEqual([false, false]);
    await clock.advance(600);
    await Promise.all(others.map((o) => o.promise));
    expect((await budget.snapshot()).pauses).toBe(1);
  });

  it('shares its state through the store: two budgets over one store pace together', async () => {
    const clock = new ManualClock();
    const store = new MemoryBudgetStore();
    const a = new SharedRateBudget({ clock, store, ceilingPerSecond: 10, reserve: 0 });
    const b = new SharedRateBudget({ clock, store, ceilingPerSecond: 10, reserve: 0 });
    const roomy = { 'x-ratelimit-limit': '1000', 'x-ratelimit-remaining': '1000' };
    await a.observe('runs.list', 200, { ...roomy, 'x-ratelimit-reset': String(clock.now() / 1000 + 1) });
    await a.acquire('runs.get');
    const second = tracked(b.acquire('runs.get'));
    await flush();
    expect(second.done()).toBe(false);
    await clock.advance(100);
    await second.promise;
    await a.pause(5000);
    const third = tracked(b.acquire('runs.list'));
    await flush();
    await clock.advance(4000);
    expect(third.done()).toBe(false);
    await clock.advance(1000);
    await third.promise;
  });

  it('sends one request alone until a response tells the limits', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock });
    await budget.acquire('runs.list');
    const second = tracked(budget.acquire('runs.get'));
    await clock.advance(100);
    expect(second.done()).toBe(false);
    await budget.observe('runs.list', 200, {
      'x-ratelimit-limit': '20',
      'x-ratelimit-remaining': '19',
      'x-ratelimit-reset': String(clock.now() / 1000 + 1),
    });
    await clock.advance(50);
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

  it('counts what it granted per endpoint and reports the pace it learned', async () => {
    const clock = new ManualClock();
    const budget = new SharedRateBudget({ clock, reserve: 0.1 });
    await budget.observe('runs.list', 200, {
      'x-ratelimit-limit': '20',
      'x-ratelimit-remaining': '19',
      'x-ratelimit-reset': String(clock.now() / 1000 + 1),
    });
    await budget.acquire('runs.list');
    const snap = await budget.snapshot();
    expect(snap).toMatchObject({ limit: 20, granted: { 'runs.list': 1 } });
    expect(snap.buckets).toMatchObject([{ scope: 'key', limit: 20, measured: false }]);
    expect(snap.ratePerSecond).toBeCloseTo(18);
  });

  it('logs a start whose turn came back late when its request went out', async () => {
    // The turn was cut when the store applied it; the caller heard of it only when the update came
    // back, and sent then. Logged when cut, the start left a sliding log's reading before the
    // server let it go.
    const clock = new ManualClock();
    const store = new SlowStore(clock);
    const budget = new SharedRateBudget({ clock, store, reserve: 0 });
    const t0 = clock.now();
    await budget.observe('runs.list', 200, {
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '99',
      'x-ratelimit-reset': String(t0 / 1000 + 1),
    });
    store.ms = 40;
    const turn = tracked(budget.acquire('runs.get'));
    await flush();
    await clock.advance(40);
    await turn.promise;
    expect(await loggedStarts(store, t0)).toEqual([40]);
  });

  it('sends a start that woke late at once, and logs it when it went out', async () => {
    // Woken 10 ms late, the start is logged as it happened; the log is told after it goes out.
    // Waiting for a busy store to take that first sent it later than it was logged, and it left a
    // sliding log's reading before the server let it go.
    const clock = new ManualClock();
    const store = new SlowStore(clock);
    const budget = new SharedRateBudget({ clock, store, reserve: 0, ceilingPerSecond: 10 });
    const t0 = clock.now();
    await budget.observe('runs.list', 200, {
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '99',
      'x-ratelimit-reset': String(t0 / 1000 + 1),
    });
    await budget.acquire('runs.get');
    const late = tracked(budget.acquire('runs.get'));
    await flush();
    store.ms = 40;
    await clock.advance(110);
    expect(late.done()).toBe(true);
    expect(await loggedStarts(store, t0)).toEqual([0, 110]);
  });

  it('refuses a ceiling or reserve that makes no sense', () => {
    expect(() => new SharedRateBudget({ ceilingPerSecond: 0 })).toThrow(/ceiling/);
    expect(() => new SharedRateBudget({ reserve: 1 })).toThrow(/reserve/);
    expect(() => new SharedRateBudget({ reserve: -0.1 })).toThrow(/reserve/);
  });
});
