import { quoteIdent } from '../util/sql-text.ts';
import type { ChildSpec, ColumnKind, ColumnSpec, ResourceSpec } from './types.ts';

// The tables a resource is stored in, derived from its declaration: the live table, one per child
// array, the type-2 history of both where the resource keeps one, and views the export writes like
// tables. DDL, the export, the analytics views and status all read this one list.

export const PARTITION_COLUMN = 'created_date';

export const SQL_TYPE: Readonly<Record<ColumnKind, string>> = {
  text: 'VARCHAR',
  boolean: 'BOOLEAN',
  double: 'DOUBLE',
  bigint: 'BIGINT',
  timestamptz: 'TIMESTAMPTZ',
  json: 'JSON',
  text_list: 'VARCHAR[]',
  bigint_list: 'BIGINT[]',
  double_list: 'DOUBLE[]',
  boolean_list: 'BOOLEAN[]',
};

export interface TableColumn {
  readonly name: string;
  readonly type: string;
  readonly notNull?: boolean;
}

export type TableRole = 'live' | 'child' | 'history' | 'child-history' | 'derived';

export interface TableDef {
  readonly name: string;
  readonly role: TableRole;
  readonly resource: ResourceSpec;
  readonly child?: ChildSpec;
  readonly columns: readonly TableColumn[];
  readonly primaryKey: readonly string[];
  /** Exported as hive partitions by created_date (run tables), or as one file. */
  readonly partitioned: boolean;
  readonly orderBy: string;
  /** For a derived table: the table it selects from, and how. */
  readonly derivedFrom?: { readonly table: string; readonly where: string };
}

const VERSION_COLUMNS: readonly TableColumn[] = [
  { name: 'valid_from', type: 'TIMESTAMPTZ', notNull: true },
  { name: 'valid_to', type: 'TIMESTAMPTZ' },
  { name: 'is_deleted', type: 'BOOLEAN', notNull: true },
];

function asColumn(c: ColumnSpec, key: boolean): TableColumn {
  return { name: c.name, type: SQL_TYPE[c.kind], ...(c.required || key ? { notNull: true } : {}) };
}

/** The child table's own columns: parent key, the item's key, its position, the rest. */
export function childColumns(child: ChildSpec): TableColumn[] {
  const keyCol = child.columns.find((c) => c.name === child.key);
  const out: TableColumn[] = [{ name: child.parentKey, type: 'VARCHAR', notNull: true }];
  if (keyCol) out.push(asColumn(keyCol, true));
  if (child.positionColumn !== undefined) {
    out.push({
      name: child.positionColumn,
      type: 'BIGINT',
      ...(child.key === child.positionColumn ? { notNull: true } : {}),
    });
  }
  for (const c of child.columns) if (c !== keyCol) out.push(asColumn(c, false));
  return out;
}

export function tablesOf(r: ResourceSpec): TableDef[] {
  const partitioned = r.partitionBy !== undefined;
  const part: TableColumn[] = partitioned ? [{ name: PARTITION_COLUMN, type: 'DATE', notNull: true }] : [];
  const live = r.columns.map((c) => asColumn(c, c.name === r.key));
  const own: TableColumn[] =
    r.merge === 'latest'
      ? [
          { name: 'fetched_at', type: 'TIMESTAMPTZ', notNull: true },
          { name: 'payload_hash', type: 'VARCHAR', notNull: true },
        ]
      : r.merge === 'whole-list'
        ? [{ name: 'fetched_at', type: 'TIMESTAMPTZ', notNull: true }]
        : [];
  const base = { resource: r, partitioned };
  const out: TableDef[] = [
    {
      ...base,
      name: r.table,
      role: 'live',
      columns: [...live, ...part, ...own],
      // Runs are kept unique by the merge (their rows are deleted by id, then inserted), as their
      // children are: a unique index holds every stored key in memory while a batch commits, which
      // grows with the warehouse (tens of MB at a million runs).
      primaryKey: r.merge === 'latest' ? [] : [r.key],
      orderBy: r.orderBy,
    },
  ];
  const keyed = r.merge === 'history';
  for (const child of r.children) {
    const cols = childColumns(child);
    out.push({
      ...base,
      name: child.table,
      role: 'child',
      child,
      columns: [...cols, ...part],
      // Run children are kept unique by the merge, not an index, so bulk merges stay cheap.
      primaryKey: keyed ? [child.parentKey, child.key] : [],
      orderBy: child.orderBy,
    });
  }
  for (const d of r.derived) {
    const of = out.find((t) => t.name === d.of);
    if (!of) throw new Error(`${d.name} derives from ${d.of}, which ${r.table} does not have`);
    out.push({ ...of, name: d.name, role: 'derived', primaryKey: [], derivedFrom: { table: d.of, where: d.where } });
  }
  if (r.merge === 'history') {
    const hash: TableColumn = { name: 'content_hash', type: 'VARCHAR', notNull: true };
    out.push({
      ...base,
      name: `${r.table}_history`,
      role: 'history',
      columns: [...live.map((c) => (c.name === r.key ? { ...c, notNull: true } : c)), hash, ...VERSION_COLUMNS],
      primaryKey: [r.key, 'valid_from'],
      orderBy: `${r.key}, valid_from`,
    });
    for (const child of r.children) {
      const order = child.orderBy.split(', ');
      out.push({
        ...base,
        name: `${child.table}_history`,
        role: 'child-history',
        child,
        columns: [...childColumns(child), ...VERSION_COLUMNS],
        primaryKey: [child.parentKey, child.key, 'valid_from'],
        orderBy: [order[0], 'valid_from', ...order.slice(1)].join(', '),
      });
    }
  }
  return out;
}

/** CREATE statements for a table that does not exist yet. */
export function createTableSql(t: TableDef): string {
  if (t.derivedFrom) {
    const { table, where } = t.derivedFrom;
    return `CREATE VIEW IF NOT EXISTS ${quoteIdent(t.name)} AS SELECT * FROM ${quoteIdent(table)} WHERE ${where}`;
  }
  const single = t.primaryKey.length === 1 ? t.primaryKey[0] : undefined;
  const cols = t.columns.map((c) => {
    const constraint = c.name === single ? ' PRIMARY KEY' : c.notNull ? ' NOT NULL' : '';
    return `  ${quoteIdent(c.name)} ${c.type}${constraint}`;
  });
  if (t.primaryKey.length > 1) cols.push(`  PRIMARY KEY (${t.primaryKey.map(quoteIdent).join(', ')})`);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(t.name)} (\n${cols.join(',\n')}\n)`;
}
