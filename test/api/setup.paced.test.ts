import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { ConfigError, configuredLogger, loadConfig } from '../../src/config/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { startSim } from './test-kit.ts';

// From environment to working client: the settings a person gives are the ones the client obeys,
// and what it logs, even at trace level while failing, never shows the key.

let sim: Simulator;
beforeAll(async () => {
  sim = await startSim({ size: 30, rateLimit: { perKey: null } });
});
afterAll(() => sim.close());

describe('createApiClient', () => {
  it('talks to the configured API with the configured key and limits, logging no secret', async () => {
    const config = loadConfig({
      RUNSYNC_API_URL: `${sim.url}/`,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_RATE_LIMIT: '20',
      LOG_LEVEL: 'trace',
    });
    const lines: string[] = [];
    const logger = configuredLogger(config, { destination: { write: (l: string) => lines.push(l) } });
    const client = createApiClient(config, { logger, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    expect((await client.listRuns({}, { limit: 3 })).items).toHaveLength(3);
    sim.faults.set({ serverErrorRate: 1 });
    await expect(client.getRun('00000000-0000-4000-8000-000000000000')).rejects.toThrow();
    sim.faults.off();
    logger.debug({ auth: `Bearer ${sim.key}` }, 'a careless line');
    expect(lines.some((l) => l.includes('retrying after a retriable failure'))).toBe(true);
    expect(lines.join('\n')).not.toContain(sim.key);
    await client.close();
  });

  it('paces to RUNSYNC_RATE_LIMIT less RUNSYNC_RATE_RESERVE', async () => {
    const config = loadConfig({
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_RATE_LIMIT: '10',
      RUNSYNC_RATE_RESERVE: '20%',
    });
    const client = createApiClient(config, { logger: configuredLogger(config) });
    const ids = (await client.listRuns({}, { limit: 16 })).items.map((r) => r.id);
    await new Promise((r) => setTimeout(r, 200));
    sim.counters.reset();
    const results = [];
    for await (const r of client.fetchRunDetails(ids, { concurrency: 8 })) results.push(r);
    expect(results.filter((r) => r.ok)).toHaveLength(16);
    // 10 a second less a fifth: one request every 125 ms at most, however many are waiting.
    const times = sim.counters.log().map((r) => r.t);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(15 * 125 - 30);
    expect(sim.counters.maxInAlignedWindow(1000)).toBeLessThanOrEqual(9);
    await client.close();
  });

  it('needs the API settings', () => {
    const config = loadConfig({}, { needApi: false });
    expect(() => createApiClient(config, { logger: configuredLogger(config) })).toThrow(ConfigError);
  });
});
