import { createHash } from 'node:crypto';
import { type RunListFilter, runListQueries } from '../api/index.ts';
import type { Micros } from '../util/timestamp.ts';
import { toJsonText } from '../warehouse/json-text.ts';
import { probeVanished } from './deletions.ts';
import { OperationError, type OperationResult, runOperation } from './operation.ts';
import { emptyRunCounts, type RunCounts, type SyncDeps } from './types.ts';
import { newWalk, readWalk, type WalkState, walkRuns } from './walk.ts';

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

export interface BackfillResult extends OperationResult {
  key: string;
  resumed: boolean;
  slices: number;
  runs: RunCounts;
}

/** The bookkeeping key of a backfill: the same arguments, the same key. */
export function backfillKey(spec: BackfillSpec): string {
  const digest = createHash('sha256')
    .update(toJsonText([spec.from, spec.to, spec.filter, spec.force, spec.sliceMicros]))
    .digest('hex');
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

export function runBackfill(
  deps: SyncDeps,
  spec: BackfillSpec,
  options: BackfillOptions = {},
): Promise<BackfillResult> {
  checkBackfill(spec);
  const key = backfillKey(spec);
  const slices = Math.ceil((spec.to - spec.from) / spec.sliceMicros);
  return runOperation<BackfillResult>(deps, {
    kind: 'backfill',
    logFields: { backfill: key },
    init: (base) => ({ ...base, key, resumed: false, slices, runs: emptyRunCounts() }),
    run: (d, result) => backfill(d, spec, options, result),
    export: options.export !== false,
    interrupted: 'the backfill was interrupted; the same command resumes it',
    audit: (r) => ({ counts: { runs: r.runs, backfill: key, slices }, window: { from: spec.from, to: spec.to } }),
    summary: (r) => ({ runs: r.runs }),
    failed: (r, cause) => new BackfillError(r, cause),
  });
}

async function backfill(deps: SyncDeps, spec: BackfillSpec, options: BackfillOptions, result: BackfillResult) {
  const saved = await readWalk(deps, result.key);
  result.resumed = saved !== undefined && !saved.done;
  const walk = result.resumed
    ? (saved as WalkState)
    : newWalk(
        { from: spec.from, to: spec.to, sliceMicros: spec.sliceMicros, filter: spec.filter, force: spec.force },
        result.startedAt,
      );
  deps.logger.info(
    { from: spec.from, to: spec.to, slices: result.slices, resumed: result.resumed, at: walk.position.slice },
    result.resumed ? 'backfill resumed' : 'backfill started',
  );
  const onProgress = (state: WalkState, n: number) => {
    // Counted from 1, as people count them: "slice 3 of 5".
    const slice = Math.min(state.position.slice + 1, n);
    deps.logger.info({ slice, slices: n, listed: state.listed, fetched: state.fetched }, 'backfill progress');
    options.onProgress?.(state, n);
  };
  await walkRuns(deps, result.key, walk, { onProgress }, result.runs);
  await probeVanished(deps, result.runs);
}

/** A backfill that stopped: what it did so far (its position is saved) and why. */
export class BackfillError extends OperationError<BackfillResult> {
  override readonly name = 'BackfillError';
  get backfill(): BackfillResult {
    return this.result;
  }
}
