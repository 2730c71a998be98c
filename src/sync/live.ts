import type { Micros } from '../util/timestamp.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import type { SqlRunner, Warehouse } from '../warehouse/types.ts';
import { LIVE_KEY, RECONCILE_KEY, WATERMARK_KEY } from './state-keys.ts';
import type { RunCounts, SyncDeps } from './types.ts';
import { newWalk, readWalk, storedLimit, storedUpdatedAt, type WalkHooks, type WalkState, walkRuns } from './walk.ts';
import { runsWindow, type Window } from './window.ts';

// The live window of a pass: [watermark - lookback, pass start - settle), or from the start date
// on the first pass. The watermark moves only as slices complete, in the transaction of the
// slice's last page, and never backwards. A window a killed pass left unfinished is finished
// first, from its saved position, before the next one is cut.

export { LIVE_KEY, RECONCILE_KEY, WATERMARK_KEY };

interface Plan {
  window: Window;
  sliceMicros: Micros;
  /** Stored updated_at of the window's runs, when they fit in memory. */
  stored: Map<string, Micros> | undefined;
}

/**
 * Cuts a window and reads what its walk needs in one turn at the warehouse. The slice is the whole
 * window when the runs stored in it fit in memory for change detection (one list walk, the fewest
 * requests), else a day. Checkpoints are per page either way.
 */
export async function planWindow(
  wh: Warehouse,
  deps: SyncDeps,
  cut: (watermark: Micros | null) => Window,
): Promise<Plan> {
  const window = cut((await getState<number>(wh, WATERMARK_KEY)) ?? null);
  if (window.from >= window.to) return { window, sliceMicros: 1, stored: undefined };
  const stored = await storedUpdatedAt(wh, window, storedLimit(deps));
  if (stored) return { window, sliceMicros: window.to - window.from, stored };
  return { window, sliceMicros: Math.min(deps.settings.sliceMicros, window.to - window.from), stored: undefined };
}

export async function readWatermark(deps: SyncDeps): Promise<Micros | null> {
  return (await deps.gate.use((wh) => getState<number>(wh, WATERMARK_KEY))) ?? null;
}

async function moveWatermark(tx: SqlRunner, to: Micros, at: Micros): Promise<void> {
  const current = (await getState<number>(tx, WATERMARK_KEY)) ?? null;
  if (current === null || to > current) await setState(tx, WATERMARK_KEY, to, at);
}

export async function syncLiveWindow(
  deps: SyncDeps,
  counts: RunCounts,
  onProgress?: WalkHooks['onProgress'],
): Promise<Window> {
  const hooks: WalkHooks = { onSliceDone: (tx, slice) => moveWatermark(tx, slice.to, deps.now()) };
  if (onProgress) hooks.onProgress = onProgress;
  const passStart = deps.now();
  const cut = (watermark: Micros | null) =>
    runsWindow({
      watermark,
      // Without RUNSYNC_START_DATE the first pass reads every run the API has.
      startDate: deps.settings.startDate ?? 0,
      lookback: deps.settings.lookback,
      passStart,
      settle: deps.settings.settle,
    });
  let { unfinished, next } = await deps.gate.use(async (wh) => {
    // A first sync loads history: how old it is says nothing of freshness.
    if ((await getState<number>(wh, WATERMARK_KEY)) === undefined) deps.freshness?.runs.skip();
    const saved = await getState<WalkState>(wh, LIVE_KEY);
    return saved && !saved.done
      ? { unfinished: saved, next: null }
      : { unfinished: null, next: await planWindow(wh, deps, cut) };
  });
  if (unfinished) {
    deps.logger.info(
      { from: unfinished.from, to: unfinished.to, position: unfinished.position },
      'finishing the window an interrupted pass left',
    );
    await walkRuns(deps, LIVE_KEY, unfinished, hooks, counts);
    next = await deps.gate.use((wh) => planWindow(wh, deps, cut));
  }
  const p = next as Plan;
  if (p.window.from >= p.window.to) return p.window;
  const walk = newWalk(
    { from: p.window.from, to: p.window.to, sliceMicros: p.sliceMicros, filter: {}, force: false },
    passStart,
  );
  await walkRuns(deps, LIVE_KEY, walk, hooks, counts, p.stored);
  return p.window;
}

/**
 * Re-lists every run created in [horizon start, before) by its summary and fetches only what moved:
 * runs that looked settled and changed later (an evaluation recorded, a resolution corrected).
 */
export async function reconcileHorizon(
  deps: SyncDeps,
  before: Micros,
  counts: RunCounts,
  onProgress?: WalkHooks['onProgress'],
): Promise<Window> {
  const hooks: WalkHooks = onProgress ? { onProgress } : {};
  const unfinished = await readWalk(deps, RECONCILE_KEY);
  if (unfinished && !unfinished.done) {
    deps.logger.info(
      { from: unfinished.from, to: unfinished.to, position: unfinished.position },
      'finishing the reconciliation an interrupted pass left',
    );
    await walkRuns(deps, RECONCILE_KEY, unfinished, hooks, counts);
    return { from: unfinished.from, to: unfinished.to };
  }
  const now = deps.now();
  const p = await deps.gate.use((wh) =>
    planWindow(wh, deps, () => ({ from: now - deps.settings.openRunHorizon, to: before })),
  );
  if (p.window.from >= p.window.to) return p.window;
  await walkRuns(
    deps,
    RECONCILE_KEY,
    newWalk({ ...p.window, sliceMicros: p.sliceMicros, filter: {}, force: false }, now),
    hooks,
    counts,
    p.stored,
  );
  return p.window;
}
