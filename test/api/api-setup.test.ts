import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/index.ts';
import { ConfigError, configuredLogger, loadConfig } from '../../src/config/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { startSim } from './api-test-kit.ts';

// From environment to working client: the settings a person gives are the ones the client obeys,
// and what it logs, even at trace level while failing, never shows the key.

let sim: Simulator;
beforeAll(async () => {
  sim = await startSim({ size: 30, rateLimit: { perKey: null } });
});
afterAll(() => sim.close());

describe('createApiClient', () => {
  it('talks to the configured API with the configured key and limits, logging no secret', async () => {
    const config = loadConfig({ RUNSYNC_API_URL: `${sim.url}/`, RUNSYNC_API_KEY: sim.key, RUNSYNC_RATE_LIMIT: '20', LOG_LEVEL: 'trace' });
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

  it('needs the API settings', () => {
    const config = loadConfig({}, { needApi: false });
    expect(() => createApiClient(config, { logger: configuredLogger(config) })).toThrow(ConfigError);
  });
});
