// The sync engine: what the CLI commands and the worker's jobs run.

export { type SnapshotResult, snapshotCatalog } from './sync-catalog.ts';
export {
  LIVE_KEY,
  RECONCILE_KEY,
  readWatermark,
  reconcileHorizon,
  syncLiveWindow,
  WATERMARK_KEY,
} from './sync-live.ts';
export { isOpenRun, OPEN_RUN_SQL, planTicketBatches, refreshOpenRuns } from './sync-open-runs.ts';
export { PassError, type PassOptions, type PassResult, runPass } from './sync-pass.ts';
export { retryPending } from './sync-pending.ts';
export { createEngine, DEFAULT_SETTINGS, type Engine, type EngineOptions } from './sync-setup.ts';
export {
  type CursorRestart,
  RESTARTS_BEFORE_NARROWING,
  readSlice,
  type SliceAt,
  SlicePagingError,
} from './sync-slice.ts';
export { emptyRunCounts, type RunCounts, type SyncDeps, type SyncSettings } from './sync-types.ts';
export {
  judge,
  LIST_AHEAD_RUNS,
  newWalk,
  RUNS_PAGE_SIZE,
  readWalk,
  type WalkSpec,
  type WalkState,
  walkRuns,
} from './sync-walk.ts';
export { runsWindow, slices, type Window } from './sync-window.ts';
export { DEFAULT_LOCK_WAIT_MS, WarehouseGate } from './warehouse-gate.ts';
