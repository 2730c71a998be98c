import { AuthError, PermissionError } from '../api/index.ts';
import { exportParquet, type ExportResult } from '../export/export-parquet.ts';
import { withLogFields } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import { finishAudit, passId, RequestMeter, startAudit, type PassKind, type PassStatus, type RequestTally } from './sync-audit.ts';
import { snapshotCatalog, type SnapshotResult } from './sync-catalog.ts';
import { reconcileHorizon, syncLiveWindow } from './sync-live.ts';
import { recordOpenRuns, refreshOpenRuns } from './sync-open-runs.ts';
import { retryPending } from './sync-pending.ts';
import type { Window } from './sync-window.ts';
import { emptyRunCounts, type RunCounts, type SyncDeps } from './sync-types.ts';

// One pass, in the contract's order: catalog snapshot, the live runs window, the open runs created
// before it, (with reconcile: every run of the horizon instead), the details that failed before,
// then the Parquet export. A resource the key may not read is reported and the rest still syncs;
// the pass is then "partial" (exit 1). A refused key stops the pass at once: what was committed
// stays, the rest is picked up by the next pass.

export interface PassOptions {
  kind?: Extract<PassKind, 'sync' | 'snapshot'>;
  reconcile?: boolean;
  /** Write the Parquet export at the end (default true). */
  export?: boolean;
  /** Snapshot the catalog (default true; the worker snapshots it on its own schedule). */
  catalog?: boolean;
}

export interface PassResult {
  id: string;
  kind: PassKind;
  status: PassStatus;
  startedAt: Micros;
  durationMs: number;
  window: Window | null;
  reconciled: Window | null;
  runs: RunCounts;
  catalog: SnapshotResult | null;
  openRunsChecked: number;
  openRunsTracked: number;
  pendingRetried: number;
  export: Pick<ExportResult, 'dates' | 'tables' | 'written' | 'removed'> | null;
  requests: RequestTally;
  /** One line per problem, for people. */
  errors: string[];
}

export async function runPass(base: SyncDeps, options: PassOptions = {}): Promise<PassResult> {
  const startedAt = base.now();
  const id = passId(startedAt);
  // Every line logged during the pass carries its id, the client's and the warehouse's too.
  return withLogFields({ passId: id }, () => pass(base, options, startedAt, id));
}

async function pass(deps: SyncDeps, options: PassOptions, startedAt: number, id: string): Promise<PassResult> {
  const t0 = performance.now();
  const kind: PassKind = options.kind === 'snapshot' ? 'snapshot' : options.reconcile ? 'reconcile' : 'sync';
  const meter = await RequestMeter.begin(deps);
  const result: PassResult = {
    id,
    kind,
    status: 'running',
    startedAt,
    durationMs: 0,
    window: null,
    reconciled: null,
    runs: emptyRunCounts(),
    catalog: null,
    openRunsChecked: 0,
    openRunsTracked: 0,
    pendingRetried: 0,
    export: null,
    requests: await meter.tally(),
    errors: [],
  };
  await startAudit(deps, id, kind, startedAt);
  deps.logger.info({ kind }, 'pass started');
  let failure: unknown = null;
  try {
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
      kind === 'snapshot' ? Promise.resolve() : syncRuns(both, options, result).catch(halt),
    ]);
    deps.signal.removeEventListener('abort', stop);
    const failed = settled.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    // The first failure is the abort reason; the other half then failed only because of it.
    if (failed) throw deps.signal.aborted ? deps.signal.reason : (inner.signal.reason ?? failed.reason);
    for (const d of result.catalog?.denied ?? []) result.errors.push(deniedLine(d.resource, d.scope, d.message));
    if (options.export !== false) {
      const e = await deps.gate.use((wh) => exportParquet(wh));
      result.export = { dates: e.dates, tables: e.tables, written: e.written, removed: e.removed };
    }
    result.status = result.errors.length ? 'partial' : 'ok';
  } catch (e) {
    result.status = deps.signal.aborted ? 'interrupted' : 'failed';
    result.errors.push(failureLine(e, deps.signal, deps.gate.dir));
    failure = e ?? new Error('failed');
  } finally {
    result.durationMs = Math.round(performance.now() - t0);
    result.requests = await meter.tally();
    const level = result.status === 'ok' ? 'info' : 'error';
    deps.logger[level]({ status: result.status, durationMs: result.durationMs, requests: result.requests.requests, rateLimited: result.requests.rateLimited, runs: result.runs, errors: result.errors }, 'pass finished');
    await finishAudit(deps, id, {
      status: result.status,
      finishedAt: deps.now(),
      counts: { runs: result.runs, catalog: result.catalog?.tables ?? null, openRunsChecked: result.openRunsChecked, openRunsTracked: result.openRunsTracked, pendingRetried: result.pendingRetried, export: result.export ? { dates: result.export.dates.length, tables: result.export.tables, files: result.export.written.length } : null },
      tally: result.requests,
      errors: result.errors,
      window: result.window,
    }).catch((err: unknown) => deps.logger.error({ err }, 'could not record the pass in _sync_audit'));
  }
  if (failure !== null) throw new PassError(result, failure);
  return result;
}

/** A pass that stopped: its result so far (committed work is kept) and why. */
export class PassError extends Error {
  override readonly name = 'PassError';
  constructor(
    readonly pass: PassResult,
    override readonly cause: unknown,
  ) {
    super(pass.errors[pass.errors.length - 1] ?? 'the pass failed');
  }
}

async function syncRuns(deps: SyncDeps, options: PassOptions, result: PassResult): Promise<void> {
  try {
    const window = await syncLiveWindow(deps, result.runs);
    result.window = window;
    const horizonStart = deps.now() - deps.settings.openRunHorizon;
    if (options.reconcile) {
      // Every run of the horizon is listed, the open ones with the rest.
      result.reconciled = await reconcileHorizon(deps, window.from, result.runs);
    } else {
      result.openRunsChecked = await refreshOpenRuns(deps, horizonStart, window.from, result.runs);
    }
    const passes = await deps.gate.use((wh) => wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_audit WHERE kind IN ('sync', 'reconcile')`));
    result.pendingRetried = await retryPending(deps, result.runs, Number(passes[0]?.n ?? 0));
    result.openRunsTracked = await deps.gate.use((wh) => recordOpenRuns(wh, horizonStart, deps.now()));
  } catch (e) {
    if (!(e instanceof PermissionError)) throw e;
    result.errors.push(deniedLine('runs', e.scope, e.message));
    deps.logger.error({ resource: 'runs', scope: e.scope }, 'the API key may not read runs');
  }
}

function deniedLine(resource: string, scope: string | null, message: string): string {
  return `the API key may not read ${resource}${scope ? `: it lacks the scope ${scope}` : ''} (${message})`;
}

function failureLine(e: unknown, signal: AbortSignal, dir: string): string {
  if (signal.aborted) return 'the pass was interrupted; the next pass resumes where it stopped';
  if (e instanceof AuthError) return `the API refused the key (401 unauthenticated): ${e.message}; check RUNSYNC_API_KEY`;
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown }).code;
  if (code === 'ENOSPC' || /No space left on device/i.test(message)) {
    return `the disk holding ${dir} is full (${message}); what was committed before is kept, nothing half-written; free space and run again`;
  }
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM' || /Read-only file system|Permission denied/i.test(message)) {
    return `cannot write to ${dir} (${message}); the warehouse directory must be writable by this user`;
  }
  return message;
}
