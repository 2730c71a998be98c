import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatTimestamp } from '../../src/util/timestamp.ts';
import { PASS_LOCK_DIR } from '../../src/warehouse/pass-lock.ts';
import { collect, runCli, spawnCli } from '../support/cli.ts';
import { diffWithTruth, perTest, SETTLE, spanStart } from '../sync/kit.ts';

// Two passes started at once on one warehouse (a cron pass overlapping a slow one, a second
// operator): the second says once which pass holds the warehouse and waits its turn, fetching
// nothing meanwhile, then does what is left (nothing, here); both end exact. A pass killed outright
// holds nothing: the next one runs.

describe('two passes at once on one warehouse', () => {
  const each = perTest();

  it('the second waits its turn, saying who holds it, and fetches nothing twice', { timeout: 180_000 }, async () => {
    const sim = await each.sim({
      seed: 61,
      size: 400,
      days: 5,
      rateLimit: { perKey: { limit: 40, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
      LOG_LEVEL: 'info',
    };
    const first = spawnCli(['sync'], env);
    const done = collect(first, 150_000);
    const t0 = Date.now();
    while (sim.counters.count('runs.get') < 20) {
      if (Date.now() - t0 > 60_000) throw new Error('the first pass fetched nothing');
      await new Promise((r) => setTimeout(r, 50));
    }
    const second = await runCli(['sync'], { ...env, LOG_LEVEL: 'warn' });
    expect(second.code, second.stderr).toBe(0);
    const lines = second.stderr.trim().split('\n');
    expect(lines, second.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`another pass holds the warehouse ${dir} \\(sync, process \\d+, for \\d+ s\\); this one waits`),
    );
    const r = await done;
    expect(r.code, r.stderr).toBe(0);
    // Every detail fetched once: by the first pass; the second found nothing left to fetch.
    expect(sim.counters.count('runs.get')).toBeLessThanOrEqual(401);
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
    expect(existsSync(join(dir, PASS_LOCK_DIR, 'exclusive.json'))).toBe(false);
  });

  it('a pass killed outright holds nothing: the next one runs', { timeout: 180_000 }, async () => {
    const sim = await each.sim({
      seed: 62,
      size: 300,
      days: 5,
      rateLimit: { perKey: { limit: 40, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
    };
    const first = spawnCli(['sync'], env);
    const done = collect(first, 150_000);
    while (!existsSync(join(dir, PASS_LOCK_DIR, 'exclusive.json'))) await new Promise((r) => setTimeout(r, 50));
    const status = await runCli(['status'], env);
    expect(status.stdout).toMatch(/running now: sync, process \d+/);
    const holder = JSON.parse(readFileSync(join(dir, PASS_LOCK_DIR, 'exclusive.json'), 'utf8')) as { pid: number };
    // The command itself, not its launcher: nothing of it can clean up.
    process.kill(holder.pid, 'SIGKILL');
    await done;
    const after = await runCli(['status'], env);
    expect(after.stdout).toMatch(/not running: it stopped without recording how/);
    const again = await runCli(['sync'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
  });
});
