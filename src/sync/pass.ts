import { PermissionError } from '../api/index.ts';
import { MICROS_PER_SECOND } from '../util/timestamp.ts';
import { vanishedRuns } from '../warehouse/deletions.ts';
import type { PassKind } from './audit.ts';
import { type SnapshotResult, snapshotCatalog } from './catalog.ts';
import { probeVanished } from './deletions.ts';
import { reconcileHorizon, syncLiveWindow } from './live.ts';
import { recordOpenRuns, refreshOpenRuns } from './open-runs.ts';
import { exportCounts, OperationError, type OperationResult, runOperation } from './operation.ts';
import { pendingRuns, retryPending, unloadableLines, unloadableRuns } from './pending.ts';
import { type RollingResult, rollHorizon } from './rolling.ts';
import { emptyRunCounts, type RunCounts, type SyncDeps } from './types.ts';
import type { Window } from './window.ts';

// One pass, in the contract's order: catalog snapshot, the live runs window, the open runs created
// before it, a step of the rolling reconciliation (with reconcile: every run of the horizon
// instead), the details that failed before, then the Parquet export. A resource the key may not
// read is reported and the rest still syncs; the pass is then "partial" (exit 1). A refused key
// stops the pass at once: what was committed stays, the rest is picked up by the next pass.

export interface PassOptions {
  kind?: Extract<PassKind, 'sync' | 'snapshot'>;
  reconcile?: boolean;
  /** Write the Parquet export at the end (default true). */
  export?: boolean;
  /** Snapshot the catalog (default true; the worker snapshots it on its own schedule). */
  catalog?: boolean;
  /** Check every open run, even when they are more than their share of the key's rate allows. */
  allOpen?: boolean;
}

export interface PassResult extends OperationResult {
  window: Window | null;
  reconciled: Window | null;
  /** The step of the rolling reconciliation this pass walked (null: none, or --reconcile). */
  rolling: RollingResult | null;
  runs: RunCounts;
  catalog: SnapshotResult | null;
  openRunsChecked: number;
  openRunsTracked: number;
  /** Open runs this pass left unchecked, for want of their share of the rate (open-due.ts). */
  openRunsDeferred: number;
  /** How long the deferred open run unchecked longest had gone without a look, in seconds. */
  openRunsLongestUncheckedSeconds: number;
  pendingRetried: number;
  /** List requests by what they were for: where a pass's share of the key's rate went. */
  listPages: ListPages;
}

export interface ListPages {
  /** The live window (new runs and the lookback). */
  live: number;
  /** Open runs re-checked. */
  open: number;
  /** Reconciliation (a rolling step, or the whole horizon with --reconcile). */
  reconcile: number;
}

export function runPass(deps: SyncDeps, options: PassOptions = {}): Promise<PassResult> {
  const kind: PassKind = options.kind === 'snapshot' ? 'snapshot' : options.reconcile ? 'reconcile' : 'sync';
  return runOperation<PassResult>(deps, {
    kind,
    init: (base) => ({
      ...base,
      window: null,
      reconciled: null,
      rolling: null,
      runs: emptyRunCounts(),
      catalog: null,
      openRunsChecked: 0,
      openRunsTracked: 0,
      openRunsDeferred: 0,
      openRunsLongestUncheckedSeconds: 0,
      pendingRetried: 0,
      listPages: { live: 0, open: 0, reconcile: 0 },
    }),
    run: (d, result) => pass(d, options, result),
    export: options.export !== false,
    interrupted: 'the pass was interrupted; the next pass resumes where it stopped',
    audit: (r) => ({
      counts: {
        runs: r.runs,
        catalog: r.catalog?.tables ?? null,
        openRunsChecked: r.openRunsChecked,
        openRunsTracked: r.openRunsTracked,
        openRunsDeferred: r.openRunsDeferred,
        openRunsLongestUncheckedSeconds: r.openRunsLongestUncheckedSeconds,
        pendingRetried: r.pendingRetried,
        listPages: r.listPages,
        rolling: r.rolling,
        export: exportCounts(r.export),
      },
      window: r.window,
    }),
    summary: (r) => ({ runs: r.runs }),
    failed: (r, cause) => new PassError(r, cause),
  });
}

