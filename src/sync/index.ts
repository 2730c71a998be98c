// The sync engine: what the CLI commands and the worker's jobs run.
export { createEngine, DEFAULT_SETTINGS, type Engine, type EngineOptions } from './sync-setup.ts';
export { runPass, PassError, type PassOptions, type PassResult } from './sync-pass.ts';
export { snapshotCatalog, type SnapshotResult } from './sync-catalog.ts';
export { syncLiveWindow, reconcileHorizon, readWatermark, LIVE_KEY, RECONCILE_KEY, WATERMARK_KEY } from './sync-live.ts';
export { refreshOpenRuns, isOpenRun, OPEN_RUN_SQL, planTicketBatches } from './sync-open-runs.ts';
export { retryPending } from './sync-pending.ts';
export { walkRuns, newWalk, readWalk, judge, RUNS_PAGE_SIZE, type WalkSpec, type WalkState } from './sync-walk.ts';
export { runsWindow, slices, type Window } from './sync-window.ts';
export { WarehouseGate, DEFAULT_LOCK_WAIT_MS } from './warehouse-gate.ts';
export { RecordReports, emptyRunCounts, type RunCounts, type SyncDeps, type SyncSettings } from './sync-types.ts';
