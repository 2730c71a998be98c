import { describe, expect, it } from 'vitest';
import { ListAhead } from '../../src/sync/list-ahead.ts';
import { runPipeline } from '../../src/sync/load-pipeline.ts';
import { loadSplitting, type SplitSteps } from '../../src/sync/split-load.ts';

// The concurrency between listing, fetching and loading, on plain promises: what is committed, in
// which order, with how much in flight, and what survives a failure.

interface Item {
  n: number;
  ready: Promise<void>;
  settle: () => void;
  fail: (e: Error) => void;
}

function item(n: number): Item {
  let settle = () => {};
  let fail: (e: Error) => void = () => {};
  const ready = new Promise<void>((res, rej) => {
    settle = res;
    fail = rej;
  });
  ready.catch(() => undefined);
  return { n, ready, settle, fail };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('the load pipeline', () => {
  it('commits strictly in order, and every item ready behind the first in the same commit', async () => {
    const items = Array.from({ length: 6 }, (_, i) => item(i));
    const commits: number[][] = [];
    const done = runPipeline<Item>(
      async (push) => {
        for (const it of items) await push(it);
      },
      async (batch) => {
        commits.push(batch.map((b) => b.n));
      },
      { ahead: 10, signal: new AbortController().signal },
    );
    // Fetches finish out of order: 2, 3 and 1 before 0.
    for (const n of [2, 3, 1]) items[n]?.settle();
    await tick();
    expect(commits).toEqual([]);
    items[0]?.settle();
    await tick();
    expect(commits).toEqual([[0, 1, 2, 3]]);
    items[5]?.settle();
    items[4]?.settle();
    await done;
    expect(commits.flat()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('holds at most `ahead` items produced beyond the commits', async () => {
    const items = Array.from({ length: 8 }, (_, i) => item(i));
    let pushed = 0;
    const done = runPipeline<Item>(
      async (push) => {
        for (const it of items) {
          await push(it);
          pushed++;
        }
      },
      async () => undefined,
      { ahead: 3, signal: new AbortController().signal },
    );
    await tick();
    expect(pushed).toBe(3);
    items[0]?.settle();
    await tick();
    expect(pushed).toBe(4);
    for (const it of items) it.settle();
    await done;
    expect(pushed).toBe(8);
  });

  it('counts an item by its weight against `ahead`: light ones (no details) go more to a commit', async () => {
    const items = Array.from({ length: 40 }, (_, i) => item(i));
    let pushed = 0;
    const commits: number[][] = [];
    const done = runPipeline<Item>(
      async (push) => {
        for (const it of items) {
          await push(it);
          pushed++;
        }
      },
      async (batch) => void commits.push(batch.map((b) => b.n)),
      // The first two items are heavy, the rest an eighth each.
      { ahead: 4, signal: new AbortController().signal, weight: (it) => (it.n < 2 ? 1 : 1 / 8) },
    );
    await tick();
    // 2 heavy items and 16 light ones fill the room of 4.
    expect(pushed).toBe(18);
    for (const it of items) it.settle();
    await done;
    expect(commits.flat()).toEqual(items.map((it) => it.n));
    expect(commits[0]).toHaveLength(18);
  });

  it('commits everything before a failed item, then throws its failure and stops producing', async () => {
    const items = Array.from({ length: 5 }, (_, i) => item(i));
    const commits: number[] = [];
    let producerStopped = false;
    const done = runPipeline<Item>(
      async (push, signal) => {
        for (const it of items) await push(it);
        // More would come from a real lister; it waits here until the pipeline stops it.
        if (!signal.aborted) await new Promise((r) => signal.addEventListener('abort', r));
        producerStopped = true;
        // The fetches still under way end with the abort.
        items[4]?.fail(new Error('aborted'));
      },
      async (batch) => {
        commits.push(...batch.map((b) => b.n));
      },
      { ahead: 10, signal: new AbortController().signal },
    );
    await tick();
    items[0]?.settle();
    items[1]?.settle();
    items[2]?.fail(new Error('detail refused'));
    items[3]?.settle();
    await expect(done).rejects.toThrow('detail refused');
    expect(commits).toEqual([0, 1]);
    expect(producerStopped).toBe(true);
  });

  it('stops at once for a signal aborted before it began', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopping'));
    let produced = false;
    await expect(
      runPipeline<Item>(
        async (push) => {
          produced = true;
          await push(item(0));
        },
        async () => undefined,
        { ahead: 2, signal: controller.signal },
      ),
    ).rejects.toThrow('stopping');
    expect(produced).toBe(true);
  });
});

async function* source(n: number, failAt?: number): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new Error('cursor refused');
    yield i;
  }
}

describe('listing ahead', () => {
  it('lists up to its limit ahead of what is taken, and hands everything over in order', async () => {
    const ahead = new ListAhead<number>(4, () => 1);
    const taken: number[] = [];
    let most = 0;
    await ahead.run(source(20), async (n) => {
      most = Math.max(most, ahead.waiting);
      await tick();
      taken.push(n);
    });
    expect(taken).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
  });

  it('hands over what was listed before a listing failure, then throws it', async () => {
    const ahead = new ListAhead<number>(100, () => 1);
    const taken: number[] = [];
    await expect(ahead.run(source(10, 6), async (n) => void taken.push(n))).rejects.toThrow('cursor refused');
    expect(taken).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('lets a restart wait until half the limit is left', async () => {
    const ahead = new ListAhead<number>(4, () => 1);
    let take = () => {};
    let finished = false;
    const run = ahead.run(source(8), () => new Promise<void>((r) => (take = r))).then(() => (finished = true));
    await tick();
    expect(ahead.waiting).toBe(4);
    let released = false;
    const room = ahead.roomToRestart().then(() => (released = true));
    const waitingBefore: number[] = [];
    for (let i = 0; i < 10 && !released; i++) {
      waitingBefore.push(ahead.waiting);
      take();
      await tick();
    }
    await room;
    expect(waitingBefore.length).toBeGreaterThan(1);
    expect(waitingBefore.every((w) => w > 2)).toBe(true);
    expect(ahead.waiting).toBeLessThanOrEqual(2);
    for (let i = 0; i < 20 && !finished; i++) {
      take();
      await tick();
    }
    await run;
  });
});

describe('loading a batch that does not fit', () => {
  // A loader that runs out of memory on any part holding a large payload, unless given more.
  function steps(log: string[]): SplitSteps<string, string[]> {
    return {
      load: async (items, last, memory) => {
        if (items.some((i) => i.startsWith('poison'))) throw new Error('Conversion Error: cannot read it');
        if (memory === undefined && items.some((i) => i.startsWith('big')))
          throw new Error('Out of Memory Error: failed to allocate');
        log.push(`${items.join('+')}${last ? ' with bookkeeping' : ''}${memory ? ` at ${memory}` : ''}`);
        return [...items];
      },
      refuse: async (item, e, last) => {
        log.push(`refused ${item}${last ? ' with bookkeeping' : ''}: ${e.message.split(':')[0]}`);
        return [];
      },
      combine: (a, b) => [...a, ...b],
      heldByBatch: (e): e is Error => e instanceof Error && /^(Out of Memory|Conversion) Error/.test(e.message),
      outOfMemory: (e) => e instanceof Error && e.message.startsWith('Out of Memory Error'),
      outsizedMemory: '2GB',
    };
  }

  it('loads it in halves, a large payload alone with more memory, and refuses what never loads at once', async () => {
    const log: string[] = [];
    const loaded = await loadSplitting(['a', 'b', 'big1', 'c', 'd', 'poison', 'e', 'f'], steps(log));
    expect(loaded).toEqual(['a', 'b', 'big1', 'c', 'd', 'e', 'f']);
    expect(log).toEqual(['a+b', 'big1 at 2GB', 'c', 'd', 'refused poison: Conversion Error', 'e+f with bookkeeping']);
  });

  it('commits a batch that fits in one go, and throws a failure of the warehouse itself', async () => {
    const log: string[] = [];
    expect(await loadSplitting(['a', 'b'], steps(log))).toEqual(['a', 'b']);
    expect(log).toEqual(['a+b with bookkeeping']);
    const locked: SplitSteps<string, string[]> = {
      ...steps(log),
      load: async () => {
        throw new Error('IO Error: Could not set lock on file');
      },
    };
    await expect(loadSplitting(['a', 'big'], locked)).rejects.toThrow('Could not set lock');
  });
});
