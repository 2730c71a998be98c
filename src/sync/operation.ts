import { AuthError } from '../api/index.ts';
import { type BudgetUse, budgetUse } from '../budget/index.ts';
import { exportParquet } from '../export/parquet.ts';
import { withLogFields } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import { compactionDue } from '../warehouse/compact.ts';
import {
  finishAudit,
  type PassKind,
  type PassStatus,
  passId,
  RequestMeter,
  type RequestTally,
  startAudit,
} from './audit.ts';
import { compactNow } from './compact-due.ts';
import { Freshness, type FreshnessSummary } from './freshness.ts';
import type { SyncDeps } from './types.ts';
import type { Window } from './window.ts';

// What every unit of sync work shares, whatever it reads (a pass, a backfill, a backfill's slice
// in the worker): an id every log line carries, a row in _sync_audit written when it starts and
// completed when it ends, the requests it made, the Parquet export of what it changed, and one
// way to say why it stopped. Committed work is always kept; the result says what was done.

export interface ExportSummary {
  dates: string[];
  tables: string[];
  written: string[];
  removed: string[];
}

/** The part of every result that the operation itself fills in. */
export interface OperationResult {
  id: string;
  kind: PassKind;
  status: PassStatus;
  startedAt: Micros;
  durationMs: number;
  requests: RequestTally;
  /** One line per problem, for people. */
  errors: string[];
  export: ExportSummary | null;
  /** Lag from each loaded run's change to the warehouse and to Parquet (null: not measured). */
  freshness: FreshnessSummary | null;
  /** What the rate budget had learned by the end, and how much of the key's rate this used. */
  rateBudget: BudgetUse | null;
}

export interface OperationPlan<R extends OperationResult> {
  kind: PassKind;
  /** Fields every log line of the operation carries besides its id. */
  logFields?: Record<string, unknown>;
  /** The result, from the fields the operation fills in. */
  init(base: OperationResult): R;
  /** The work; it may record problems in `result.errors`, which make the result "partial". */
  run(deps: SyncDeps, result: R): Promise<void>;
  /** Write the Parquet export once the work is done. */
  export: boolean;
  /** What to tell a person when the operation was stopped (SIGTERM, a job handed back). */
  interrupted: string;
  /** The audit row's counts and created-time window. */
  audit(result: R): { counts: unknown; window: Window | null };
  /** Logged with the closing line. */
  summary(result: R): Record<string, unknown>;
  /** The error thrown when the operation stops, carrying its result. */
  failed(result: R, cause: unknown): Error;
}

export async function runOperation<R extends OperationResult>(deps: SyncDeps, plan: OperationPlan<R>): Promise<R> {
  await readApiClock(deps);
  const startedAt = deps.now();
  const id = passId(startedAt);
  // Every line logged meanwhile carries the id, the client's and the warehouse's too.
  return withLogFields({ passId: id, ...plan.logFields }, () => operate(deps, plan, id, startedAt));
}

async function operate<R extends OperationResult>(
  deps: SyncDeps,
  plan: OperationPlan<R>,
  id: string,
  startedAt: Micros,
): Promise<R> {
  const lock = await deps.passLock?.();
  try {
    return await operateLocked(deps, plan, id, startedAt);
  } finally {
    lock?.release();
  }
}

