import type { ColumnKind, ColumnSpec } from './flatten-values.ts';
import { RUN_CHILDREN, RUN_COLUMNS, type ChildTableSpec } from './spec-runs.ts';
import { quoteIdent, quoteLiteral } from './warehouse-sql.ts';

// The SQL that stages run details straight from raw archive files and merges them, generated from
// the same column specs as flattenRunDetail (flatten-run.ts), so the two agree on every column.
// DuckDB parses the payloads (json_transform) and unnests the children on its own threads; the
// payloads were checked by checkRunDetail before they were archived, so every value converts.

const DUCK_TYPE: Record<Exclude<ColumnKind, 'text_list'>, string> = {
  text: 'VARCHAR',
  boolean: 'BOOLEAN',
  double: 'DOUBLE',
  bigint: 'BIGINT',
  timestamptz: 'TIMESTAMPTZ',
  json: 'JSON',
};

type Structure = { [member: string]: Structure | string | [Structure | string] };

function addPath(into: Structure, path: readonly string[], leaf: Structure | string | [Structure | string]): void {
  let node = into;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i] as string;
    const next = node[key];
    if (next === undefined) node = node[key] = {};
    else if (typeof next === 'object' && !Array.isArray(next)) node = next;
    else throw new Error(`column spec conflict at ${path.join('.')}`);
  }
  node[path[path.length - 1] as string] = leaf;
}

function structureOf(columns: readonly ColumnSpec[]): Structure {
  const s: Structure = {};
  for (const c of columns) addPath(s, c.path, c.kind === 'text_list' ? ['VARCHAR'] : DUCK_TYPE[c.kind]);
  return s;
}

/** The json_transform structure of a run detail: every member a column reads, nothing else. */
export function runStructure(): Structure {
  const s = structureOf(RUN_COLUMNS);
  for (const child of RUN_CHILDREN) s[child.member] = [structureOf(child.columns)];
  return s;
}

function access(base: string, path: readonly string[]): string {
  return [base, ...path.map(quoteIdent)].join('.');
}

const STRUCTURE = runStructure();
for (const member of Object.keys(STRUCTURE)) {
  if (member.startsWith('_')) throw new Error(`run member ${member} would collide with a staging column`);
}

/** The child rows a staged payload gives: one per item of each child array. */
const CHILD_ROWS = RUN_CHILDREN.map((c) => `coalesce(len(r.${quoteIdent(c.member)}), 0)`).join(' + ');

/**
 * Reads the payload rows of archive files into _stage_run, a column per top-level member of the
 * payload (unnested from the parsed struct) beside the archive's own columns, which are named with
 * a leading underscore where no member's name starts. Later statements read only the columns they
 * need: a struct column would be read whole, every step of every run, to reach one field.
 * `hashes` (the MD5 of each row's payload, by seq, for a single file) spares DuckDB hashing what
 * the writer already hashed.
 */
export function stageSql(files: readonly string[], hashes?: readonly (string | null)[]): string {
  if (hashes && files.length !== 1) throw new Error('payload hashes are given for one archive file at a time');
  const hash = hashes ? `coalesce([${hashes.map((h) => (h === null ? 'NULL' : quoteLiteral(h))).join(', ')}][seq + 1], md5(payload))` : 'md5(payload)';
  return `CREATE OR REPLACE TEMP TABLE _stage_run AS
SELECT _file, _seq, _fetched_at, _hash, (r.created_at AT TIME ZONE 'UTC')::DATE AS _created_date, ${CHILD_ROWS} AS _child_rows, unnest(r)
FROM (
  SELECT filename AS _file, seq AS _seq, fetched_at AT TIME ZONE 'UTC' AS _fetched_at, ${hash} AS _hash,
         json_transform(payload, ${quoteLiteral(JSON.stringify(STRUCTURE))}) AS r
  FROM read_parquet([${files.map(quoteLiteral).join(', ')}], filename = true) WHERE kind = 'payload'
)`;
}

/**
 * Picks one payload per run (newest updated_at, then latest fetch, then the later file and the
 * later row) and judges it against the stored run: new, newer, changed (same updated_at, other
 * content, fetched no earlier), unchanged, or stale (older than what is stored). Only keys are
 * copied here; the parsed payloads stay in _stage_run.
 */
