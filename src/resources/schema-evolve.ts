import { type KnownNode, knownNode, mergeObserved, type Observed } from './schema-observe.ts';
import { columnName } from './shape.ts';
import type { ChildSpec, ColumnKind, ColumnSpec, ResourceSpec } from './types.ts';

// Schema evolution as a pure plan: what the API sent beyond the schema (an observed type tree)
// becomes new columns, wider column types and new child tables; the ledger of those changes
// (_sync_schema_changes) applied to the declarations gives the schema in force. A member that
// disappears keeps its column. A member seen only as null waits for a value to get a type.

/** `held`: a new member seen while schema evolution was off, kept in the raw archive only. */
export type SchemaChangeKind = 'column' | 'widen' | 'child-table' | 'held';

export interface SchemaChange {
  /** The resource (its live table's name). */
  readonly resource: string;
  /** The table changed: the live table, a child table, or the new child table. */
  readonly table: string;
  readonly change: SchemaChangeKind;
  /** The new or widened column (null for a new child table). */
  readonly column: string | null;
  /** Member path from the table's items (for a new child table: its member in the parent). */
  readonly path: readonly string[];
  readonly kind: ColumnKind | null;
  readonly previousKind: ColumnKind | null;
}

/** Nested objects of a new member below this depth are kept as JSON. */
const MAX_DEPTH = 4;

const SCALAR_KIND: Partial<Record<Observed['t'], ColumnKind>> = {
  boolean: 'boolean',
  bigint: 'bigint',
  double: 'double',
  timestamp: 'timestamptz',
  text: 'text',
  json: 'json',
};
const LIST_KIND: Partial<Record<Observed['t'], ColumnKind>> = {
  boolean: 'boolean_list',
  bigint: 'bigint_list',
  double: 'double_list',
  timestamp: 'text_list',
  text: 'text_list',
};

/** The column kind a leaf of this shape needs, or null while only nulls were seen. */
function leafKind(o: Observed): ColumnKind | null {
  if (o.t === 'null') return null;
  if (o.t === 'object') return 'json';
  if (o.t === 'array') return o.item.t === 'null' ? null : (LIST_KIND[o.item.t] ?? 'json');
  return SCALAR_KIND[o.t] ?? 'json';
}

function observedOf(kind: ColumnKind): Observed {
  const list = (Object.entries(LIST_KIND) as [Observed['t'], ColumnKind][]).find(([, k]) => k === kind);
  if (list) return { t: 'array', item: { t: list[0] } as Observed };
  const scalar = (Object.entries(SCALAR_KIND) as [Observed['t'], ColumnKind][]).find(([, k]) => k === kind);
  return { t: scalar ? scalar[0] : 'json' } as Observed;
}

interface Table {
  name: string;
  columns: ColumnSpec[];
  /** Whether new arrays of objects here become child tables. */
  children: boolean;
}

/** Changes that make `resource` hold what was observed of its payloads. */
export function planChanges(resource: ResourceSpec, observed: Observed | null): SchemaChange[] {
  if (observed === null || observed.t !== 'object') return [];
  const out: SchemaChange[] = [];
  const root: Table = { name: resource.table, columns: [...resource.columns], children: resource.newArrays !== 'json' };
  const tables = new Set([resource.table, ...resource.children.map((c) => c.table)]);
  const plan = (o: Observed, node: KnownNode | undefined, path: string[], table: Table): void => {
    if (node?.ignored) return;
    if (node?.column) {
      if (node.column.evolved) widen(node.column, o, table, path);
      return;
    }
    if (node?.child) {
      if (o.t !== 'array' || o.item.t !== 'object') return;
      const spec = node.child.spec;
      const child: Table = { name: spec.table, columns: [...spec.columns], children: false };
      for (const [m, v] of o.item.members) plan(v, node.child.items.members?.get(m), [m], child);
      return;
    }
    if (node?.members) {
      if (o.t !== 'object') return;
      for (const [m, v] of o.members) plan(v, node.members.get(m), [...path, m], table);
      return;
    }
    added(o, path, table);
  };
  const widen = (column: ColumnSpec, o: Observed, table: Table, path: string[]): void => {
    const need = leafKind(mergeObserved(observedOf(column.kind), o));
    if (need === null || need === column.kind) return;
    out.push(change(table.name, 'widen', column.name, path, need, column.kind));
  };
  const added = (o: Observed, path: string[], table: Table): void => {
    if (o.t === 'object' && path.length < MAX_DEPTH) {
      for (const [m, v] of o.members) added(v, [...path, m], table);
      return;
    }
    if (o.t === 'array' && o.item.t === 'object' && table.children && path.length === 1) {
      const name = uniqueTable(
        `${resource.newArrays === 'json' ? '' : resource.newArrays.tablePrefix}${columnName(path)}`,
        tables,
      );
      tables.add(name);
      out.push(change(name, 'child-table', null, path, null, null));
      const child: Table = { name, columns: [], children: false };
      for (const [m, v] of o.item.members) added(v, [m], child);
      return;
    }
    const kind = leafKind(o);
    if (kind === null) return;
    const name = uniqueColumn(columnName(path), table.columns);
    table.columns.push({ name, kind, path, evolved: true });
    out.push(change(table.name, 'column', name, path, kind, null));
  };
  const change = (
    table: string,
    kind: SchemaChangeKind,
    column: string | null,
    path: readonly string[],
    to: ColumnKind | null,
    from: ColumnKind | null,
  ): SchemaChange => ({ resource: resource.table, table, change: kind, column, path, kind: to, previousKind: from });
  plan(observed, knownNode(resource), [], root);
  return out;
}

