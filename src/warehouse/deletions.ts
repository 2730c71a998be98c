import { listValue } from '@duckdb/node-api';
import type { ResourceSpec } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';
import { storedRuns } from './run-keys.ts';
import { quoteIdent, US_TO_TSTZ } from './sql.ts';
import type { SqlRunner } from './types.ts';

// Runs the API deleted. The runs list shows no deletion, so one is inferred, in two steps: a run
// stored in a created day that a listing covered whole (the completeness ledger's coverage:
// every page, no filter but created time) and that it did not list is set aside (_sync_vanished);
// asked for by id, a detail that answers not_found makes it deleted. A day listed in part (a
// filtered backfill, a listing that stopped) sets nothing aside. A
// deleted run stays in runs, marked, without its child rows; its states in runs_history are closed
// (soft) or removed (hard). A run that the API answers again is loaded as any change, which
// restores it (stage-runs-sql.ts).

export type DeleteMode = 'soft' | 'hard';

/**
 * The days [from, to) were listed whole by `stream` (the completeness ledger's coverage, with the
 * ids it staged in _sync_listed): their stored runs, not deleted, that it did not list are set
 * aside to be asked for. How many.
 */
export async function setAsideVanished(
  tx: SqlRunner,
  stream: string,
  days: { from: Micros; to: Micros },
  at: Micros,
): Promise<number> {
  const [row] = await tx.all<{ Count: bigint }>(
    `INSERT INTO _sync_vanished
     SELECT id, created_date, ${US_TO_TSTZ('$4')}, $1 FROM runs
     WHERE created_at >= ${US_TO_TSTZ('$2')} AND created_at < ${US_TO_TSTZ('$3')} AND deleted_at IS NULL
       AND id NOT IN (SELECT id FROM _sync_listed WHERE stream = $1 AND created_us >= $2 AND created_us < $3)
     ON CONFLICT (run_id) DO NOTHING`,
    [stream, BigInt(days.from), BigInt(days.to), BigInt(at)],
  );
  return Number(row?.Count ?? 0);
}

/** Runs set aside, oldest first. */
export async function vanishedRuns(db: SqlRunner): Promise<string[]> {
  const rows = await db.all<{ id: string }>(`SELECT run_id AS id FROM _sync_vanished ORDER BY missed_at, run_id`);
  return rows.map((r) => r.id);
}

/** Runs set aside that turned out to exist (their detail answered): no longer set aside. */
export async function keepVanished(tx: SqlRunner, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.run(`DELETE FROM _sync_vanished WHERE run_id IN (SELECT unnest($1::VARCHAR[]))`, [listValue([...ids])]);
}

/**
 * Marks runs deleted at `at`: runs keeps them, marked; their child rows leave the tables (and so
 * the Parquet tree's partitions, marked for the export); their current states are closed (soft)
 * or all their states removed (hard). Recorded in _sync_deletions.
 */
export async function markDeleted(
  tx: SqlRunner,
  resource: ResourceSpec,
  ids: readonly string[],
  mode: DeleteMode,
  at: Micros,
): Promise<void> {
  if (ids.length === 0) return;
  const list = listValue([...ids]);
  await tx.run(
    `CREATE OR REPLACE TEMP TABLE _deleting AS
     SELECT id, created_date, created_at FROM ${storedRuns('SELECT unnest($1::VARCHAR[]) AS id', ['id', 'created_date', 'created_at', 'deleted_at'])}
     WHERE deleted_at IS NULL`,
    [list],
  );
  await applyDeletion(tx, resource, mode, at);
  await tx.run(`INSERT INTO _sync_deletions SELECT id, created_date, ${US_TO_TSTZ('$1')}, $2, NULL FROM _deleting`, [
    BigInt(at),
    mode,
  ]);
  await tx.run(`DELETE FROM _sync_vanished WHERE run_id IN (SELECT unnest($1::VARCHAR[]))`, [list]);
  await tx.run(`DELETE FROM _sync_pending_runs WHERE run_id IN (SELECT id FROM _deleting)`);
  await tx.run('DROP TABLE _deleting');
}