export const PICK_SQL = `CREATE OR REPLACE TEMP TABLE _stage_pick AS
WITH k AS (
  SELECT _file AS filename, _seq AS seq, id, updated_at, _fetched_at AS fetched_at, _hash AS payload_hash,
         _created_date AS created_date, _child_rows AS child_rows
  FROM _stage_run
  QUALIFY row_number() OVER (PARTITION BY id ORDER BY updated_at DESC, _fetched_at DESC, _file DESC, _seq DESC) = 1
)
SELECT k.*, cur.created_date AS old_created_date,
  CASE
    WHEN cur.id IS NULL THEN 'new'
    WHEN k.updated_at > cur.updated_at THEN 'newer'
    WHEN k.updated_at < cur.updated_at THEN 'stale'
    WHEN k.payload_hash <> cur.payload_hash AND k.fetched_at >= cur.fetched_at THEN 'changed'
    ELSE 'unchanged'
  END AS verdict
FROM k LEFT JOIN runs cur ON cur.id = k.id`;

const APPLIED = `verdict IN ('new', 'newer', 'changed')`;

/** The staged payloads to merge: the picked ones that win. */
const APPLY_FROM = `_stage_run AS s SEMI JOIN (SELECT filename, seq FROM _stage_pick WHERE ${APPLIED}) a ON s._file = a.filename AND s._seq = a.seq`;

export const DIRTY_SQL = `INSERT INTO _sync_export_dirty
SELECT DISTINCT 'runs', d FROM (
  SELECT created_date AS d FROM _stage_pick WHERE ${APPLIED}
  UNION ALL SELECT old_created_date FROM _stage_pick WHERE ${APPLIED} AND old_created_date IS NOT NULL
)`;

/** The stored created_date range of the runs a batch replaces (null when it replaces none). */
export interface ReplacedRange {
  from: string;
  to: string;
}

/**
 * Deletes the stored rows of the runs the batch replaces. New runs have nothing to delete, so a
 * batch of only new runs deletes nothing and scans nothing; otherwise the created_date range
 * lets DuckDB skip, by its min/max per row group, the stored rows of other days.
 */
export function deleteSql(range: ReplacedRange | null): string[] {
  if (range === null) return [];
  const ids = `SELECT id FROM _stage_pick WHERE verdict IN ('newer', 'changed')`;
  const days = `created_date BETWEEN ${quoteLiteral(range.from)}::DATE AND ${quoteLiteral(range.to)}::DATE`;
  return [...RUN_CHILDREN.map((c) => `DELETE FROM ${c.table} WHERE ${days} AND run_id IN (${ids})`), `DELETE FROM runs WHERE ${days} AND id IN (${ids})`];
}

export function insertRunsSql(): string {
  const cols = [...RUN_COLUMNS.map((c) => c.name), 'created_date', 'fetched_at', 'payload_hash'];
  const exprs = [...RUN_COLUMNS.map((c) => access('s', c.path)), 's._created_date', 's._fetched_at', 's._hash'];
  return `INSERT INTO runs (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM ${APPLY_FROM}`;
}

function insertChildSql(child: ChildTableSpec): string {
  const cols = ['run_id', ...child.columns.map((c) => c.name), 'created_date'];
  const exprs = ['run_id', ...child.columns.map((c) => access('c', c.path)), 'created_date'];
  return `INSERT INTO ${child.table} (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM (
  SELECT s.id AS run_id, s._created_date AS created_date, unnest(s.${quoteIdent(child.member)}) AS c
  FROM ${APPLY_FROM}
)`;
}

/** Everything the merge writes once the batch is judged, staging dropped at the end. */
export function mergeSql(range: ReplacedRange | null): string[] {
  return [DIRTY_SQL, ...deleteSql(range), insertRunsSql(), ...RUN_CHILDREN.map(insertChildSql), 'DROP TABLE _stage_pick', 'DROP TABLE _stage_run'];
}

/** Counts of the judged batch, and the stored created_date range of the runs it replaces. */
export const COUNT_SQL = `SELECT
  (SELECT count(*) FROM _stage_run) AS staged,
  count(*) AS picked,
  count(*) FILTER (WHERE verdict = 'new') AS inserted,
  count(*) FILTER (WHERE verdict IN ('newer', 'changed')) AS updated,
  count(*) FILTER (WHERE verdict = 'unchanged') AS unchanged,
  count(*) FILTER (WHERE verdict = 'stale') AS stale,
  CAST(min(old_created_date) FILTER (WHERE verdict IN ('newer', 'changed')) AS VARCHAR) AS replaced_from,
  CAST(max(old_created_date) FILTER (WHERE verdict IN ('newer', 'changed')) AS VARCHAR) AS replaced_to,
  list(DISTINCT CAST(created_date AS VARCHAR) ORDER BY CAST(created_date AS VARCHAR)) FILTER (WHERE ${APPLIED}) AS dates,
  coalesce(sum(child_rows) FILTER (WHERE ${APPLIED}), 0) AS child_rows
FROM _stage_pick`;

