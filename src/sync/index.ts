// The sync engine: what the CLI commands and the worker's jobs run.

export { type SnapshotResult, snapshotCatalog } from './catalog.ts';
export {
  LIVE_KEY,
  RECONCILE_KEY,
  readWatermark,
  reconcileHorizon,
  syncLiveWindow,
  WATERMARK_KEY,
} from './live.ts';
export { isOpenRun, openRunSql, planTicketBatches, refreshOpenRuns } from './open-runs.ts';
export { PassError, type PassOptions, type PassResult, runPass } from './pass.ts';
export { retryPending } from './pending.ts';
export { createEngine, DEFAULT_SETTINGS, type Engine, type EngineOptions } from './setup.ts';
export {
  type CursorRestart,
  RESTARTS_BEFORE_NARROWING,
  readSlice,
  type SliceAt,
  SlicePagingError,
} from './slice.ts';
export { emptyRunCounts, type RunCounts, type SyncDeps, type SyncSettings } from './types.ts';
export {
  judge,
  LIST_AHEAD_RUNS,
  newWalk,
  RUNS_PAGE_SIZE,
  readWalk,
  type WalkSpec,
  type WalkState,
  walkRuns,
} from './walk.ts';
export { DEFAULT_LOCK_WAIT_MS, WarehouseGate } from './warehouse-gate.ts';
export { runsWindow, slices, type Window } from './window.ts';
