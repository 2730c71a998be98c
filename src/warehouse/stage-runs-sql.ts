import { RUNS } from '../resources/registry.ts';
import { SQL_TYPE } from '../resources/tables.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from '../resources/types.ts';
import { recordRunKeys, storedRuns } from './run-keys.ts';
import { RunStatesSql } from './run-states-sql.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';

// The SQL that stages run details straight from raw archive files and merges them, generated from
// the runs resource (src/resources) as flattenRunDetail (flatten-run.ts) reads it, so the two
// agree on every column, evolved ones included. DuckDB parses the payloads (json_transform) and
// unnests the children on its own threads; the payloads were checked by checkRunDetail before
// they were archived, and evolved columns widened to fit them, so every value converts.

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
  for (const c of columns) {
    const type = SQL_TYPE[c.kind];
    addPath(s, c.path, type.endsWith('[]') ? [type.slice(0, -2)] : type);
  }
  return s;
}

/** The json_transform structure of a run detail: every member a column reads, nothing else. */
export function runStructure(resource: ResourceSpec = RUNS): Structure {
  const s = structureOf(resource.columns);
  for (const child of resource.children) s[child.member] = [structureOf(child.columns)];
  return s;
}

const APPLIED = `verdict IN ('new', 'newer', 'changed')`;
const REPLACED = `verdict IN ('newer', 'changed')`;

/** What a stored run is judged by, and where it lies. */
const STORED_COLUMNS = ['id', 'updated_at', 'payload_hash', 'fetched_at', 'created_date', 'created_at', 'deleted_at'];

/** The staged payloads to merge: the picked ones that win. */
const APPLY_FROM = `_stage_run AS s SEMI JOIN (SELECT filename, seq FROM _stage_pick WHERE ${APPLIED}) a
  ON s._file = a.filename AND s._seq = a.seq`;

/** Some rows of one archive file: seq from..to, and of those only `seqs` when given. */
export interface StagedRows {
  file: string;
  from: number;
  to: number;
  seqs?: readonly number[];
}

/**
 * The payload rows of archive files. Each file that names its rows is read on its own with its
 * filter, which DuckDB applies in the scan: a join of the files against the rows wanted may be
 * planned with the payloads on its build side, holding every payload of the files in memory.
 */
export function payloadRows(files: readonly (string | StagedRows)[]): string {
  const whole = files.filter((f): f is string => typeof f === 'string');
  const parts = files.filter((f): f is StagedRows => typeof f !== 'string');
  const reads = parts.map(
    (p) =>
      `SELECT * FROM read_parquet(${quoteLiteral(p.file)}, filename = true)
  WHERE kind = 'payload' AND seq BETWEEN ${p.from} AND ${p.to}${p.seqs ? ` AND seq IN (${p.seqs.join(', ')})` : ''}`,
  );
  if (whole.length)
    reads.unshift(
      `SELECT * FROM read_parquet([${whole.map(quoteLiteral).join(', ')}], filename = true) WHERE kind = 'payload'`,
    );
  return reads.length === 1 ? `(${reads[0]})` : `(${reads.join('\n  UNION ALL ')})`;
}

/** The stored created_date range of the runs a batch replaces (null when it replaces none). */
export interface ReplacedRange {
  from: string;
  to: string;
}

/**
 * The statements of one run merge for a resource as it stands (declared and evolved columns).
 * Each top-level member of a payload is staged in a column of its own (m0, m1, …, beside the
 * archive's _file, _seq, …), so later statements read only the members they need: a struct column
 * would be read whole, every step of every run, to reach one field. Member names never become SQL
 * names, so no member, however it is spelled, can collide with a staging column.
 */
export class RunMergeSql {
  private readonly structure: Structure;
  private readonly alias: Map<string, string>;

  constructor(private readonly resource: ResourceSpec = RUNS) {
    this.structure = runStructure(resource);
    this.alias = new Map(Object.keys(this.structure).map((m, i) => [m, `m${i}`]));
  }

  private access(base: string, path: readonly string[]): string {
    const [first, ...rest] = path;
    return [`${base}.${this.alias.get(first as string)}`, ...rest.map(quoteIdent)].join('.');
  }

  private member(name: string): string {
    return this.alias.get(name) as string;
  }

