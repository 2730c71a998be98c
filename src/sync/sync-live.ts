import { MICROS_PER_DAY, type Micros } from '../util/timestamp.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import type { SqlRunner } from '../warehouse/warehouse-types.ts';
import { US_TO_TSTZ } from '../warehouse/warehouse-sql.ts';
import { newWalk, readWalk, STORED_MAP_LIMIT, walkRuns, type WalkHooks } from './sync-walk.ts';
import { runsWindow, type Window } from './sync-window.ts';
import type { RunCounts, SyncDeps } from './sync-types.ts';

// The live window of a pass: [watermark - lookback, pass start - settle), or from the start date
// on the first pass. The watermark moves only as slices complete, in the transaction of the
// slice's last page, and never backwards. A window a killed pass left unfinished is finished
// first, from its saved position, before the next one is cut.

export const LIVE_KEY = 'runs.live';
export const RECONCILE_KEY = 'runs.reconcile';
export const WATERMARK_KEY = 'runs.watermark';
/** The first pass's lower bound when RUNSYNC_START_DATE is not set. */
export const DEFAULT_HISTORY: Micros = 30 * MICROS_PER_DAY;

/**
 * Slice length for a window: the whole window when the runs stored in it fit in memory for change
 * detection (one list walk, the fewest requests), else a day. Checkpoints are per page either way.
 */
async function sliceFor(deps: SyncDeps, window: Window): Promise<Micros> {
  const [r] = await deps.gate.use((wh) =>
    wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs WHERE created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')}`, [BigInt(window.from), BigInt(window.to)]),
  );
  return Number(r?.n ?? 0) <= STORED_MAP_LIMIT ? Math.max(window.to - window.from, 1) : Math.min(deps.settings.sliceMicros, window.to - window.from);
}

export async function readWatermark(deps: SyncDeps): Promise<Micros | null> {
  return (await deps.gate.use((wh) => getState<number>(wh, WATERMARK_KEY))) ?? null;
}

async function moveWatermark(tx: SqlRunner, to: Micros, at: Micros): Promise<void> {
  const current = (await getState<number>(tx, WATERMARK_KEY)) ?? null;
  if (current === null || to > current) await setState(tx, WATERMARK_KEY, to, at);
}

export async function syncLiveWindow(deps: SyncDeps, counts: RunCounts, onProgress?: WalkHooks['onProgress']): Promise<Window> {
  const hooks: WalkHooks = { onSliceDone: (tx, slice) => moveWatermark(tx, slice.to, deps.now()) };
  if (onProgress) hooks.onProgress = onProgress;
  const unfinished = await readWalk(deps, LIVE_KEY);
  if (unfinished && !unfinished.done) {
    deps.logger.info({ from: unfinished.from, to: unfinished.to, position: unfinished.position }, 'finishing the window an interrupted pass left');
    await walkRuns(deps, LIVE_KEY, unfinished, hooks, counts);
  }
  const passStart = deps.now();
  const watermark = await readWatermark(deps);
  const window = runsWindow({
    watermark,
    // The default start date applies to the first pass only: after an outage longer than it, the
    // window still starts at the watermark.
    startDate: deps.settings.startDate ?? (watermark === null ? passStart - DEFAULT_HISTORY : 0),
    lookback: deps.settings.lookback,
    passStart,
    settle: deps.settings.settle,
  });
  if (window.from >= window.to) return window;
  const walk = newWalk({ from: window.from, to: window.to, sliceMicros: await sliceFor(deps, window), filter: {}, force: false }, passStart);
  await walkRuns(deps, LIVE_KEY, walk, hooks, counts);
  return window;
}

/**
 * Re-lists every run created in [horizon start, before) by its summary and fetches only what moved:
 * runs that looked settled and changed later (an evaluation recorded, a resolution corrected).
 */
export async function reconcileHorizon(deps: SyncDeps, before: Micros, counts: RunCounts, onProgress?: WalkHooks['onProgress']): Promise<Window> {
  const hooks: WalkHooks = onProgress ? { onProgress } : {};
  const unfinished = await readWalk(deps, RECONCILE_KEY);
  if (unfinished && !unfinished.done) {
    deps.logger.info({ from: unfinished.from, to: unfinished.to, position: unfinished.position }, 'finishing the reconciliation an interrupted pass left');
    await walkRuns(deps, RECONCILE_KEY, unfinished, hooks, counts);
    return { from: unfinished.from, to: unfinished.to };
  }
  const now = deps.now();
  const window = { from: now - deps.settings.openRunHorizon, to: before };
  if (window.from >= window.to) return window;
  await walkRuns(deps, RECONCILE_KEY, newWalk({ ...window, sliceMicros: await sliceFor(deps, window), filter: {}, force: false }, now), hooks, counts);
  return window;
}
