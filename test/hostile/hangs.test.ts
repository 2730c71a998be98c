import { describe, expect, it } from 'vitest';
import { runPass } from '../../src/sync/index.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from '../sync/kit.ts';

// A load balancer that takes a connection and never answers, and a body that stops half-way with
// the connection left open: each such request is abandoned after a few seconds and retried like a
// 5xx, and only it waits; the pass ends exact, in not much more time than the same pass without
// them (the two measured side by side).

describe('requests that never answer', () => {
  const each = perTest();

  it('1% hung and 0.5% stalled: the pass ends exact within 1.5x the clean one', { timeout: 240_000 }, async () => {
    const timed = async (faults: { hangRate: number; stallRate: number }) => {
      const sim = await each.sim({
        seed: 41,
        size: 1000,
        days: 5,
        rateLimit: { perKey: { limit: 100, windowSeconds: 1 } },
        faults: { ...faults, seed: 7 },
      });
      const dir = each.dir();
      const engine = engineFor({ sim, dir, options: { retry: { baseDelayMs: 250, maxDelayMs: 2000 } } });
      try {
        const t0 = performance.now();
        const r = await runPass(engine.deps, { export: false });
        const ms = performance.now() - t0;
        sim.faults.off();
        expect(r.status).toBe('ok');
        expect(r.runs.pending).toBe(0);
        expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
        return { ms, requests: r.requests };
      } finally {
        await engine.close();
      }
    };
    const clean = await timed({ hangRate: 0, stallRate: 0 });
    const hung = await timed({ hangRate: 0.01, stallRate: 0.005 });
    expect(hung.requests.retries).toBeGreaterThan(5);
    expect(hung.ms / clean.ms, JSON.stringify({ clean, hung })).toBeLessThan(1.5);
  });
});
