// Finding stored runs by id without reading every stored id (schemas/duckdb/0012_run_keys.sql):
// the ids' hashes name the days their runs may lie in, and only those days of runs are read.

/** The table of every stored run's id hash and created_date. */
export const RUN_KEYS = '_sync_run_keys';

/** SQL of the 64-bit hash of an id, as the migration that made the table computed it. */
export function runKeyHash(id: string): string {
  return `('0x' || left(md5(${id}), 16))::UBIGINT`;
}

/**
 * SQL of the stored runs whose id is among `ids` (a query of one column named id), with `columns`.
 * The created_date filter comes first so DuckDB skips, by its min/max per row group, the days that
 * cannot hold them: when none of the ids is stored, no row of runs is read.
 */
export function storedRuns(ids: string, columns: readonly string[]): string {
  return `(SELECT ${columns.join(', ')} FROM runs
  WHERE created_date IN (SELECT created_date FROM ${RUN_KEYS} WHERE id_hash IN (SELECT ${runKeyHash('id')} FROM (${ids})))
    AND id IN (SELECT id FROM (${ids})))`;
}

/** SQL that records where the runs of `rows` (a query with id and created_date) lie. */
export function recordRunKeys(rows: string): string {
  return `INSERT INTO ${RUN_KEYS} SELECT DISTINCT ${runKeyHash('id')}, created_date FROM (${rows})`;
}
