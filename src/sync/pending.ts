import type { SqlRunner } from '../warehouse/types.ts';
import { detailSource } from './detail-fetcher.ts';
import { runPipeline } from './load-pipeline.ts';
import { commitRunItems, lateDetails, type RunItem, UNLOADABLE } from './run-commit.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// Runs listed earlier whose detail could not be fetched then (the API failed past its retries, the
// run was not found, or its summary broke the schema) are fetched again at the end of every pass
// until they load. Each failure is counted; after MAX_ATTEMPTS a run stays on the list, visible in
// `runsync status`, but is no longer asked for at every pass, only at every tenth.

export const MAX_ATTEMPTS = 10;
const PER_ITEM = 100;

export interface PendingRun {
  id: string;
  attempts: number;
}

/** The runs on the pending list, oldest failure first. */
export function pendingRuns(db: SqlRunner): Promise<PendingRun[]> {
  return db.all<PendingRun>(`SELECT run_id AS id, attempts FROM _sync_pending_runs ORDER BY first_failed_at, run_id`);
}

/** Fetches the runs of `rows` (the pending list) due at pass `passNumber`; how many were due. */
export async function retryPending(
  deps: SyncDeps,
  counts: RunCounts,
  passNumber: number,
  rows: readonly PendingRun[],
): Promise<number> {
  const due = rows.filter((r) => r.attempts < MAX_ATTEMPTS || passNumber % 10 === 0).map((r) => r.id);
  if (due.length === 0) return 0;
  deps.logger.info({ runs: due.length }, 'fetching run details that failed before');
  const fetcher = detailSource(deps);
  try {
    await runPipeline<RunItem>(
      async (push) => {
        for (let i = 0; i < due.length; i += PER_ITEM) {
          const ids = due.slice(i, i + PER_ITEM);
          await push({ ready: fetcher.fetch(ids), listed: new Map(ids.map((id) => [id, null])), counts: {} });
        }
      },
      (items) => commitRunItems(deps, items, counts),
      { ahead: deps.settings.bufferedPages, signal: deps.signal, followUp: lateDetails },
    );
  } finally {
    fetcher.close();
  }
  return due.length;
}

/** Runs fetched whose payload the warehouse refused: on the pending list, named by every pass. */
export async function unloadableRuns(db: SqlRunner, limit = 10): Promise<{ id: string; error: string; n: number }[]> {
  const rows = await db.all<{ id: string; error: string; n: bigint }>(
    `SELECT run_id AS id, last_error AS error, count(*) OVER () AS n FROM _sync_pending_runs
     WHERE starts_with(last_error, $1) ORDER BY first_failed_at, run_id LIMIT $2`,
    [UNLOADABLE, limit],
  );
  return rows.map((r) => ({ id: r.id, error: r.error.slice(UNLOADABLE.length), n: Number(r.n) }));
}

/** One line per run the warehouse refused, for a pass's problems (the pass then exits 1). */
export function unloadableLines(runs: readonly { id: string; error: string; n: number }[]): string[] {
  const lines = runs.map(
    (r) => `run ${r.id} could not be loaded into the warehouse (${r.error}); every pass tries it again`,
  );
  const more = (runs[0]?.n ?? 0) - runs.length;
  if (more > 0) lines.push(`${more} more run(s) could not be loaded; \`runsync status\` lists them`);
  return lines;
}
