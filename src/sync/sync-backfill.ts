import { createHash } from 'node:crypto';
import { runListQueries, type RunListFilter } from '../api/index.ts';
import { exportParquet } from '../export/export-parquet.ts';
import { withLogFields } from '../util/logger.ts';
import type { Micros } from '../util/timestamp.ts';
import { toJsonText } from '../warehouse/json-text.ts';
import { finishAudit, passId, RequestMeter, startAudit, type PassStatus, type RequestTally } from './sync-audit.ts';
import { newWalk, readWalk, walkRuns, type WalkState } from './sync-walk.ts';
import { emptyRunCounts, type RunCounts, type SyncDeps } from './sync-types.ts';

// A backfill replays a created-time range, a slice (a day by default) at a time, with any filters
// of the runs list. It never moves the live watermark. Its position is saved with every page under
// a key derived from its arguments, so running the same command again resumes it; once finished,
// the same command runs it again from the start. It is safe beside scheduled passes: loads wait
// their turn at the warehouse, and a payload never replaces a newer one.

export interface BackfillSpec {
  from: Micros;
  to: Micros;
  filter: Omit<RunListFilter, 'createdAfter' | 'createdBefore'>;
  force: boolean;
  sliceMicros: Micros;
}

export interface BackfillResult {
  id: string;
  key: string;
  status: PassStatus;
  resumed: boolean;
  slices: number;
  runs: RunCounts;
  requests: RequestTally;
  durationMs: number;
  exportedDates: number;
  errors: string[];
}

/** The bookkeeping key of a backfill: the same arguments, the same key. */
export function backfillKey(spec: BackfillSpec): string {
  const digest = createHash('sha256').update(toJsonText([spec.from, spec.to, spec.filter, spec.force, spec.sliceMicros])).digest('hex');
  return `backfill.${digest.slice(0, 12)}`;
}

/** Refuses a bad range or filter before any request (exit 2 in the CLI). */
export function checkBackfill(spec: BackfillSpec): void {
  if (!(spec.from < spec.to)) throw new RangeError('--from must be before --to');
  if (!(spec.sliceMicros > 0)) throw new RangeError('--slice must be a positive duration');
  runListQueries({ ...spec.filter, createdAfter: spec.from, createdBefore: spec.to }, { split: true });
}

export interface BackfillOptions {
  onProgress?: (state: WalkState, slices: number) => void;
  /** Write the Parquet export at the end (default true; a queued backfill exports once, at its end). */
  export?: boolean;
}

export async function runBackfill(base: SyncDeps, spec: BackfillSpec, options: BackfillOptions = {}): Promise<BackfillResult> {
  checkBackfill(spec);
  const key = backfillKey(spec);
  const startedAt = base.now();
  const id = passId(startedAt);
  return withLogFields({ passId: id, backfill: key }, () => backfill(base, spec, options, key, startedAt, id));
}

async function backfill(deps: SyncDeps, spec: BackfillSpec, options: BackfillOptions, key: string, startedAt: number, id: string): Promise<BackfillResult> {
  const onProgress = options.onProgress;
  const t0 = performance.now();
  const meter = await RequestMeter.begin(deps);
  const saved = await readWalk(deps, key);
  const resumed = saved !== undefined && !saved.done;
  const walk = resumed ? saved : newWalk({ from: spec.from, to: spec.to, sliceMicros: spec.sliceMicros, filter: spec.filter, force: spec.force }, startedAt);
  const slices = Math.ceil((spec.to - spec.from) / spec.sliceMicros);
  const result: BackfillResult = { id, key, status: 'running', resumed, slices, runs: emptyRunCounts(), requests: await meter.tally(), durationMs: 0, exportedDates: 0, errors: [] };
  await startAudit(deps, id, 'backfill', startedAt);
  deps.logger.info({ from: spec.from, to: spec.to, slices, resumed, at: resumed ? walk.position.slice : 0 }, resumed ? 'backfill resumed' : 'backfill started');
  let failure: unknown = null;
  try {
    await walkRuns(deps, key, walk, {
      onProgress: (state, n) => {
        deps.logger.info({ slice: Math.min(state.position.slice, n), slices: n, listed: state.listed, fetched: state.fetched }, 'backfill progress');
        onProgress?.(state, n);
      },
    }, result.runs);
    if (options.export !== false) {
      const e = await deps.gate.use((wh) => exportParquet(wh));
      result.exportedDates = e.dates.length;
    }
    result.status = 'ok';
  } catch (e) {
    failure = e;
    result.status = deps.signal.aborted ? 'interrupted' : 'failed';
    result.errors.push(deps.signal.aborted ? 'the backfill was interrupted; the same command resumes it' : e instanceof Error ? e.message : String(e));
  } finally {
    result.durationMs = Math.round(performance.now() - t0);
    result.requests = await meter.tally();
    await finishAudit(deps, id, {
      status: result.status,
      finishedAt: deps.now(),
      counts: { runs: result.runs, backfill: key, slices },
      tally: result.requests,
      errors: result.errors,
      window: { from: spec.from, to: spec.to },
    }).catch((err: unknown) => deps.logger.error({ err }, 'could not record the backfill in _sync_audit'));
  }
  if (failure !== null) throw new BackfillError(result, failure);
  return result;
}

export class BackfillError extends Error {
  override readonly name = 'BackfillError';
  constructor(
    readonly backfill: BackfillResult,
    override readonly cause: unknown,
  ) {
    super(backfill.errors[backfill.errors.length - 1] ?? 'the backfill failed');
  }
}
