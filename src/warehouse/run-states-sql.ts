import type { ColumnSpec, ResourceSpec, StatesSpec } from '../resources/types.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';

// The SQL of a resource's observed states (runs_history), generated from its declaration (the
// live columns a state is made of and the counts of its children). A state is valid from its
// updated_at: the API's time of the change, so durations between states are the API's, whatever
// the lag of the look that saw them. A load closes a run's current state and opens the new one
// only when the state's hash differs; a payload of the same updated_at with another state (the
// loads' `changed`) replaces the current row in place. Rebuild derives the same rows from every
// payload of the raw archive, applying the loads' rule in the order the loads committed.

/** How a statement reaches a member of the payload (by path), and a child array (by member). */
export interface StateSource {
  at(path: readonly string[]): string;
  list(member: string): string;
}

/** A range of created_date the runs a batch replaces lie in (null: it replaces none). */
export interface DayRange {
  from: string;
  to: string;
}

export class RunStatesSql {
  readonly spec: StatesSpec;
  private readonly columns: ColumnSpec[];

  constructor(private readonly resource: ResourceSpec) {
    if (!resource.states) throw new Error(`${resource.table} keeps no states`);
    this.spec = resource.states;
    this.columns = this.spec.columns.map((n) => resource.columns.find((c) => c.name === n) as ColumnSpec);
  }

  get table(): string {
    return quoteIdent(this.spec.table);
  }

  /** The state's columns and counts, by name, as expressions of the source. */
  values(src: StateSource): [string, string][] {
    const cols: [string, string][] = this.columns.map((c) => [c.name, src.at(c.path)]);
    for (const n of this.spec.counts) {
      const list = src.list(n.member);
      const items = n.ofType ? `list_filter(${list}, x -> x.type = ${quoteLiteral(n.ofType)})` : list;
      cols.push([n.name, `coalesce(len(${items}), 0)`]);
    }
    return cols;
  }

  /**
   * A hash of the state's values, the same in every session: times as epoch microseconds (their
   * text would follow the session's time zone).
   */
  hash(values: readonly [string, string][]): string {
    const kinds = new Map(this.columns.map((c) => [c.name, c.kind]));
    const members = values.map(([name, expr], i) => {
      const v = kinds.get(name) === 'timestamptz' ? `epoch_us(${expr})` : expr;
      return `c${i} := ${v}`;
    });
    return `md5(CAST(struct_pack(${members.join(', ')}) AS VARCHAR))`;
  }

  /** The state's own values: its columns and counts. */
  private valueNames(): string[] {
    return [...this.columns.map((c) => c.name), ...this.spec.counts.map((c) => c.name)];
  }

  private names(): string[] {
    return [...this.valueNames(), 'created_date', 'valid_from', 'valid_to', 'observed_at', 'state_hash'];
  }

  /**
   * _stage_state: the new state of each run a batch applies. `from` selects the staged rows
   * (alias s, the picked row's verdict and stored deletion as p); a run seen again after a
   * deletion begins its state no earlier than when it was seen.
   */
  stage(src: StateSource, from: string, id: string, updatedAt: string): string {
    const values = this.values(src);
    const select = values.map(([n, e]) => `${e} AS ${quoteIdent(n)}`);
    return `CREATE OR REPLACE TEMP TABLE _stage_state AS
SELECT ${select.join(', ')}, s._created_date AS created_date,
  CASE WHEN p.old_deleted_at IS NOT NULL AND ${updatedAt} <= p.old_deleted_at THEN s._fetched_at ELSE ${updatedAt} END AS valid_from,
  CAST(NULL AS TIMESTAMPTZ) AS valid_to, s._fetched_at AS observed_at, ${this.hash(values)} AS state_hash,
  p.verdict AS _verdict, ${id} AS _id
FROM ${from}`;
  }

  /**
   * Statements that apply _stage_state: the current state of each replaced run is read once (its
   * place in the table, _stage_current); one that differs is closed (or, begun at the same time,
   * removed to be replaced), then every new state that is not the current one inserted. Only the
   * days of the replaced runs are read, and the table is written by place alone.
   */
  apply(range: DayRange | null): string[] {
    const key = quoteIdent(this.resource.key);
    const insert = `INSERT INTO ${this.table} (${this.names().map(quoteIdent).join(', ')})
SELECT ${this.names().map(quoteIdent).join(', ')} FROM _stage_state n`;
    if (range === null) return [insert, 'DROP TABLE _stage_state'];
    const days = `h.created_date BETWEEN ${quoteLiteral(range.from)}::DATE AND ${quoteLiteral(range.to)}::DATE`;
    const replaced = `c JOIN _stage_state n ON n._id = c._id`;
    return [
      `CREATE OR REPLACE TEMP TABLE _stage_current AS
SELECT h.rowid AS _row, h.${key} AS _id, h.valid_from, h.state_hash FROM ${this.table} h
WHERE h.valid_to IS NULL AND ${days} AND h.${key} IN (SELECT _id FROM _stage_state WHERE _verdict <> 'new')`,
      `DELETE FROM _stage_state n USING _stage_current c WHERE n._id = c._id AND n.state_hash = c.state_hash`,
      `DELETE FROM ${this.table} h WHERE ${days} AND h.rowid IN (
  SELECT c._row FROM _stage_current ${replaced} WHERE c.valid_from >= n.valid_from)`,
      `UPDATE ${this.table} h SET valid_to = u.valid_from FROM (
  SELECT c._row, n.valid_from FROM _stage_current ${replaced} WHERE c.valid_from < n.valid_from
) u WHERE ${days} AND h.rowid = u._row`,
      insert,
      'DROP TABLE _stage_current',
      'DROP TABLE _stage_state',
    ];
  }

