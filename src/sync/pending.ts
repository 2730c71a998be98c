import { detailSource } from './detail-fetcher.ts';
import { runPipeline } from './load-pipeline.ts';
import { commitRunItems, lateDetails, type RunItem } from './run-commit.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// Runs listed earlier whose detail could not be fetched then (the API failed past its retries, the
// run was not found, or its summary broke the schema) are fetched again at the end of every pass
// until they load. Each failure is counted; after MAX_ATTEMPTS a run stays on the list, visible in
// `runsync status`, but is no longer asked for at every pass, only at every tenth.

export const MAX_ATTEMPTS = 10;
const PER_ITEM = 100;

export async function retryPending(deps: SyncDeps, counts: RunCounts, passNumber: number): Promise<number> {
  const rows = await deps.gate.use((wh) =>
    wh.all<{ id: string; attempts: number }>(
      `SELECT run_id AS id, attempts FROM _sync_pending_runs ORDER BY first_failed_at, run_id`,
    ),
  );
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
