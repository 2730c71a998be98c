import { formatTimestamp, MICROS_PER_DAY, type Micros } from '../util/timestamp.ts';
import { beginListing, coverTo, dropStream, type ListedRuns, stageListed } from '../warehouse/completeness.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import type { SqlParams, SqlRunner } from '../warehouse/types.ts';
import { detailSource } from './detail-fetcher.ts';
import { listedRuns } from './ledger.ts';
import { runPipeline } from './load-pipeline.ts';
import { OperationError, type OperationResult, runOperation } from './operation.ts';
import { commitRunItems, lateDetails, type RunItem } from './run-commit.ts';
import { readSlice } from './slice.ts';
import { emptyRunCounts, type RunCounts, type SyncDeps } from './types.ts';
import { slices } from './window.ts';

// `runsync verify`: re-lists whole UTC days by their summaries alone and compares them with the
// warehouse, run by run: listed but missing, stored with an older updated_at than listed (stale),
// stored but not listed. Unless it is a dry run it then fetches exactly the missing and the stale
// through the usual detail path, and the days become rows of the completeness ledger. What was
// listed waits in _sync_listed, so the comparison is SQL and memory does not grow with the range.

/** The ledger's stream for verify's listing. */
export const VERIFY_STREAM = 'verify';

export interface VerifySpec {
  /** Start of the first day (UTC midnight). */
  from: Micros;
  /** End of the last day (UTC midnight, excluded). */
  to: Micros;
  dryRun: boolean;
}

export interface VerifyDiff {
  listed: number;
  missing: number;
  stale: number;
  /** Stored runs of the range that the API did not list. */
  unlisted: number;
  /** A few ids of each, for people. */
  examples: { missing: string[]; stale: string[]; unlisted: string[] };
}

export interface VerifyResult extends OperationResult {
  spec: VerifySpec;
  diff: VerifyDiff | null;
  /** Days written to the ledger (0 on a dry run). */
  days: number;
  runs: RunCounts;
}

/** Refuses a range that is not whole days, or is empty. */
export function checkVerify(spec: Pick<VerifySpec, 'from' | 'to'>): void {
  if (spec.from % MICROS_PER_DAY !== 0 || spec.to % MICROS_PER_DAY !== 0)
    throw new RangeError('verify reads whole UTC days: --from and --to must be dates');
  if (!(spec.from < spec.to)) throw new RangeError('--from must be before --to');
}

export function runVerify(deps: SyncDeps, spec: VerifySpec): Promise<VerifyResult> {
  checkVerify(spec);
  return runOperation<VerifyResult>(deps, {
    kind: 'verify',
    init: (base) => ({ ...base, spec, diff: null, days: 0, runs: emptyRunCounts() }),
    run: (d, result) => verify(d, spec, result),
    export: !spec.dryRun,
    interrupted: 'verify was interrupted; nothing it listed was kept, run it again',
    audit: (r) => ({
      counts: { runs: r.runs, verify: { dryRun: spec.dryRun, days: r.days, ...r.diff, examples: undefined } },
      window: { from: spec.from, to: spec.to },
    }),
    summary: (r) => ({ diff: r.diff, days: r.days }),
    failed: (r, cause) => new VerifyError(r, cause),
  });
}

async function verify(deps: SyncDeps, spec: VerifySpec, result: VerifyResult): Promise<void> {
  const stage = (fn: (tx: SqlRunner) => Promise<void>) => deps.gate.use((wh) => wh.transaction(fn));
  await stage(async (tx) => {
    await dropStream(tx, VERIFY_STREAM);
    await beginListing(tx, VERIFY_STREAM, spec.from, deps.now());
  });
  try {
    await listRange(deps, spec, result.runs, stage);
    result.diff = await deps.gate.use((wh) => compare(wh, spec));
    deps.logger.info({ ...result.diff, examples: undefined }, 'verify compared the listing with the warehouse');
    if (spec.dryRun) return;
    await fetchDiffering(deps, result.runs);
    result.days = await deps.gate.use((wh) =>
      wh.transaction((tx) => coverTo(tx, VERIFY_STREAM, spec.to, 'verify', deps.now())),
    );
  } finally {
    await stage((tx) => dropStream(tx, VERIFY_STREAM)).catch((e: unknown) =>
      deps.logger.warn({ error: String(e) }, 'could not clear what verify listed; the next verify does'),
    );
  }
}

/** Summaries held before they are staged: each turn at the warehouse opens the file. */
const STAGE_BATCH = 10_000;

