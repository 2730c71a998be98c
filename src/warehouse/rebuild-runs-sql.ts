import type { ChildSpec, ResourceSpec } from '../resources/types.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';
import { payloadRows, runStructure, type StagedRows } from './stage-runs-sql.ts';

// The SQL that rebuilds the runs tables straight from raw archive rows chosen beforehand (one per
// run, into tables that hold none of them). Each table is filled by a statement of its own that
// reads and parses the payloads again, as a stream: nothing is staged, so a statement holds only
// what is in flight however many runs it covers, and a large one writes its row groups to the file
// once as they fill, where a small transaction's rows go to the log first and are written again by
// the checkpoint. Each statement parses only the members its table reads.

export class RunRebuildSql {
  constructor(private readonly resource: ResourceSpec) {}

  /** The json_transform of `payload` to the members named (every member a column reads when none). */
  private transform(members?: readonly string[]): string {
    const full = runStructure(this.resource);
    const structure = members ? Object.fromEntries(members.map((m) => [m, full[m]])) : full;
    return `json_transform(payload, ${quoteLiteral(JSON.stringify(structure))})`;
  }

  /** Inserts the runs of the archive rows, with each payload's hash and when it was fetched. */
  runs(rows: readonly (string | StagedRows)[]): string {
    const childMembers = new Set(this.resource.children.map((c) => c.member));
    const members = Object.keys(runStructure(this.resource)).filter((m) => !childMembers.has(m));
    const cols = [...this.resource.columns.map((c) => c.name), 'created_date', 'fetched_at', 'payload_hash'];
    const exprs = [
      ...this.resource.columns.map((c) => ['r', ...c.path.map(quoteIdent)].join('.')),
      `(r.created_at AT TIME ZONE 'UTC')::DATE`,
      `fetched_at AT TIME ZONE 'UTC'`,
      'md5(payload)',
    ];
    return `INSERT INTO ${quoteIdent(this.resource.table)} (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM (
  SELECT fetched_at, payload, ${this.transform(members)} AS r FROM ${payloadRows(rows)}
)`;
  }

  /** Inserts the rows of one child table from the archive rows' payloads. */
  child(child: ChildSpec, rows: readonly (string | StagedRows)[]): string {
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
    const list = `r.${quoteIdent(child.member)}`;
    return `INSERT INTO ${quoteIdent(child.table)} (${cols.map(quoteIdent).join(', ')})
SELECT ${exprs.join(', ')} FROM (
  SELECT r.id AS _parent, (r.created_at AT TIME ZONE 'UTC')::DATE AS created_date, unnest(${list}) AS c${
    position ? `, generate_subscripts(${list}, 1) - 1 AS _position` : ''
  }
  FROM (SELECT ${this.transform(['id', 'created_at', child.member])} AS r FROM ${payloadRows(rows)})
)`;
  }

  /** Every run is new to the export: its day and created time marked, as a load marks them. */
  exportDirty(): string {
    return `INSERT INTO _sync_export_dirty (table_name, created_date, created_at)
SELECT DISTINCT ${quoteLiteral(this.resource.table)}, created_date, created_at FROM ${quoteIdent(this.resource.table)}`;
  }
}
