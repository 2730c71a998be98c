import type { ResourceSpec } from '../resources/types.ts';
import { RunStatesSql } from './run-states-sql.ts';
import { quoteLiteral } from './sql.ts';
import { runStructure } from './stage-runs-sql.ts';
import type { Warehouse } from './types.ts';

// The observed states of a rebuild (runs_history), from every payload of the raw archive: each
// payload's state is staged once (only the members a state reads are parsed), then judged as the
// loads judged them, a bucket of runs at a time so each statement's windows hold a bucket, on the
// narrow columns judging reads; the picked rows' values are copied once at the end.

/**
 * Payload rows a bucket holds, about: its windows sort this many narrow rows at most. DuckDB's
 * windows hold working memory beyond its memory_limit, growing with the rows they sort, and
 * smaller buckets cost only a scan of one narrow column each.
 */
export const STATE_BUCKET_ROWS = 50_000;

/** Fills the states table from the archive files (in commit order); the rows written. */
export async function rebuildStates(wh: Warehouse, files: readonly string[], resource: ResourceSpec): Promise<number> {
  if (!resource.states || files.length === 0) return 0;
  const sql = new RunStatesSql(resource);
  const list = `[${files.map(quoteLiteral).join(', ')}]`;
  const payloads = `(SELECT filename, seq, fetched_at, payload FROM read_parquet(${list}, filename = true)
    WHERE kind = 'payload' AND id IS NOT NULL)`;
  const [n] = await wh.all<{ n: bigint }>(
    `SELECT count(*) AS n FROM read_parquet(${list}) WHERE kind = 'payload' AND id IS NOT NULL`,
  );
  const buckets = Math.max(1, Math.ceil(Number(n?.n ?? 0) / STATE_BUCKET_ROWS));
  const structure = sql.structure(runStructure(resource) as Record<string, unknown>);
  await wh.run(`CREATE OR REPLACE TEMP TABLE _rebuild_state_files (filename VARCHAR, ord INTEGER)`);
  await wh.run(`INSERT INTO _rebuild_state_files SELECT unnest(${list}), unnest(range(${files.length}))`);
  await wh.run(sql.rebuildStage(payloads, structure, buckets));
  await wh.run(sql.rebuildPicksTable());
  for (let b = 0; b < buckets; b++) await wh.run(sql.rebuildPick(b, '_rebuild_state_files'));
  const [r] = await wh.all<{ Count: bigint }>(sql.rebuildInsert());
  await wh.run('DROP TABLE _rebuild_picks');
  await wh.run('DROP TABLE _rebuild_states');
  await wh.run('DROP TABLE _rebuild_state_files');
  return Number(r?.Count ?? 0);
}
