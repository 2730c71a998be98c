import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { collect, makeClient, startSim } from '../api/test-kit.ts';

// The budget against a server that reports its limit differently from our simulator: X-RateLimit-*
// on every response (details too), X-RateLimit-Reset as seconds left rather than a Unix time, and
// a sliding count the client cannot align to. A relay in front of the simulator does the limiting;
// the simulator itself sets no limit.

const LIMIT = 12;

interface Limiter {
  server: Server;
  url: string;
  /** Arrival times of the requests let through, and of those refused. */
  passed: number[];
  refused: number[];
}

async function limitingRelay(target: string): Promise<Limiter> {
  const upstream = new URL(target);
  const passed: number[] = [];
  const refused: number[] = [];
  const server = createServer((req, res) => {
    const now = Date.now();
    // Sliding one-second window: no more than LIMIT requests in any second.
    const recent = passed.filter((t) => t > now - 1000);
    const oldest = recent[0] ?? now;
    const resetIn = Math.max(1, Math.ceil((oldest + 1000 - now) / 1000));
    const headers = {
      'x-ratelimit-limit': String(LIMIT),
      'x-ratelimit-remaining': String(Math.max(0, LIMIT - recent.length - 1)),
      'x-ratelimit-reset': String(resetIn),
    };
    if (recent.length >= LIMIT) {
      refused.push(now);
      const body = JSON.stringify({
        error: { code: 'rate_limited', message: 'slow down', request_id: `req_relay_${now}`, retry_after: resetIn },
      });
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(resetIn), ...headers });
      res.end(body);
      return;
    }
    passed.push(now);
    const forward = request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        const kept = Object.fromEntries(Object.entries(up.headers).filter(([k]) => !k.startsWith('x-ratelimit-')));
        res.writeHead(up.statusCode ?? 502, { ...kept, ...headers });
        up.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, passed, refused };
}

let sim: Simulator;
let relay: Limiter;
let ids: string[];

beforeAll(async () => {
  sim = await startSim({ size: 60, rateLimit: { perKey: null } });
  const lister = makeClient(sim.url, sim.key);
  ids = (await collect(lister.client.iterateRuns({}, { pageSize: 100 }))).map((r) => r.id).slice(0, 30);
  await lister.client.close();
  relay = await limitingRelay(sim.url);
});
afterAll(async () => {
  relay.server.closeAllConnections();
  await new Promise<void>((resolve) => relay.server.close(() => resolve()));
  await sim.close();
});

describe('a server with headers on every response and resets given as seconds left', () => {
  it('learns the limit and fetches every detail with no 429 and never more than the limit in a second', async () => {
    const t = makeClient(relay.url, sim.key);
    const results = await collect(t.client.fetchRunDetails(ids, { concurrency: 6 }));
    expect(results.filter((r) => r.ok)).toHaveLength(30);
    expect(relay.refused).toEqual([]);
    const all = relay.passed;
    const busiest = Math.max(...all.map((t0) => all.filter((t) => t >= t0 && t < t0 + 1000).length));
    expect(busiest).toBeLessThanOrEqual(LIMIT);
    const snap = await t.budget.snapshot();
    expect(snap.limit).toBe(LIMIT);
    expect(snap.buckets.map((b) => b.scope)).toEqual(['key']);
    await t.client.close();
  });
});
