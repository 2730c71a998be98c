import type { Dispatcher } from 'undici';
import { SharedRateBudget } from '../budget/rate.ts';
import type { BudgetStore, RateBudget } from '../budget/types.ts';
import type { RunsyncConfig } from '../config/env.ts';
import { ConfigError } from '../config/error.ts';
import { policyPayloads } from '../pii/index.ts';
import type { Logger } from '../util/logger.ts';
import { ApiClient, type InvalidRecordReport } from './client.ts';
import type { RetryPolicy } from './retry.ts';

// Wires a client from the configuration: its rate ceiling and reserve, and a logger that already
// redacts the key. Everything else is passed in, so a worker can share one budget store between
// processes and tests can hand in their own pool.

export interface ApiSetup {
  logger: Logger;
  /** Default: a budget over `store` (or memory) with the configured ceiling and reserve. */
  budget?: RateBudget;
  store?: BudgetStore;
  dispatcher?: Dispatcher;
  onInvalid?: (report: InvalidRecordReport) => void;
  retry?: Partial<RetryPolicy>;
}

export function createApiClient(config: RunsyncConfig, setup: ApiSetup): ApiClient {
  const api = config.api;
  if (api === null)
    throw new ConfigError('RUNSYNC_API_URL', 'is not set; give the API address, e.g. https://support.example.com');
  const budget =
    setup.budget ??
    new SharedRateBudget({
      ceilingPerSecond: config.rateLimit,
      reserve: config.rateReserve,
      logger: setup.logger,
      ...(setup.store ? { store: setup.store } : {}),
    });
  return new ApiClient({
    baseUrl: api.baseUrl,
    httpHosts: api.httpHosts,
    apiKey: api.key,
    budget,
    logger: setup.logger,
    timeouts: config.timeouts,
    ...(config.pii ? { payloads: policyPayloads(config.pii) } : {}),
    ...(setup.dispatcher ? { dispatcher: setup.dispatcher } : {}),
    ...(setup.onInvalid ? { onInvalid: setup.onInvalid } : {}),
    ...(setup.retry ? { retry: setup.retry } : {}),
  });
}