async function pass(deps: SyncDeps, options: PassOptions, result: PassResult): Promise<void> {
  deps.logger.info({ kind: result.kind }, 'pass started');
  // The catalog and the runs go side by side under the one budget: the catalog's few requests
  // and its load then cost the runs nothing. A failure of either stops the other.
  const inner = new AbortController();
  const stop = () => inner.abort(deps.signal.reason);
  if (deps.signal.aborted) stop();
  deps.signal.addEventListener('abort', stop, { once: true });
  const both: SyncDeps = { ...deps, signal: inner.signal };
  const halt = (e: unknown) => {
    inner.abort(e);
    throw e;
  };
  const settled = await Promise.allSettled([
    options.catalog === false ? Promise.resolve() : snapshotCatalog(both).then((c) => (result.catalog = c), halt),
    result.kind === 'snapshot' ? Promise.resolve() : syncRuns(both, options, result).catch(halt),
  ]);
  deps.signal.removeEventListener('abort', stop);
  const failed = settled.find((x): x is PromiseRejectedResult => x.status === 'rejected');
  // The first failure is the abort reason; the other half then failed only because of it.
  if (failed) throw deps.signal.aborted ? deps.signal.reason : (inner.signal.reason ?? failed.reason);
  for (const d of result.catalog?.denied ?? []) result.errors.push(deniedLine(d.resource, d.scope, d.message));
}

/** A pass that stopped: its result so far (committed work is kept) and why. */
export class PassError extends OperationError<PassResult> {
  override readonly name = 'PassError';
  get pass(): PassResult {
    return this.result;
  }
}

async function syncRuns(deps: SyncDeps, options: PassOptions, result: PassResult): Promise<void> {
  const pages = result.listPages;
  const counted = async <T>(part: keyof ListPages, work: () => Promise<T>): Promise<T> => {
    const before = result.runs.pages;
    try {
      return await work();
    } finally {
      pages[part] += result.runs.pages - before;
    }
  };
  try {
    let checked: string[] = [];
    const window = await counted('live', () => syncLiveWindow(deps, result.runs));
    result.window = window;
    const horizonStart = deps.now() - deps.settings.openRunHorizon;
    if (options.reconcile) {
      // Every run of the horizon is listed, the open ones with the rest.
      result.reconciled = await counted('reconcile', () => reconcileHorizon(deps, window.from, result.runs));
    } else {
      const open = await counted('open', () =>
        refreshOpenRuns(deps, horizonStart, window.from, result.runs, options.allOpen === true),
      );
      checked = open.checked;
      result.openRunsChecked = checked.length;
      result.openRunsDeferred = open.deferred;
      result.openRunsLongestUncheckedSeconds = Math.round(open.longestUnchecked / MICROS_PER_SECOND);
      result.rolling = await counted('reconcile', () => rollHorizon(deps, window.from, result.runs));
    }
    // What the pass's tail works on is read in one unit, and what it leaves written in another:
    // each unit opens the file afresh.
    const tail = await deps.gate.use(async (wh) => ({
      passes: await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_audit WHERE kind IN ('sync', 'reconcile')`),
      pending: await pendingRuns(wh),
      vanished: await vanishedRuns(wh),
    }));
    const passNumber = Number(tail.passes[0]?.n ?? 0);
    result.pendingRetried = await retryPending(deps, result.runs, passNumber, tail.pending);
    await probeVanished(deps, result.runs, tail.vanished);
    const listedFrom = options.reconcile ? horizonStart : window.from;
    const end = await deps.gate.use(async (wh) => ({
      unloadable: await unloadableRuns(wh, 5),
      tracked: await recordOpenRuns(wh, horizonStart, deps.now(), listedFrom, checked),
    }));
    result.errors.push(...unloadableLines(end.unloadable));
    result.openRunsTracked = end.tracked;
  } catch (e) {
    if (!(e instanceof PermissionError)) throw e;
    result.errors.push(deniedLine('runs', e.scope, e.message));
    deps.logger.error({ resource: 'runs', scope: e.scope }, 'the API key may not read runs');
  }
}

function deniedLine(resource: string, scope: string | null, message: string): string {
  return `the API key may not read ${resource}${scope ? `: it lacks the scope ${scope}` : ''} (${message})`;
}