/** The deletion of the runs of _deleting (id, created_date, created_at) at `at`. */
async function applyDeletion(tx: SqlRunner, resource: ResourceSpec, mode: DeleteMode, at: Micros): Promise<void> {
  const ts = US_TO_TSTZ(String(at));
  const days = `created_date IN (SELECT DISTINCT created_date FROM _deleting)`;
  const ids = `SELECT id FROM _deleting`;
  await tx.run(
    `INSERT INTO _sync_export_dirty (table_name, created_date, created_at)
     SELECT DISTINCT ${`'${resource.table}'`}, created_date, created_at FROM _deleting`,
  );
  await tx.run(`UPDATE runs SET is_deleted = true, deleted_at = ${ts} WHERE ${days} AND id IN (${ids})`);
  for (const c of resource.children)
    await tx.run(`DELETE FROM ${quoteIdent(c.table)} WHERE ${days} AND ${quoteIdent(c.parentKey)} IN (${ids})`);
  if (!resource.states) return;
  const history = quoteIdent(resource.states.table);
  if (mode === 'hard') await tx.run(`DELETE FROM ${history} WHERE ${days} AND id IN (${ids})`);
  else
    await tx.run(
      `UPDATE ${history} SET valid_to = greatest(${ts}, valid_from) WHERE ${days} AND valid_to IS NULL AND id IN (${ids})`,
    );
}

/**
 * Rebuild: the deletions still open (not restored) applied again to the tables derived from the
 * raw archive, each at the time and in the mode it was made.
 */
export async function reapplyDeletions(tx: SqlRunner, resource: ResourceSpec): Promise<number> {
  const open = await tx.all<{ at: bigint; mode: DeleteMode }>(
    `SELECT DISTINCT epoch_us(deleted_at) AS at, mode FROM _sync_deletions WHERE restored_at IS NULL ORDER BY 1`,
  );
  let n = 0;
  for (const d of open) {
    await tx.run(
      `CREATE OR REPLACE TEMP TABLE _deleting AS
       SELECT r.id, r.created_date, r.created_at FROM runs r JOIN _sync_deletions d ON d.run_id = r.id
       WHERE d.restored_at IS NULL AND epoch_us(d.deleted_at) = $1 AND d.mode = $2 AND r.deleted_at IS NULL`,
      [d.at, d.mode],
    );
    const [row] = await tx.all<{ n: bigint }>(`SELECT count(*) AS n FROM _deleting`);
    n += Number(row?.n ?? 0);
    await applyDeletion(tx, resource, d.mode, Number(d.at));
    await tx.run('DROP TABLE _deleting');
  }
  return n;
}

/** A deletion still in force, as _sync_deletions holds it. */
export interface OpenDeletion {
  runId: string;
  createdDate: string;
  deletedAt: Micros;
  mode: DeleteMode;
}

/** The deletions still in force (a rebuild applies them again). */
export async function openDeletions(db: SqlRunner): Promise<OpenDeletion[]> {
  const rows = await db.all<{ id: string; d: string; at: bigint; mode: DeleteMode }>(
    `SELECT run_id AS id, CAST(created_date AS VARCHAR) AS d, epoch_us(deleted_at) AS at, mode
     FROM _sync_deletions WHERE restored_at IS NULL ORDER BY deleted_at, run_id`,
  );
  return rows.map((r) => ({ runId: r.id, createdDate: r.d, deletedAt: Number(r.at), mode: r.mode }));
}

export async function insertDeletions(tx: SqlRunner, deletions: readonly OpenDeletion[]): Promise<void> {
  await tx.run(
    `INSERT INTO _sync_deletions
     SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[])::DATE, make_timestamp(unnest($3::BIGINT[])) AT TIME ZONE 'UTC',
            unnest($4::VARCHAR[]), NULL`,
    [
      listValue(deletions.map((d) => d.runId)),
      listValue(deletions.map((d) => d.createdDate)),
      listValue(deletions.map((d) => BigInt(d.deletedAt))),
      listValue(deletions.map((d) => d.mode)),
    ],
  );
}