/** Lists every day of the range and stages what it lists, a batch of summaries at a time. */
async function listRange(
  deps: SyncDeps,
  spec: VerifySpec,
  counts: RunCounts,
  stage: (fn: (tx: SqlRunner) => Promise<void>) => Promise<void>,
): Promise<void> {
  let held: ListedRuns = { ids: [], createdUs: [], updatedUs: [] };
  const flush = async () => {
    const runs = held;
    held = { ids: [], createdUs: [], updatedUs: [] };
    await stage((tx) => stageListed(tx, VERIFY_STREAM, runs, deps.now()));
  };
  for (const slice of slices(spec, MICROS_PER_DAY)) {
    const at = { part: 0, cursor: null };
    const logFields = { verify: formatTimestamp(slice.from) };
    const pages = readSlice(deps, slice, at, { filter: {}, counts, signal: deps.signal, logFields });
    for await (const { page } of pages) {
      counts.pages++;
      counts.listed += page.received;
      const runs = listedRuns(page);
      held.ids.push(...runs.ids);
      held.createdUs.push(...runs.createdUs);
      held.updatedUs.push(...runs.updatedUs);
      if (held.ids.length >= STAGE_BATCH) await flush();
    }
  }
  await flush();
}

/** One row per listed run, at its newest listing. */
const LISTED = `SELECT id, max(updated_us) AS u FROM _sync_listed WHERE stream = '${VERIFY_STREAM}' GROUP BY id`;
// A run marked deleted that the API lists again is missing: fetching it restores it.
const MISSING = `FROM (${LISTED}) l ANTI JOIN (SELECT id FROM runs WHERE deleted_at IS NULL) r ON r.id = l.id`;
const STALE = `FROM (${LISTED}) l JOIN runs r ON r.id = l.id WHERE epoch_us(r.updated_at) < l.u AND r.deleted_at IS NULL`;

const EXAMPLES = 5;

async function compare(db: SqlRunner, spec: VerifySpec): Promise<VerifyDiff> {
  const unlisted = `FROM runs r ANTI JOIN (${LISTED}) l ON l.id = r.id
    WHERE r.created_at >= ${US_TO_TSTZ('$1')} AND r.created_at < ${US_TO_TSTZ('$2')} AND r.deleted_at IS NULL`;
  const range = [BigInt(spec.from), BigInt(spec.to)];
  const count = async (from: string, params: SqlParams = []) =>
    Number((await db.all<{ n: bigint }>(`SELECT count(*) AS n ${from}`, params))[0]?.n ?? 0);
  const ids = async (from: string, id: string, params: SqlParams = []) =>
    (await db.all<{ id: string }>(`SELECT ${id} AS id ${from} ORDER BY 1 LIMIT ${EXAMPLES}`, params)).map((r) => r.id);
  return {
    listed: await count(`FROM (${LISTED})`),
    missing: await count(MISSING),
    stale: await count(STALE),
    unlisted: await count(unlisted, range),
    examples: {
      missing: await ids(MISSING, 'l.id'),
      stale: await ids(STALE, 'l.id'),
      unlisted: await ids(unlisted, 'r.id', range),
    },
  };
}

/** Details asked for at once. */
const PER_ITEM = 100;

/** Fetches the listed runs missing or stale in the warehouse, a page's worth at a time. */
async function fetchDiffering(deps: SyncDeps, counts: RunCounts): Promise<void> {
  const fetcher = detailSource(deps);
  try {
    await runPipeline<RunItem>(
      async (push) => {
        let after = '';
        for (;;) {
          const rows = await deps.gate.use((wh) =>
            wh.all<{ id: string; u: bigint | null }>(
              `SELECT id, u FROM (SELECT l.id, l.u ${MISSING} UNION ALL SELECT l.id, l.u ${STALE})
               WHERE id > $1 ORDER BY id LIMIT ${PER_ITEM}`,
              [after],
            ),
          );
          if (rows.length === 0) return;
          after = rows[rows.length - 1]?.id as string;
          const ids = rows.map((r) => r.id);
          const listed = new Map(rows.map((r) => [r.id, r.u === null ? null : formatTimestamp(Number(r.u))]));
          await push({ ready: fetcher.fetch(ids), listed, counts: {} });
        }
      },
      (items) => commitRunItems(deps, items, counts),
      { ahead: deps.settings.bufferedPages, signal: deps.signal, followUp: lateDetails },
    );
  } finally {
    fetcher.close();
  }
}

/** A verify that stopped: what it did so far and why. */
export class VerifyError extends OperationError<VerifyResult> {
  override readonly name = 'VerifyError';
}
