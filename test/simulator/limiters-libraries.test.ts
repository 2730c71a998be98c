import type { AddressInfo } from 'node:net';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { TokenBucket } from 'limiter';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { afterEach, describe, expect, it } from 'vitest';
import { type RateModel, type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { get, type Reply } from '../support/sim-http.ts';

// The rate models run by npm libraries: each refuses past its limit with 429 and Retry-After, its
// X-RateLimit-* follow the spec (integers; Reset a Unix time; only on runs-list 200s and on 429s),
// and its answers are the library's own, checked against an instance of that library driven
// beside it. Windows are ten seconds long, so a burst of requests falls in one however busy the
// machine.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const WINDOW = 10;
const LIMIT = 4;

async function start(model: RateModel, extra: object = {}): Promise<Simulator> {
  sim = await startSimulator({
    seed: 1,
    size: 50,
    now: '2026-03-01T00:00:00Z',
    rateLimit: { model, perKey: { limit: LIMIT, windowSeconds: WINDOW }, ...extra },
  });
  return sim;
}

const header = (r: Reply, name: string) => r.headers.get(name);
const int = (r: Reply, name: string) => Number(header(r, name));

/**
 * The spec's headers: integers, Remaining within the limit, Reset a Unix time within a window of a
 * moment between `from` (before the request was sent) and `to` (after its answer came).
 */
function expectSpecHeaders(r: Reply, from: number, to: number): void {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    expect(header(r, name), name).toMatch(/^\d+$/);
  }
  expect(int(r, 'x-ratelimit-remaining')).toBeLessThanOrEqual(int(r, 'x-ratelimit-limit'));
  const reset = int(r, 'x-ratelimit-reset');
  expect(reset).toBeGreaterThanOrEqual(Math.floor(from / 1000));
  expect(reset).toBeLessThanOrEqual(Math.ceil(to / 1000) + WINDOW);
}

function expectRefusal(r: Reply): void {
  expect(r.status).toBe(429);
  expect(r.body.error.code).toBe('rate_limited');
  const retryAfter = int(r, 'retry-after');
  expect(header(r, 'retry-after')).toMatch(/^\d+$/);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW);
  expect(r.body.error.retry_after).toBe(retryAfter);
  expect(header(r, 'x-ratelimit-remaining')).toBe('0');
}

async function burst(s: Simulator, n: number, path = '/api/v1/runs'): Promise<Reply[]> {
  const out: Reply[] = [];
  for (let i = 0; i < n; i++) out.push(await get(s, path, path === '/api/v1/runs' ? { limit: 1 } : {}));
  return out;
}

