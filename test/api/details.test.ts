import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InFlightGauge, inFlightFor, MAX_IN_FLIGHT } from '../../src/api/in-flight.ts';
import { AuthError, FetchPool, fetchConcurrently, NotFoundError } from '../../src/api/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { collect, failure, makeClient, startSim, type TestClient } from './test-kit.ts';

// Details are fetched several at a time and handed over as they arrive; per-item failures are
// yielded, failures that concern every item end the loop, and stopping early cancels what is left.

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('fetchConcurrently', () => {
  it('keeps at most `concurrency` in flight and yields in completion order', async () => {
    const gates = new Map<string, ReturnType<typeof deferred<string>>>();
    let inFlight = 0;
    let most = 0;
    const get = async (id: string) => {
      inFlight++;
      most = Math.max(most, inFlight);
      const d = deferred<string>();
      gates.set(id, d);
      const v = await d.promise;
      inFlight--;
      return v;
    };
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const it = fetchConcurrently(ids, get, { concurrency: 2 });
    const first = it.next();
    await new Promise((r) => setImmediate(r));
    expect([...gates.keys()]).toEqual(['a', 'b']);
    gates.get('b')!.resolve('B');
    expect((await first).value).toEqual({ id: 'b', ok: true, value: 'B' });
    const rest: string[] = [];
    const drain = (async () => {
      for await (const r of it) rest.push(r.id);
    })();
    for (const id of ['a', 'c', 'd', 'e']) {
      while (!gates.has(id)) await new Promise((r) => setImmediate(r));
      gates.get(id)!.resolve(id.toUpperCase());
    }
    await drain;
    expect(rest.sort()).toEqual(['a', 'c', 'd', 'e']);
    expect(most).toBe(2);
  });

  it('takes ids from an async source as it goes', async () => {
    async function* source() {
      for (let i = 0; i < 5; i++) yield `id${i}`;
    }
    const got = await collect(fetchConcurrently(source(), async (id) => id.length, { concurrency: 3 }));
    expect(got.map((r) => r.id).sort()).toEqual(['id0', 'id1', 'id2', 'id3', 'id4']);
  });

  it('cancels the requests in flight when the consumer stops early', async () => {
    const aborted: string[] = [];
    const started: string[] = [];
    const get = (id: string, signal: AbortSignal) =>
      new Promise<string>((resolve, reject) => {
        started.push(id);
        if (id === 'x0') return resolve(id);
        signal.addEventListener('abort', () => {
          aborted.push(id);
          reject(signal.reason);
        });
      });
    for await (const r of fetchConcurrently(['x0', 'x1', 'x2', 'x3', 'x4'], get, { concurrency: 3 })) {
      expect(r.id).toBe('x0');
      break;
    }
    expect(started).toEqual(['x0', 'x1', 'x2']);
    expect(aborted.sort()).toEqual(['x1', 'x2']);
  });

  it('rejects with the caller abort reason', async () => {
    const controller = new AbortController();
    const get = (_id: string, signal: AbortSignal) =>
      new Promise<string>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const run = collect(fetchConcurrently(['a', 'b'], get, { signal: controller.signal }));
    controller.abort(new Error('operator stopped the sync'));
    expect((await failure(run)).message).toBe('operator stopped the sync');
  });
});

describe('requests in flight for a pace', () => {
  it('covers the pace times the round trip, never fewer than the base nor more than the most', () => {
    expect(inFlightFor(null, 100, 8)).toBe(8);
    expect(inFlightFor(20, null, 8)).toBe(8);
    expect(inFlightFor(20, 50, 8)).toBe(8);
    // 200 a second at 100 ms: 20 on the wire, and room for those waiting on their turn.
    expect(inFlightFor(200, 100, 8)).toBe(30);
    expect(inFlightFor(200, 400, 8)).toBe(MAX_IN_FLIGHT);
  });

  it("sizes for the budget's pace or twice the rate answers came back lately, whichever is less", () => {
    let now = 0;
    const gauge = new InFlightGauge(() => now);
    // Nothing paces us yet: the base, whatever came back.
    for (let i = 0; i < 50; i++) gauge.answered(100);
    expect(gauge.needed(8)).toBe(8);
    // 200 a second granted, 100 ms a round trip, and 8 in flight answering 80 a second: twice that
    // is sized for (24), not the whole pace (30), which a share of a key used by others would overshoot.
    gauge.granted(200);
    now = 5_000;
    for (let i = 0; i < 80; i++) {
      now += 12;
      gauge.answered(100);
    }
    expect(gauge.needed(8)).toBe(24);
    // One answer after a stall moves the round trip read by a step (100 to 175 ms), not to the
    // stall: at 20 a second, 6 in flight rather than all there may be.
    gauge.answered(10_000);
    gauge.granted(20);
    expect(gauge.needed(1)).toBe(6);
    gauge.granted(200);
    // A second later with nothing answered, the process's own rate says nothing needs more.
    now += 1_500;
    expect(gauge.needed(8)).toBe(8);
  });

  it('lets more requests start as soon as a bound read as it goes rises', async () => {
    let bound = 2;
    const gates: (() => void)[] = [];
    let inFlight = 0;
    const pool = new FetchPool(
      (id) =>
        new Promise<string>((resolve) => {
          inFlight++;
          gates.push(() => {
            inFlight--;
            resolve(id);
          });
        }),
      () => bound,
    );
    const all = pool.all(['a', 'b', 'c', 'd', 'e', 'f']);
    await new Promise((r) => setImmediate(r));
    expect(inFlight).toBe(2);
    bound = 5;
    (gates.shift() as () => void)();
    await new Promise((r) => setImmediate(r));
    // One finished, and the freed slot let four more in, not one.
    expect(inFlight).toBe(5);
    bound = 1;
    while (gates.length > 0) {
      (gates.shift() as () => void)();
      await new Promise((r) => setImmediate(r));
      expect(inFlight).toBeLessThanOrEqual(4);
    }
    expect((await all).map((r) => r.id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    pool.close();
  });
});

describe('fetchRunDetails against the simulator', () => {
  let sim: Simulator;
  let t: TestClient;
  beforeAll(async () => {
    sim = await startSim({ size: 120, rateLimit: { perKey: null }, faults: { baseLatencyMs: 5 } });
    t = makeClient(sim.url, sim.key);
  });
  afterAll(async () => {
    await t.client.close();
    await sim.close();
  });

  it('fetches each detail once, reports a missing run as its own failure, and goes on', async () => {
    const ids = (await collect(t.client.iterateRuns())).map((r) => r.id).slice(0, 40);
    const missing = '00000000-0000-4000-8000-00000000dead';
    sim.counters.reset();
    const results = await collect(
      t.client.fetchRunDetails([...ids.slice(0, 20), missing, ...ids.slice(20)], { concurrency: 6 }),
    );
    expect(results).toHaveLength(41);
    const ok = results.filter((r) => r.ok);
    expect(ok.map((r) => r.id).sort()).toEqual([...ids].sort());
    const failed = results.find((r) => !r.ok);
    expect(failed?.id).toBe(missing);
    if (failed && !failed.ok) expect(failed.error).toBeInstanceOf(NotFoundError);
    expect(sim.counters.count('runs.get')).toBe(41);
  });

  it('ends on a refused key rather than failing every id', async () => {
    const e = await failure(
      collect(makeClient(sim.url, 'svc_live_unknown_key_000000000000').client.fetchRunDetails(['a', 'b', 'c'])),
    );
    expect(e).toBeInstanceOf(AuthError);
  });
});