  /**
   * Reads the payload rows of archive files into _stage_run. `hashes` (the MD5 of each row's
   * payload, by seq, for a single file) spares DuckDB hashing what the writer already hashed.
   */
  stage(files: readonly string[], hashes?: readonly (string | null)[]): string {
    if (hashes && files.length !== 1) throw new Error('payload hashes are given for one archive file at a time');
    const hash = hashes
      ? `coalesce([${hashes.map((h) => (h === null ? 'NULL' : quoteLiteral(h))).join(', ')}][seq + 1], md5(payload))`
      : 'md5(payload)';
    const childRows =
      this.resource.children.map((c) => `coalesce(len(r.${quoteIdent(c.member)}), 0)`).join(' + ') || '0';
    const members = [...this.alias].map(([m, a]) => `r.${quoteIdent(m)} AS ${a}`).join(', ');
    return `CREATE OR REPLACE TEMP TABLE _stage_run AS
SELECT _file, _seq, _fetched_at, _hash, (r.created_at AT TIME ZONE 'UTC')::DATE AS _created_date,
       ${childRows} AS _child_rows, ${members}
FROM (
  SELECT filename AS _file, seq AS _seq, fetched_at AT TIME ZONE 'UTC' AS _fetched_at, ${hash} AS _hash,
         json_transform(payload, ${quoteLiteral(JSON.stringify(this.structure))}) AS r
  FROM ${payloadRows(files)}
)`;
  }

  /**
   * Picks one payload per run (newest updated_at, then latest fetch, then the later file and the
   * later row) and judges it against the stored run: new, newer, changed (same updated_at, other
   * content, fetched no earlier), unchanged, or stale (older than what is stored); a run marked
   * deleted that the API answers again is `changed`, whatever its payload. Only keys are
   * copied here; the parsed payloads stay in _stage_run.
   */
  pick(): string {
    const id = this.member('id');
    const updated = this.member('updated_at');
    return `CREATE OR REPLACE TEMP TABLE _stage_pick AS
WITH k AS (
  SELECT _file AS filename, _seq AS seq, ${id} AS id, ${updated} AS updated_at, _fetched_at AS fetched_at,
         _hash AS payload_hash, _created_date AS created_date, ${this.member('created_at')} AS created_at,
         _child_rows AS child_rows
  FROM _stage_run
  QUALIFY row_number() OVER (PARTITION BY ${id} ORDER BY ${updated} DESC, _fetched_at DESC, _file DESC, _seq DESC) = 1
)
SELECT k.*, cur.created_date AS old_created_date, cur.created_at AS old_created_at, cur.deleted_at AS old_deleted_at,
  CASE
    WHEN cur.id IS NULL THEN 'new'
    WHEN cur.deleted_at IS NOT NULL THEN 'changed'
    WHEN k.updated_at > cur.updated_at THEN 'newer'
    WHEN k.updated_at < cur.updated_at THEN 'stale'
    WHEN k.payload_hash <> cur.payload_hash AND k.fetched_at >= cur.fetched_at THEN 'changed'
    ELSE 'unchanged'
  END AS verdict
FROM k LEFT JOIN ${storedRuns('SELECT id FROM k', STORED_COLUMNS)} cur ON cur.id = k.id`;
  }

  /** Counts of the judged batch, and the stored created_date range of the runs it replaces. */
  count(): string {
    return `SELECT
  (SELECT count(*) FROM _stage_run) AS staged,
  count(*) AS picked,
  count(*) FILTER (WHERE verdict = 'new') AS inserted,
  count(*) FILTER (WHERE ${REPLACED}) AS updated,
  count(*) FILTER (WHERE verdict = 'unchanged') AS unchanged,
  count(*) FILTER (WHERE verdict = 'stale') AS stale,
  CAST(min(old_created_date) FILTER (WHERE ${REPLACED}) AS VARCHAR) AS replaced_from,
  CAST(max(old_created_date) FILTER (WHERE ${REPLACED}) AS VARCHAR) AS replaced_to,
  list(DISTINCT CAST(created_date AS VARCHAR) ORDER BY CAST(created_date AS VARCHAR))
    FILTER (WHERE ${APPLIED}) AS dates,
  coalesce(sum(child_rows) FILTER (WHERE ${APPLIED}), 0) AS child_rows
FROM _stage_pick`;
  }

