import { RUN_TOOL_OPTIONS } from '../resources/registry.ts';
import type { ChildSpec, ResourceSpec } from '../resources/types.ts';
import { asArray, asObject, flattenColumns, type Row } from './flatten-values.ts';

// Catalog objects and tool options as rows. Pure, like the run flattening; secrets must already
// be masked (mask-secrets.ts) when a tool comes here.

export interface CatalogRows {
  row: Row;
  /** Rows of the resource's child table (tool_parameters for tools; empty otherwise). */
  children: Row[];
  /** Child rows left out because an earlier one had the same key (the key is parent key, child key). */
  duplicateChildren: string[];
}

export function flattenCatalogObject(resource: ResourceSpec, obj: unknown): CatalogRows {
  const o = asObject(obj, '');
  const row = flattenColumns(o, resource.columns, '');
  const child = resource.children[0];
  if (!child) return { row, children: [], duplicateChildren: [] };
  return { row, ...childRows(o, child, row[resource.key] as string) };
}

function childRows(parent: Record<string, unknown>, child: ChildSpec, parentId: string): Omit<CatalogRows, 'row'> {
  const children: Row[] = [];
  const duplicateChildren: string[] = [];
  const value = parent[child.member];
  if (value === undefined || value === null) return { children, duplicateChildren };
  const items = asArray(value, child.member);
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const row: Row = { [child.parentKey]: parentId };
    if (child.positionColumn !== undefined) row[child.positionColumn] = i;
    flattenColumns(asObject(items[i], `${child.member}[${i}]`), child.columns, `${child.member}[${i}].`, row);
    const key = String(row[child.key]);
    if (seen.has(key)) {
      duplicateChildren.push(key);
      continue;
    }
    seen.add(key);
    children.push(row);
  }
  return { children, duplicateChildren };
}

export function flattenToolOption(option: unknown, resource: ResourceSpec = RUN_TOOL_OPTIONS): Row {
  return flattenColumns(asObject(option, ''), resource.columns, '');
}
