import type { Dispatcher } from 'undici';
import type { RetryPolicy } from '../api/retry.ts';
import { createApiClient } from '../api/setup.ts';
import { SharedRateBudget } from '../budget/rate.ts';
import type { BudgetStore, RateBudget } from '../budget/types.ts';
import type { RunsyncConfig } from '../config/env.ts';
import { openParquetTarget } from '../export/target.ts';
import type { Logger } from '../util/logger.ts';
import { MICROS_PER_DAY, MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';
import type { WarehouseLockedError } from '../warehouse/errors.ts';
import type { SyncDeps, SyncSettings } from './types.ts';
import { DEFAULT_LOCK_WAIT_MS, WarehouseGate } from './warehouse-gate.ts';

// Builds the engine's dependencies from the configuration: the budgeted client, the warehouse
// gate, the settings. The CLI and the worker call this; tests pass their own pieces in.

export const DEFAULT_SETTINGS: Omit<
  SyncSettings,
  'startDate' | 'lookback' | 'openRunHorizon' | 'reconcileEvery' | 'reconcileBudget'
> = {
  settle: 5 * MICROS_PER_SECOND,
  detailConcurrency: 8,
  bufferedPages: 8,
  sliceMicros: MICROS_PER_DAY,
};

export interface EngineOptions {
  logger: Logger;
  signal: AbortSignal;
  now?: () => Micros;
  settings?: Partial<SyncSettings>;
  budget?: RateBudget;
  store?: BudgetStore;
  dispatcher?: Dispatcher;
  retry?: Partial<RetryPolicy>;
  lockWaitMs?: number;
  /** Told when a load finds the warehouse held by another process. */
  onLocked?: (error: WarehouseLockedError) => void;
}

export interface Engine {
  deps: SyncDeps;
  close(): Promise<void>;
}

export function createEngine(config: RunsyncConfig, o: EngineOptions): Engine {
  const budget =
    o.budget ??
    new SharedRateBudget({
      ceilingPerSecond: config.rateLimit,
      reserve: config.rateReserve,
      logger: o.logger,
      ...(o.store ? { store: o.store } : {}),
    });
  const api = createApiClient(config, {
    logger: o.logger,
    budget,
    ...(o.dispatcher ? { dispatcher: o.dispatcher } : {}),
    ...(o.retry ? { retry: o.retry } : {}),
  });
  // Windows, caps and the horizon are compared with the API's timestamps: on the API's clock.
  const apiClock = o.now ? undefined : api.serverClock;
  const now = o.now ?? (() => api.serverClock.now());
  const gate = new WarehouseGate({
    dir: config.warehouseDir,
    logger: o.logger,
    lockWaitMs: o.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
    schemaEvolution: config.schemaEvolution,
    pii: config.pii,
    contract: config.contract,
    now,
    signal: o.signal,
    share: config.share,
    budget: config.memory,
    ...(o.onLocked ? { onLocked: o.onLocked } : {}),
  });
  const settings: SyncSettings = {
    ...DEFAULT_SETTINGS,
    bufferedPages: config.memory.bufferedPages,
    startDate: config.startDate,
    lookback: config.lookback,
    openRunHorizon: config.openRunHorizon,
    reconcileEvery: config.reconcileEvery,
    reconcileBudget: config.reconcileBudget,
    deletes: config.deletes,
    ...(config.api ? { keySetting: config.api.keySetting } : {}),
    ...o.settings,
  };
  const parquet = openParquetTarget(config.storage, { logger: o.logger, share: config.share });
  return {
    deps: {
      api,
      gate,
      logger: o.logger,
      signal: o.signal,
      now,
      settings,
      budget,
      parquet: parquet.target,
      ...(apiClock ? { apiClock } : {}),
    },
    close: async () => {
      await api.close();
      await parquet.close();
    },
  };
}