  /**
   * Deletes the stored rows of the runs the batch replaces. New runs have nothing to delete, so a
   * batch of only new runs deletes nothing and scans nothing; otherwise the created_date range
   * lets DuckDB skip, by its min/max per row group, the stored rows of other days.
   */
  delete(range: ReplacedRange | null): string[] {
    if (range === null) return [];
    const ids = `SELECT id FROM _stage_pick WHERE ${REPLACED}`;
    const days = `created_date BETWEEN ${quoteLiteral(range.from)}::DATE AND ${quoteLiteral(range.to)}::DATE`;
    return [
      ...this.resource.children.map(
        (c) => `DELETE FROM ${quoteIdent(c.table)} WHERE ${days} AND ${quoteIdent(c.parentKey)} IN (${ids})`,
      ),
      `DELETE FROM runs WHERE ${days} AND id IN (${ids})`,
    ];
  }

  insertRuns(): string {
    const cols = [...this.resource.columns.map((c) => c.name), 'created_date', 'fetched_at', 'payload_hash'];
    const exprs = [
      ...this.resource.columns.map((c) => this.access('s', c.path)),
      's._created_date',
      's._fetched_at',
      's._hash',
    ];
    return `INSERT INTO runs (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM ${APPLY_FROM}`;
  }

  insertChild(child: ChildSpec): string {
    const position = child.positionColumn;
    const cols = [
      child.parentKey,
      ...(position ? [position] : []),
      ...child.columns.map((c) => c.name),
      'created_date',
    ];
    const exprs = [
      '_parent',
      ...(position ? ['_position'] : []),
      ...child.columns.map((c) => ['c', ...c.path.map(quoteIdent)].join('.')),
      'created_date',
    ];
    const list = `s.${this.member(child.member)}`;
    return `INSERT INTO ${quoteIdent(child.table)} (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM (
  SELECT s.${this.member('id')} AS _parent, s._created_date AS created_date, unnest(${list}) AS c${
    position ? `, generate_subscripts(${list}, 1) - 1 AS _position` : ''
  }
  FROM ${APPLY_FROM}
)`;
  }

  /** The new observed states of the runs applied (runs_history), none for a resource without. */
  states(range: ReplacedRange | null): string[] {
    if (!this.resource.states) return [];
    const sql = new RunStatesSql(this.resource);
    const src = { at: (path: readonly string[]) => this.access('s', path), list: (m: string) => `s.${this.member(m)}` };
    const from = `_stage_run AS s JOIN _stage_pick AS p ON s._file = p.filename AND s._seq = p.seq AND p.${APPLIED}`;
    // A deleted run answered again is restored: its deletion closed.
    const restored = `UPDATE _sync_deletions d SET restored_at = p.fetched_at FROM _stage_pick p
WHERE p.${APPLIED} AND p.old_deleted_at IS NOT NULL AND d.run_id = p.id AND d.restored_at IS NULL`;
    return [
      sql.stage(src, from, `s.${this.member('id')}`, `s.${this.member('updated_at')}`),
      ...sql.apply(range),
      restored,
    ];
  }

  /** Everything the merge writes once the batch is judged, staging dropped at the end. */
  merge(range: ReplacedRange | null): string[] {
    const dirty = `INSERT INTO _sync_export_dirty (table_name, created_date, created_at)
SELECT DISTINCT 'runs', d, t FROM (
  SELECT created_date AS d, created_at AS t FROM _stage_pick WHERE ${APPLIED}
  UNION ALL SELECT old_created_date, old_created_at FROM _stage_pick
  WHERE ${APPLIED} AND old_created_date IS NOT NULL
)`;
    return [
      dirty,
      ...this.delete(range),
      this.insertRuns(),
      ...this.resource.children.map((c) => this.insertChild(c)),
      ...this.states(range),
      recordRunKeys(
        `SELECT id, created_date FROM _stage_pick
  WHERE verdict = 'new' OR (${REPLACED} AND created_date IS DISTINCT FROM old_created_date)`,
      ),
      'DROP TABLE _stage_pick',
      'DROP TABLE _stage_run',
    ];
  }
}