  /** The members a state reads, as json_transform structure: summary members, child arrays' lengths. */
  structure(full: Record<string, unknown>): string {
    const out: Record<string, unknown> = {};
    for (const c of this.columns) {
      const first = c.path[0] as string;
      out[first] = full[first];
    }
    for (const n of this.spec.counts) out[n.member] = [n.ofType ? { type: 'VARCHAR' } : { id: 'VARCHAR' }];
    return JSON.stringify(out);
  }

  /**
   * Rebuild, first step: _rebuild_states, the state of every payload row of `payloads` (a query
   * with filename, seq, fetched_at, payload), its file named, and a bucket of its run (of
   * `buckets`), so the judging below reads one bucket at a time. Files are joined to their place in
   * commit order only there: a join of the payloads with them may be planned with the payloads on
   * its build side.
   */
  rebuildStage(payloads: string, structure: string, buckets: number): string {
    const src: StateSource = {
      at: (path) => ['r', ...path.map(quoteIdent)].join('.'),
      list: (member) => `r.${quoteIdent(member)}`,
    };
    const values = this.values(src);
    const select = values.map(([n, e]) => `${e} AS ${quoteIdent(n)}`);
    return `CREATE OR REPLACE TEMP TABLE _rebuild_states AS
SELECT ${select.join(', ')}, (r.created_at AT TIME ZONE 'UTC')::DATE AS created_date,
       filename, seq, fetched_at, ${this.hash(values)} AS state_hash,
       hash(r.${quoteIdent(this.resource.key)}) % ${buckets} AS _bucket
FROM (
  SELECT a.filename, a.seq, a.fetched_at AT TIME ZONE 'UTC' AS fetched_at,
         json_transform(a.payload, ${quoteLiteral(structure)}) AS r
  FROM ${payloads} AS a
)`;
  }

  /**
   * Rebuild, per bucket: which staged rows the loads would have recorded as states, and each one's
   * valid_to and observed_at, into _rebuild_picks. Per run and file the load's pick (newest
   * updated_at, latest fetch, later row); a pick applies when no earlier file brought a newer
   * updated_at (or the same one fetched later); of the applied picks with one updated_at the last
   * state holds, first observed by the earliest pick in that state. The windows sort only the
   * narrow columns they judge by (the row's place in _rebuild_states, not its values): a state's
   * text is wide, and a bucket of wide rows sorted several times over does not fit a small budget.
   */
  /** Rebuild: the table rebuildPick fills, each picked row's place and its times. */
  rebuildPicksTable(): string {
    return 'CREATE OR REPLACE TEMP TABLE _rebuild_picks (_row BIGINT, valid_to TIMESTAMPTZ, observed_at TIMESTAMPTZ)';
  }

  rebuildPick(bucket: number, files: string): string {
    const key = quoteIdent(this.resource.key);
    return `INSERT INTO _rebuild_picks
WITH picked AS (
  SELECT s.rowid AS _row, s.${key}, f.ord, s.updated_at, s.fetched_at, s.state_hash
  FROM _rebuild_states s JOIN ${files} f USING (filename)
  WHERE s._bucket = ${bucket}
  QUALIFY row_number() OVER (PARTITION BY s.${key}, f.ord ORDER BY s.updated_at DESC, s.fetched_at DESC, s.seq DESC) = 1
),
judged AS (
  SELECT *, max(updated_at) OVER w AS before_u, max(fetched_at) OVER w AS before_f
  FROM picked
  WINDOW w AS (PARTITION BY ${key} ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
applied AS (
  SELECT _row, ${key}, ord, updated_at, fetched_at, state_hash FROM judged
  WHERE before_u IS NULL OR updated_at > before_u OR (updated_at = before_u AND fetched_at >= before_f)
),
last AS (
  SELECT _row, ${key}, updated_at, state_hash FROM applied
  QUALIFY row_number() OVER (PARTITION BY ${key}, updated_at ORDER BY ord DESC) = 1
),
seen AS (
  SELECT ${key}, updated_at, state_hash, min(fetched_at) AS observed_at FROM applied GROUP BY ALL
)
SELECT l._row, lead(l.updated_at) OVER (PARTITION BY l.${key} ORDER BY l.updated_at) AS valid_to, s.observed_at
FROM last l JOIN seen s USING (${key}, updated_at, state_hash)`;
  }

  /** Rebuild, last: the picked rows of _rebuild_states as states, with their values. */
  rebuildInsert(): string {
    const cols = this.valueNames().map((c) => `s.${quoteIdent(c)}`);
    return `INSERT INTO ${this.table} (${this.names().map(quoteIdent).join(', ')})
SELECT ${cols.join(', ')}, s.created_date, s.updated_at AS valid_from, p.valid_to, p.observed_at,
       s.state_hash
FROM _rebuild_states s JOIN _rebuild_picks p ON s.rowid = p._row`;
  }
}