async function operateLocked<R extends OperationResult>(
  deps: SyncDeps,
  plan: OperationPlan<R>,
  id: string,
  startedAt: Micros,
): Promise<R> {
  const t0 = performance.now();
  const meter = await RequestMeter.begin(deps);
  const result = plan.init({
    id,
    kind: plan.kind,
    status: 'running',
    startedAt,
    durationMs: 0,
    requests: await meter.tally(),
    errors: [],
    export: null,
    freshness: null,
    rateBudget: null,
  });
  await startAudit(deps, id, plan.kind, startedAt);
  // Passes measure how fresh they leave things; a backfill's runs are history, not news, and what
  // verify repairs is old news.
  const freshness = plan.kind === 'backfill' || plan.kind === 'verify' ? undefined : new Freshness();
  const measured: SyncDeps = freshness ? { ...deps, freshness } : deps;
  let failure: unknown = null;
  try {
    await plan.run(measured, result);
    if (plan.export) {
      // Whether the file wants compacting is read in the export's unit: no open of its own.
      const { e, due } = await deps.gate.use(async (wh) => ({
        e: await exportParquet(wh, { target: deps.parquet, lanes: 1 }),
        due: await compactionDue(wh).catch(() => false),
      }));
      result.export = { dates: e.dates, tables: e.tables, written: e.written, removed: e.removed };
      freshness?.exported(deps.now());
      if (due) await compactNow(deps);
    }
    result.status = result.errors.length ? 'partial' : 'ok';
  } catch (e) {
    result.status = deps.signal.aborted ? 'interrupted' : 'failed';
    result.errors.push(deps.signal.aborted ? plan.interrupted : failureLine(e, deps));
    failure = e ?? new Error('failed');
  } finally {
    result.durationMs = Math.round(performance.now() - t0);
    result.freshness = freshness?.summary() ?? null;
    result.requests = await meter.tally();
    if (deps.budget) {
      const snap = await deps.budget.snapshot().catch(() => null);
      if (snap) result.rateBudget = budgetUse(snap, result.requests.requests, result.durationMs);
    }
    // A stop that was asked for (SIGTERM, Ctrl-C, a job handed back) is not a failure.
    deps.logger[result.status === 'ok' || result.status === 'interrupted' ? 'info' : 'error'](
      {
        status: result.status,
        durationMs: result.durationMs,
        requests: result.requests.requests,
        rateLimited: result.requests.rateLimited,
        errors: result.errors,
        ...plan.summary(result),
      },
      `${plan.kind === 'backfill' || plan.kind === 'verify' ? plan.kind : 'pass'} finished`,
    );
    const { counts, window } = plan.audit(result);
    await finishAudit(deps, id, {
      status: result.status,
      finishedAt: deps.now(),
      counts: {
        ...(counts as object),
        ...(result.freshness ? { freshness: result.freshness } : {}),
        ...(result.rateBudget ? { rate_budget: result.rateBudget } : {}),
        clockSkewMs: deps.api.serverClock.reading().offsetMs,
      },
      tally: result.requests,
      errors: result.errors,
      window,
    }).catch((err: unknown) => deps.logger.error({ err }, 'could not record the operation in _sync_audit'));
  }
  if (failure !== null) throw plan.failed(result, failure);
  return result;
}

/**
 * Reads the API's clock before anything is timed by it, when nothing has told it yet (one request,
 * tried once). A failure is left to the work itself to meet and report.
 */
async function readApiClock(deps: SyncDeps): Promise<void> {
  if (!deps.apiClock || deps.apiClock.known || deps.signal.aborted) return;
  await deps.api.readClock(deps.signal).catch((e: unknown) => {
    deps.logger.debug(
      { error: String(e) },
      "could not read the API's clock; this machine's is used until a response tells it",
    );
  });
}

/** An operation that stopped: its result so far (committed work is kept) and why. */
export class OperationError<R extends OperationResult> extends Error {
  constructor(
    readonly result: R,
    override readonly cause: unknown,
  ) {
    super(result.errors[result.errors.length - 1] ?? `the ${result.kind} failed`);
  }
}

/** The export's part of an audit row. */
export function exportCounts(e: ExportSummary | null): { dates: number; tables: string[]; files: number } | null {
  return e ? { dates: e.dates.length, tables: e.tables, files: e.written.length } : null;
}

/** Why an operation stopped, in one line a person can act on. */
export function failureLine(e: unknown, deps: Pick<SyncDeps, 'gate' | 'settings'>): string {
  const dir = deps.gate.dir;
  if (e instanceof AuthError) {
    const setting = deps.settings.keySetting ?? 'RUNSYNC_API_KEY';
    const said = e.detail.replace(/^the API key was refused: /, '');
    const request = e.requestId ? `, request ${e.requestId}` : '';
    return `the API refused the key in ${setting} (HTTP ${e.status ?? 401} ${e.code ?? 'unauthenticated'}: ${said}${request}); correct it or issue a new key`;
  }
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown }).code;
  if (code === 'ENOSPC' || /No space left on device/i.test(message)) {
    return (
      `the disk holding ${dir} is full (${message}); what was committed before is kept, nothing ` +
      'half-written; free space and run again'
    );
  }
  const denied = ['EROFS', 'EACCES', 'EPERM'].includes(String(code));
  if (denied || /Read-only file system|Permission denied/i.test(message)) {
    return `cannot write to ${dir} (${message}); the warehouse directory must be writable by this user`;
  }
  return message;
}
