import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import fetchDetails from '../../jobs/fetch-details.ts';
import { loadConfig } from '../../src/config/index.ts';
import { LocalStore } from '../../src/storage/local.ts';
import { createEngine } from '../../src/sync/index.ts';
import { createLogger } from '../../src/util/logger.ts';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import type { JobContext } from '../../src/worker/job-context.ts';
import { StagingStore } from '../../src/worker/staging-store.ts';
import { runCli } from '../support/cli.ts';
import { diffFacts, SETTLE, truth } from '../sync/kit.ts';
import { eventually, perWorkerTest, spawnWorker, stopWorker, workerEnv } from '../worker/kit.ts';
import { everythingUnder, found, needlesOf } from './scan.ts';

// With the default policy on, the simulator's customers (their names, emails, phone numbers, cards,
// IBANs and addresses) are nowhere runsync writes: not in what a worker fleet fetched and staged,
// the raw archive, the warehouse or the Parquet tree, nor in the logs at their most talkative.

const KEY = 'a key for the tests, long enough';

describe('personal data, with the default policy on', () => {
  const t = perWorkerTest();

  it('is nowhere under the warehouse folder nor in the logs', async () => {
    const sim = await t.sim({ seed: 63, size: 250, days: 4, now: systemMicros() - MICROS_PER_HOUR });
    const dir = t.dir();
    const env = workerEnv(sim, dir, t.prefix(), {
      LOG_LEVEL: 'trace',
      RUNSYNC_PII_POLICY: 'default',
      RUNSYNC_PII_KEY: KEY,
    });
    const before = sim.clock.now() - SETTLE;
    const want = truth(sim, before);
    const worker = spawnWorker(env);
    t.workers.push(worker);
    await eventually(
      async () => (await diffFacts(want, dir)).length === 0,
      180_000,
      () => worker.output().slice(-2000),
    );
    await stopWorker(worker);

    // What a fetcher of the fleet stages for the writer, kept: the writer removes its files once loaded.
    const config = loadConfig({ ...env, REDIS_URL: '' });
    const engine = createEngine(config, {
      logger: createLogger({ level: 'silent' }),
      signal: new AbortController().signal,
    });
    const staging = new StagingStore(new LocalStore(join(dir, 'staging-kept'), { share: null }));
    try {
      const ids = [...want.keys()].slice(0, 40);
      const ctx = {
        deps: engine.deps,
        settings: { fetchConcurrency: 1 },
        signal: new AbortController().signal,
        staging,
        job: { id: 'kept' },
      } as unknown as JobContext;
      const r = await fetchDetails({ ids }, ctx);
      expect(r.ok).toBe(ids.length);
    } finally {
      await engine.close();
    }

    const sync = await runCli(['sync'], { ...env, REDIS_URL: '' });
    expect(sync.code, sync.stderr).toBe(0);
    const rebuild = await runCli(['rebuild'], { ...env, REDIS_URL: '' });
    expect(rebuild.code, rebuild.stderr).toBe(0);
    const check = await runCli(['pii', 'check'], env);
    expect(check.stdout).toContain('nothing that looks like personal data where the policy keeps values');
    expect(check.code, check.stdout).toBe(0);

    const needles = needlesOf(sim, before);
    expect(needles.names.length).toBeGreaterThan(100);
    expect(needles.emails.length).toBeGreaterThan(30);
    expect(needles.phones.length).toBeGreaterThan(30);
    expect(needles.others.length).toBeGreaterThan(10);
    const everywhere = {
      ...(await everythingUnder(dir)),
      logs: worker.output() + sync.stdout + sync.stderr + rebuild.stdout + rebuild.stderr + check.stdout,
    };
    expect(everywhere.logs).toContain('pass finished');
    expect(everywhere.staged).toContain('pii:hmac:');
    expect(everywhere.raw).toContain('[phone]');
    expect(everywhere.parquet).toContain('[email]');
    for (const [where, text] of Object.entries(everywhere)) expect(found(text, needles), where).toEqual([]);
    expect(everywhere.logs).not.toContain(KEY);

    // Told there is no policy, the check names the columns that look like holding names.
    const bare = await runCli(['pii', 'check'], { ...env, RUNSYNC_PII_POLICY: 'off' });
    expect(bare.stdout).toMatch(/^runs\.trigger_customer_name +named like personal data, and no rule/m);
    expect(bare.code).toBe(1);
  });
});
