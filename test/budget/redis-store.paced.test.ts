import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedRateBudget } from '../../src/budget/index.ts';
import { RedisBudgetStore } from '../../src/budget/redis-store.ts';

// The budget's state in a real Redis, as the processes sharing a key keep it: what one process
// learns (limits, an endpoint's own bucket, a pause) holds every other.

const prefix = `runsync-test:${randomUUID()}`;
const connections: Redis[] = [];
const connect = () => {
  const r = new Redis('redis://127.0.0.1:6379', { lazyConnect: false, maxRetriesPerRequest: 1 });
  connections.push(r);
  return r;
};

let cleanup: Redis;
beforeAll(() => {
  cleanup = connect();
});
afterAll(async () => {
  const keys = await cleanup.keys(`${prefix}:*`);
  if (keys.length) await cleanup.del(...keys);
  for (const r of connections) r.disconnect();
});

describe('two processes over one Redis budget', () => {
  it('share what either learned and pace together', async () => {
    const key = `${prefix}:budget`;
    const a = new SharedRateBudget({ store: new RedisBudgetStore({ redis: connect(), key }), reserve: 0 });
    const b = new SharedRateBudget({ store: new RedisBudgetStore({ redis: connect(), key }), reserve: 0 });
    const reset = String(Math.ceil(Date.now() / 1000) + 1);
    await a.observe('runs.list', 200, {
      'x-ratelimit-limit': '20',
      'x-ratelimit-remaining': '19',
      'x-ratelimit-reset': reset,
    });
    await b.observe('runs.get', 429, {
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': reset,
      'retry-after': '1',
    });
    const snap = await a.snapshot();
    expect(snap.limit).toBe(20);
    expect(snap.buckets).toContainEqual(expect.objectContaining({ scope: 'runs.get', burst: 5 }));

    // Six detail requests split between the two processes: their own bucket (5 a second) spaces them.
    const starts: number[] = [];
    const t0 = Date.now();
    await Promise.all(
      [a, b, a, b, a, b].map(async (budget) => {
        await budget.acquire('runs.get');
        starts.push(Date.now() - t0);
      }),
    );
    starts.sort((x, y) => x - y);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(5 * 200 - 30);

    // A pause one process takes holds the other.
    await a.pause(400);
    const held = Date.now();
    await b.acquire('tools.list');
    expect(Date.now() - held).toBeGreaterThanOrEqual(350);
  });
});
