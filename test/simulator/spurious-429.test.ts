import { afterEach, describe, expect, it } from 'vitest';
import { parseFaults } from '../../src/cli/commands/simulate.ts';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { get, type Reply } from '../support/sim-http.ts';

// Spurious 429s: a gateway shedding load refuses a share of requests with a Retry-After of one or
// two seconds, whatever the key's rate; the key's bucket does not count them. By default they
// carry no X-RateLimit-* (the gateway never asked the limiter); with figures on, the key's bucket
// as it stands, Remaining well above zero.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const N = 400;
const LIMIT = 10_000;

async function start(faults: object): Promise<Simulator> {
  sim = await startSimulator({
    seed: 1,
    size: 50,
    now: '2026-03-01T00:00:00Z',
    rateLimit: { perKey: { limit: LIMIT, windowSeconds: 600 } },
    faults: { spurious429Rate: 0.2, seed: 7, ...faults },
  });
  return sim;
}

async function many(s: Simulator, n: number): Promise<Reply[]> {
  const out: Reply[] = [];
  for (let i = 0; i < n; i++) out.push(await get(s, '/api/v1/runs', { limit: 1 }));
  return out;
}

describe('spurious 429s', () => {
  it('refuse the configured share with a Retry-After of 1 or 2 s and no rate figures', async () => {
    const replies = await many(await start({}), N);
    const refused = replies.filter((r) => r.status === 429);
    // 400 draws at 0.2: 80 expected, a standard deviation of 8.
    expect(refused.length).toBeGreaterThan(N * 0.2 - 30);
    expect(refused.length).toBeLessThan(N * 0.2 + 30);
    expect(replies.filter((r) => r.status === 200).length).toBe(N - refused.length);
    const waits = new Set(refused.map((r) => r.headers.get('retry-after')));
    expect([...waits].sort()).toEqual(['1', '2']);
    for (const r of refused) {
      expect(r.body.error.code).toBe('rate_limited');
      expect(String(r.body.error.retry_after)).toBe(r.headers.get('retry-after'));
      expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
    }
  });

  it('are not counted by the key’s bucket', async () => {
    const replies = await many(await start({}), 100);
    const admitted = replies.filter((r) => r.status === 200);
    const last = admitted[admitted.length - 1] as Reply;
    expect(Number(last.headers.get('x-ratelimit-remaining'))).toBe(LIMIT - admitted.length);
  });

  it('with figures on, carry the key’s bucket as it stands', async () => {
    const replies = await many(await start({ spurious429Figures: true }), 100);
    let admitted = 0;
    let checked = 0;
    for (const r of replies) {
      if (r.status === 200) admitted++;
      else {
        expect(r.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
        expect(Number(r.headers.get('x-ratelimit-remaining'))).toBe(LIMIT - admitted);
        expect(r.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('repeat for a fault seed', async () => {
    const statuses = async () => (await many(await start({}), 60)).map((r) => r.status);
    const first = await statuses();
    await sim?.close();
    expect(await statuses()).toEqual(first);
  });

  it('are named spurious429 in --faults', () => {
    expect(parseFaults('spurious429=0.03,5xx=0.05')).toEqual({ spurious429Rate: 0.03, serverErrorRate: 0.05 });
  });
});
