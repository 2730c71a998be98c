import { FetchPool, NotFoundError, type RunDetail } from '../api/index.ts';
import { keepVanished, markDeleted, vanishedRuns } from '../warehouse/deletions.ts';
import type { DetailBatch, DetailResult } from './detail-fetcher.ts';
import { commitRunItems, type RunItem } from './run-commit.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// The runs a whole listing of their created-time slice no longer showed (set aside by the walks,
// src/warehouse/deletions.ts), asked for by id at the end of a pass: one detail request each,
// made only for such runs. not_found (whatever its status, as the errors are classified) makes a
// run deleted; a detail that answers is loaded as any fetch (the run had moved, or came back);
// another failure leaves it set aside for the next pass.

/** Runs asked for per commit. */
const PER_COMMIT = 100;

/** Asks for the runs set aside (`ids`, when the caller read them already); how many were found deleted. */
export async function probeVanished(deps: SyncDeps, counts: RunCounts, ids?: readonly string[]): Promise<number> {
  ids ??= await deps.gate.use((wh) => vanishedRuns(wh));
  if (ids.length === 0) return 0;
  deps.logger.info({ runs: ids.length }, 'asking for runs a whole listing of their day no longer showed');
  const get = (id: string, signal: AbortSignal) => deps.api.getRun(id, { signal });
  const pool = new FetchPool<RunDetail>(get, deps.api.inFlightBound(deps.settings.detailConcurrency, 1), deps.signal);
  const mode = deps.settings.deletes ?? 'soft';
  let deleted = 0;
  try {
    for (let i = 0; i < ids.length; i += PER_COMMIT) {
      const results = await pool.all(ids.slice(i, i + PER_COMMIT));
      const found: DetailResult[] = [];
      const gone: string[] = [];
      for (const r of results) {
        if (r.ok) found.push({ id: r.id, ok: true, detail: r.value });
        else if (r.error instanceof NotFoundError) gone.push(r.id);
      }
      const batch: DetailBatch = { results: found, release: () => Promise.resolve() };
      const item: RunItem = {
        ready: Promise.resolve(batch),
        listed: new Map(found.map((f) => [f.id, null])),
        counts: {},
        bookkeeping: (tx) =>
          keepVanished(
            tx,
            found.map((f) => f.id),
          ),
      };
      if (found.length) await commitRunItems(deps, [item], counts);
      if (gone.length)
        await deps.gate.use((wh) =>
          wh.transaction((tx) => markDeleted(tx, wh.resource('runs'), gone, mode, deps.now())),
        );
      deleted += gone.length;
      if (gone.length) deps.logger.info({ runs: gone.length, mode }, 'runs the API deleted are marked deleted');
    }
  } finally {
    pool.close();
  }
  counts.deleted += deleted;
  return deleted;
}
