import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { runMain as cli } from '../support/cli.ts';
import { diffWithTruth, perTest, spanStart, storedCount } from './kit.ts';

// What the API key can break: revoked in the middle of a pass (401: stop at once, say so, keep
// what was loaded) or missing a scope (403: say which, sync the rest, exit 1).

describe('the API key during a pass', () => {
  const each = perTest();

  function envFor(s: Simulator, dir: string, key: string): Record<string, string> {
    return {
      RUNSYNC_API_URL: s.url,
      RUNSYNC_API_KEY: key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(s)),
    };
  }

  it('a key revoked mid-pass stops it at once with exit 1, and the next pass loses nothing', async () => {
    const s = await each.sim({ seed: 31, size: 500, now: systemMicros() - MICROS_PER_HOUR });
    const dir = each.dir();
    let revokedAt = 0;
    const watch = setInterval(() => {
      if (!revokedAt && s.counters.count('runs.get') >= 150) {
        s.keys.revoke(s.key);
        revokedAt = performance.now();
      }
    }, 5);
    const r = await cli(['sync'], envFor(s, dir, s.key));
    const stoppedAfterMs = performance.now() - revokedAt;
    clearInterval(watch);
    expect(revokedAt).toBeGreaterThan(0);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/401 unauthenticated/);
    expect(r.err).toMatch(/RUNSYNC_API_KEY/);
    expect(r.err).not.toContain(s.key);
    // Quickly: no retrying a refused key; what is left is committing the details already fetched
    // and the audit row (seconds, more on a crowded machine).
    expect(stoppedAfterMs).toBeLessThan(20_000);
    const afterRevoke = s.counters.log().filter((x) => x.status === 401).length;
    expect(afterRevoke).toBeLessThanOrEqual(8);

    const wh = await openWarehouse(dir, { readOnly: true });
    const [kept] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    const [audit] = await wh.all<{ status: string; errors: string }>(
      `SELECT status, errors::VARCHAR AS errors FROM _sync_audit`,
    );
    await wh.close();
    expect(Number(kept?.n)).toBeGreaterThan(0);
    expect(audit?.status).toBe('failed');
    expect(audit?.errors).toMatch(/401/);

    // A new key: the pass finishes what the first began, without fetching again what it kept.
    const key = s.keys.add({});
    const before = s.counters.count('runs.get');
    const again = await cli(['sync'], envFor(s, dir, key));
    expect(again.code, again.err).toBe(0);
    expect(await diffWithTruth(s, dir, s.clock.now())).toEqual([]);
    expect(s.counters.count('runs.get') - before).toBe((await storedCount(dir)) - Number(kept?.n));
  });

  it('a key lacking one scope: that resource is reported by scope, the others sync, exit 1', async () => {
    const sim = await each.sim({ seed: 32, size: 200, now: systemMicros() - MICROS_PER_HOUR });
    const dir = each.dir();
    const key = sim.keys.add({ scopes: ALL_SCOPES.filter((x) => x !== 'api:guidelines:read') });
    const r = await cli(['sync'], envFor(sim, dir, key));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/guidelines.*api:guidelines:read/);
    const wh = await openWarehouse(dir, { readOnly: true });
    const counts = await wh.all<{ t: string; n: bigint }>(
      `SELECT 'runs' AS t, count(*) AS n FROM runs UNION ALL SELECT 'tools', count(*) FROM tools
       UNION ALL SELECT 'guidelines', count(*) FROM guidelines
       UNION ALL SELECT 'runbooks', count(*) FROM runbooks ORDER BY t`,
    );
    await wh.close();
    const n = Object.fromEntries(counts.map((c) => [c.t, Number(c.n)]));
    expect(n.guidelines).toBe(0);
    expect(n.runs).toBeGreaterThan(0);
    expect(n.tools).toBeGreaterThan(0);
    expect(n.runbooks).toBeGreaterThan(0);
  });
});