describe('library-backed rate models', () => {
  const cases: [RateModel, number][] = [
    ['flexible-fixed', LIMIT],
    // The burst limiter admits `burst` (default: the limit) more over ten windows.
    ['flexible-bursty', 2 * LIMIT],
    ['express-fixed', LIMIT],
    ['limiter-bucket', LIMIT],
    ['limiter-window', LIMIT],
  ];
  it.each(cases)('%s admits %i, then refuses with 429, Retry-After and the spec headers', async (model, admits) => {
    const s = await start(model);
    const t0 = Date.now();
    const replies = await burst(s, admits + 2);
    const t1 = Date.now();
    expect(replies.map((r) => r.status)).toEqual([...Array(admits).fill(200), 429, 429]);
    for (const r of replies) {
      expectSpecHeaders(r, t0, t1);
      expect(header(r, 'x-ratelimit-limit')).toBe(String(LIMIT));
    }
    const remaining = replies.slice(0, LIMIT).map((r) => int(r, 'x-ratelimit-remaining'));
    expect(remaining).toEqual([3, 2, 1, 0]);
    for (const r of replies.slice(admits)) expectRefusal(r);
  });

  it.each(['flexible-fixed', 'express-fixed', 'limiter-window'] as RateModel[])(
    '%s: a window starts with a key’s first request and Reset is its end',
    async (model) => {
      const s = await start(model);
      const t0 = Date.now();
      const [first] = await burst(s, 1);
      const reset = int(first as Reply, 'x-ratelimit-reset');
      expect(reset).toBeGreaterThanOrEqual(Math.floor((t0 + WINDOW * 1000) / 1000));
      expect(reset).toBeLessThanOrEqual(Math.ceil((Date.now() + WINDOW * 1000) / 1000));
    },
  );

  it('limiter-bucket: Reset is when the bucket is full again, Retry-After when the next token comes', async () => {
    const s = await start('limiter-bucket');
    const replies = await burst(s, LIMIT + 1);
    const now = Date.now();
    // Four tokens taken, refilled at 4 per 10 s: full again in 10 s, the next token in 2.5 s.
    expect(int(replies[LIMIT - 1] as Reply, 'x-ratelimit-reset')).toBeGreaterThanOrEqual(Math.floor(now / 1000) + 9);
    // 2.5 s less what refilled during the burst, in whole seconds.
    expect(int(replies[LIMIT] as Reply, 'retry-after')).toBeGreaterThanOrEqual(2);
    expect(int(replies[LIMIT] as Reply, 'retry-after')).toBeLessThanOrEqual(3);
  });

  it('the detail endpoint carries no X-RateLimit-* on 200 but does on 429, from the same bucket', async () => {
    const s = await start('express-fixed');
    const t0 = Date.now();
    const id = (await get(s, '/api/v1/runs', { limit: 1 })).body.data[0].id as string;
    const replies = await burst(s, LIMIT, `/api/v1/runs/${id}`);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    for (const r of replies.slice(0, 3)) expect(header(r, 'x-ratelimit-limit')).toBeNull();
    expectRefusal(replies[3] as Reply);
    expectSpecHeaders(replies[3] as Reply, t0, Date.now());
  });

  it('an endpoint bucket is per key and endpoint, and a refused key leaves other keys alone', async () => {
    const s = await start('flexible-fixed', {
      perKey: null,
      perEndpoint: { 'runs.list': { limit: 2, windowSeconds: WINDOW } },
    });
    expect((await burst(s, 3)).map((r) => r.status)).toEqual([200, 200, 429]);
    expect((await get(s, '/api/v1/agents')).status).toBe(200);
    const other = s.keys.add();
    expect((await get(s, '/api/v1/runs', { limit: 1 }, other)).status).toBe(200);
  });

  it('can be chosen through /_sim/rate-limit, which starts every bucket afresh', async () => {
    const s = await start('fixed');
    expect((await burst(s, LIMIT + 1)).map((r) => r.status)).toContain(429);
    const put = await fetch(`${s.url}/_sim/rate-limit`, {
      method: 'PUT',
      body: JSON.stringify({ model: 'limiter-window', perKey: { limit: 2, windowSeconds: WINDOW } }),
    });
    expect(put.status).toBe(200);
    expect((await burst(s, 3)).map((r) => r.status)).toEqual([200, 200, 429]);
    const bad = await fetch(`${s.url}/_sim/rate-limit`, { method: 'PUT', body: JSON.stringify({ model: 'leaky' }) });
    expect(bad.status).toBe(400);
  });

  it('after Retry-After the library admits again', async () => {
    sim = await startSimulator({
      seed: 1,
      size: 50,
      rateLimit: { model: 'flexible-fixed', perKey: { limit: 2, windowSeconds: 1 } },
    });
    const replies = await burst(sim, 3);
    expect(replies[2]?.status).toBe(429);
    await new Promise((r) => setTimeout(r, int(replies[2] as Reply, 'retry-after') * 1000));
    expect((await get(sim, '/api/v1/runs', { limit: 1 })).status).toBe(200);
  });
});

describe('library-backed models agree with the library driven beside them', () => {
  it('express-fixed says what express-rate-limit in an express app says', async () => {
    const app = express();
    app.use(rateLimit({ windowMs: WINDOW * 1000, limit: LIMIT, legacyHeaders: true, standardHeaders: false }));
    app.get('/', (_req, res) => void res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const s = await start('express-fixed');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      for (let i = 0; i < LIMIT + 2; i++) {
        const theirs = await fetch(url);
        await theirs.text();
        const ours = await get(s, '/api/v1/runs', { limit: 1 });
        expect(ours.status).toBe(theirs.status);
        for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining']) {
          expect(header(ours, name), name).toBe(theirs.headers.get(name));
        }
        const drift = int(ours, 'x-ratelimit-reset') - Number(theirs.headers.get('x-ratelimit-reset'));
        expect(Math.abs(drift)).toBeLessThanOrEqual(1);
        if (ours.status === 429) expect(header(ours, 'retry-after')).toBe(theirs.headers.get('retry-after'));
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('flexible-fixed says what a RateLimiterMemory says', async () => {
    const lib = new RateLimiterMemory({ points: LIMIT, duration: WINDOW });
    const s = await start('flexible-fixed');
    for (let i = 0; i < LIMIT + 2; i++) {
      const theirs = await lib.consume('k').then(
        (r) => ({ ok: true, r }),
        (r: RateLimiterRes) => ({ ok: false, r }),
      );
      const ours = await get(s, '/api/v1/runs', { limit: 1 });
      expect(ours.status).toBe(theirs.ok ? 200 : 429);
      expect(int(ours, 'x-ratelimit-remaining')).toBe(theirs.r.remainingPoints);
      if (!theirs.ok) expect(int(ours, 'retry-after')).toBe(Math.ceil(theirs.r.msBeforeNext / 1000));
    }
  });

  it('limiter-bucket says what a full TokenBucket says', async () => {
    const lib = new TokenBucket({ bucketSize: LIMIT, tokensPerInterval: LIMIT, interval: WINDOW * 1000 });
    lib.content = LIMIT;
    const s = await start('limiter-bucket');
    for (let i = 0; i < LIMIT + 2; i++) {
      const ok = lib.tryRemoveTokens(1);
      const ours = await get(s, '/api/v1/runs', { limit: 1 });
      expect(ours.status).toBe(ok ? 200 : 429);
      expect(int(ours, 'x-ratelimit-remaining')).toBe(Math.floor(lib.content));
    }
  });
});
