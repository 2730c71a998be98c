import { RUNS } from '../resources/registry.ts';
import { EVOLVED_CHILD_KEY } from '../resources/schema-evolve.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';
import { asArray, asObject, checkColumns, flattenColumns, PayloadError, type Row, utcDate } from './flatten-values.ts';

// A run detail as rows of runs and its child tables. Pure: the same payload always gives the same
// rows, and a payload that cannot be flattened is refused with a PayloadError naming the member,
// never half-flattened. Declared columns are checked strictly; columns added since their
// declaration (schema evolution) take what comes, widening their type first where it must.

export interface RunRows {
  run: Row;
  /** Rows of each child table, by table name. */
  children: Record<string, Row[]>;
}

export interface RunIdentity {
  id: string;
  createdAt: Micros;
  updatedAt: Micros;
  createdDate: string;
}

const declared = (columns: readonly ColumnSpec[]) => columns.filter((c) => !c.evolved);
const isEvolved = (child: ChildSpec) => child.key === EVOLVED_CHILD_KEY && child.positionColumn === EVOLVED_CHILD_KEY;

export function flattenRunDetail(detail: unknown, resource: ResourceSpec = RUNS): RunRows {
  const obj = asObject(detail, '');
  checkRunDetail(obj, resource);
  const run = flattenColumns(obj, resource.columns, '', {});
  const createdDate = utcDate(run.created_at as Micros);
  run.created_date = createdDate;
  const children: Record<string, Row[]> = {};
  for (const child of resource.children) {
    children[child.table] = childRows(obj, child, run.id as string, createdDate);
  }
  return { run, children };
}

/**
 * Everything flattenRunDetail checks, without building rows or JSON text: the loader checks every
 * payload and lets DuckDB do the flattening, so this runs once per run detail loaded.
 */
export function checkRunDetail(detail: unknown, resource: ResourceSpec = RUNS): RunIdentity {
  const obj = asObject(detail, '');
  const run = flattenColumns(obj, declared(resource.columns), '', {}, false);
  for (const spec of resource.children) {
    if (isEvolved(spec)) continue;
    // A detail always carries its arrays; without them this is a summary, and merging it would
    // wipe the run's children.
    const items = asArray(obj[spec.member], spec.member);
    const columns = declared(spec.columns);
    const seen = new Set<string>();
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item === null || typeof item !== 'object' || Array.isArray(item)) asObject(item, `${spec.member}[${i}]`);
      // Cells are read and dropped; the prefix of a member's name is built only for an error.
      const id = checkColumns(item as Record<string, unknown>, columns, () => `${spec.member}[${i}].`);
      if (seen.has(id))
        throw new PayloadError(`${spec.member}[${i}].id`, `duplicate id ${JSON.stringify(id)} within ${spec.member}`);
      seen.add(id);
    }
  }
  const createdAt = run.created_at as Micros;
  return { id: run.id as string, createdAt, updatedAt: run.updated_at as Micros, createdDate: utcDate(createdAt) };
}

function childRows(obj: Record<string, unknown>, spec: ChildSpec, runId: string, createdDate: string): Row[] {
  const value = obj[spec.member];
  if (!Array.isArray(value)) return [];
  const rows: Row[] = [];
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    if (item === null || typeof item !== 'object' || Array.isArray(item)) continue;
    const row: Row = { [spec.parentKey]: runId };
    if (spec.positionColumn !== undefined) row[spec.positionColumn] = i;
    flattenColumns(item as Record<string, unknown>, spec.columns, `${spec.member}[${i}].`, row);
    row.created_date = createdDate;
    rows.push(row);
  }
  return rows;
}