const RESERVED_CHILD_COLUMNS = new Set(['run_id', 'tool_id', 'item_index', 'created_date']);

function uniqueColumn(name: string, taken: readonly ColumnSpec[]): string {
  const used = new Set(taken.map((c) => c.name));
  let candidate = RESERVED_CHILD_COLUMNS.has(name) || SYSTEM_COLUMNS.has(name) ? `${name}_value` : name;
  for (let n = 2; used.has(candidate); n++) candidate = `${name}_${n}`;
  return candidate;
}

function uniqueTable(name: string, taken: ReadonlySet<string>): string {
  let candidate = name;
  for (let n = 2; taken.has(candidate); n++) candidate = `${name}_${n}`;
  return candidate;
}

/** Columns runsync adds to resource tables itself: a member of the same name gets another. */
const SYSTEM_COLUMNS = new Set([
  'created_date',
  'fetched_at',
  'payload_hash',
  'content_hash',
  'valid_from',
  'valid_to',
  'is_deleted',
]);

/** The key and position column of a child table runsync made for an array the API added. */
export const EVOLVED_CHILD_KEY = 'item_index';

/** The declarations with the ledger's changes applied, in the order they were made. */
export function applyChanges(resources: readonly ResourceSpec[], changes: readonly SchemaChange[]): ResourceSpec[] {
  const out = new Map(resources.map((r) => [r.table, { ...r, columns: [...r.columns], children: [...r.children] }]));
  for (const c of changes) {
    const r = out.get(c.resource);
    if (!r || c.change === 'held') continue;
    if (c.change === 'child-table') {
      if (r.children.some((k) => k.table === c.table)) continue;
      const child: ChildSpec = {
        table: c.table,
        member: c.path[0] as string,
        parentKey: r.children[0]?.parentKey ?? `${r.table.replace(/s$/, '')}_id`,
        key: EVOLVED_CHILD_KEY,
        positionColumn: EVOLVED_CHILD_KEY,
        duplicates: 'drop',
        columns: [],
        orderBy: `${r.children[0]?.parentKey ?? 'id'}, ${EVOLVED_CHILD_KEY}`,
      };
      r.children.push(child);
      continue;
    }
    const childIndex = r.children.findIndex((k) => k.table === c.table);
    const columns = childIndex >= 0 ? [...(r.children[childIndex] as ChildSpec).columns] : r.columns;
    const column: ColumnSpec = { name: c.column as string, kind: c.kind as ColumnKind, path: c.path, evolved: true };
    const at = columns.findIndex((k) => k.name === c.column);
    if (c.change === 'widen' && at >= 0) columns[at] = { ...(columns[at] as ColumnSpec), kind: column.kind };
    else if (c.change === 'column' && at < 0) columns.push(column);
    if (childIndex >= 0) r.children[childIndex] = { ...(r.children[childIndex] as ChildSpec), columns };
  }
  return [...out.values()];
}
