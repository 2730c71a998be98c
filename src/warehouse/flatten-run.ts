import type { Micros } from '../util/timestamp.ts';
import { asArray, asObject, checkColumns, flattenColumns, PayloadError, utcDate, type Row } from './flatten-values.ts';
import { RUN_CHILDREN, RUN_COLUMNS, type ChildTableSpec } from './spec-runs.ts';

// A run detail as rows of runs, run_messages, run_steps and run_evaluations. Pure: the same
// payload always gives the same rows, and a payload that cannot be flattened is refused with a
// PayloadError naming the member, never half-flattened.

export interface RunRows {
  run: Row;
  run_messages: Row[];
  run_steps: Row[];
  run_evaluations: Row[];
}

export interface RunIdentity {
  id: string;
  createdAt: Micros;
  updatedAt: Micros;
  createdDate: string;
}

export function flattenRunDetail(detail: unknown): RunRows {
  return walk(detail, true) as RunRows;
}

/**
 * Everything flattenRunDetail checks, without building rows or JSON text: the loader checks every
 * payload and lets DuckDB do the flattening, so this runs once per run detail loaded.
 */
export function checkRunDetail(detail: unknown): RunIdentity {
  const obj = asObject(detail, '');
  const run = flattenColumns(obj, RUN_COLUMNS, '', {}, false);
  const identity = identityOf(run);
  for (const spec of RUN_CHILDREN) {
    const items = asArray(obj[spec.member], spec.member);
    const seen = new Set<string>();
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item === null || typeof item !== 'object' || Array.isArray(item)) asObject(item, `${spec.member}[${i}]`);
      // Cells are read and dropped; the prefix of a member's name is built only for an error.
      const id = checkColumns(item as Record<string, unknown>, spec.columns, () => `${spec.member}[${i}].`);
      if (seen.has(id)) throw new PayloadError(`${spec.member}[${i}].id`, `duplicate id ${JSON.stringify(id)} within ${spec.member}`);
      seen.add(id);
    }
  }
  return identity;
}

function identityOf(run: Row): RunIdentity {
  const createdAt = run.created_at as Micros;
  return { id: run.id as string, createdAt, updatedAt: run.updated_at as Micros, createdDate: utcDate(createdAt) };
}

function walk(detail: unknown, jsonText: boolean): RunRows {
  const obj = asObject(detail, '');
  const run = flattenColumns(obj, RUN_COLUMNS, '', {}, jsonText);
  const createdDate = utcDate(run.created_at as Micros);
  run.created_date = createdDate;
  const out: RunRows = { run, run_messages: [], run_steps: [], run_evaluations: [] };
  for (const child of RUN_CHILDREN) out[child.table] = children(obj, child, run.id as string, createdDate, jsonText);
  return out;
}

function children(obj: Record<string, unknown>, spec: ChildTableSpec, runId: string, createdDate: string, jsonText: boolean): Row[] {
  // A detail always carries its three arrays; without them this is a summary, and merging it
  // would wipe the run's children.
  const items = asArray(obj[spec.member], spec.member);
  const rows: Row[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const where = `${spec.member}[${i}].`;
    const row: Row = { run_id: runId };
    flattenColumns(asObject(items[i], `${spec.member}[${i}]`), spec.columns, where, row, jsonText);
    const id = row.id as string;
    if (seen.has(id)) throw new PayloadError(`${where}id`, `duplicate id ${JSON.stringify(id)} within ${spec.member}`);
    seen.add(id);
    row.created_date = createdDate;
    rows.push(row);
  }
  return rows;
}
