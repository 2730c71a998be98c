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
  /** SQL the column holds on rows made before it was added, and where an insert leaves it out. */
  readonly default?: string;
  /** What it holds (docs/warehouse.md); absent only for columns schema evolution added. */
  readonly about?: string;
}

export type TableRole = 'live' | 'child' | 'history' | 'child-history' | 'derived' | 'states';

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
  /** What a row is (docs/warehouse.md); absent only for child tables schema evolution made. */
  readonly about?: string;
}

const VERSION_COLUMNS: readonly TableColumn[] = [
  {
    name: 'valid_from',
    type: 'TIMESTAMPTZ',
    notNull: true,
    about: 'When this version was first seen: the time of the snapshot that recorded it.',
  },
  {
    name: 'valid_to',
    type: 'TIMESTAMPTZ',
    about: 'When the next version (or the deletion) was seen; null while this version is current.',
  },
  {
    name: 'is_deleted',
    type: 'BOOLEAN',
    notNull: true,
    about: 'Whether this version records the object gone from the listing (deleted or unpublished).',
  },
];

const PARTITION: TableColumn = {
  name: PARTITION_COLUMN,
  type: 'DATE',
  notNull: true,
  about: "The UTC day of the run's created_at: the Parquet partition its rows lie in.",
};

function asColumn(c: ColumnSpec, key: boolean): TableColumn {
  return {
    name: c.name,
    type: SQL_TYPE[c.kind],
    ...(c.required || key ? { notNull: true } : {}),
    ...(c.about === undefined ? {} : { about: c.about }),
  };
}

/** The child table's own columns: parent key, the item's key, its position, the rest. */
export function childColumns(child: ChildSpec, parent?: ResourceSpec): TableColumn[] {
  const keyCol = child.columns.find((c) => c.name === child.key);
  const of = parent ? ` (${parent.table}.${parent.key})` : '';
  const out: TableColumn[] = [
    { name: child.parentKey, type: 'VARCHAR', notNull: true, about: `The row's parent${of}.` },
  ];
  if (keyCol) out.push(asColumn(keyCol, true));
  if (child.positionColumn !== undefined) {
    out.push({
      name: child.positionColumn,
      type: 'BIGINT',
      ...(child.key === child.positionColumn ? { notNull: true } : {}),
      about: `Position of the item in its parent's \`${child.member}\` array, from 0.`,
    });
  }
  for (const c of child.columns) if (c !== keyCol) out.push(asColumn(c, false));
  return out;
}

const FETCHED_AT: TableColumn = {
  name: 'fetched_at',
  type: 'TIMESTAMPTZ',
  notNull: true,
  about: 'When runsync fetched the payload this row came from.',
};

/** Columns runsync adds to a resource's live table, by how the table is merged. */
function ownColumns(r: ResourceSpec): TableColumn[] {
  if (r.merge === 'whole-list') return [FETCHED_AT];
  if (r.merge !== 'latest') return [];
  const hash: TableColumn = {
    name: 'payload_hash',
    type: 'VARCHAR',
    notNull: true,
    about: 'A hash of the payload stored: a payload of the same updated_at with other content replaces the row.',
  };
  return [FETCHED_AT, hash, ...(r.states ? DELETION_COLUMNS : [])];
}

/** A run the API no longer has (see src/sync/deletions.ts). */
const DELETION_COLUMNS: readonly TableColumn[] = [
  {
    name: 'is_deleted',
    type: 'BOOLEAN',
    // Not NOT NULL: a warehouse made before gets the column by ALTER, which cannot add one.
    default: 'false',
    about:
      'Whether the API no longer has the run: missing from a whole re-listing of its created day and its detail answered `not_found`. Its child rows are gone; a run that comes back is restored.',
  },
  {
    name: 'deleted_at',
    type: 'TIMESTAMPTZ',
    about: "When runsync found the run deleted (the API's clock); null while it exists.",
  },
];

const STATE_COLUMNS: readonly TableColumn[] = [
  {
    name: 'valid_from',
    type: 'TIMESTAMPTZ',
    notNull: true,
    about:
      "When the state began: its `updated_at` (the API's time of the change), or for a run seen again after a deletion, when it was seen again if that is later.",
  },
  {
    name: 'valid_to',
    type: 'TIMESTAMPTZ',
    about:
      "When the next observed state began, or when the run was found deleted; null while this state is the run's current one.",
  },
  {
    name: 'observed_at',
    type: 'TIMESTAMPTZ',
    notNull: true,
    about: 'When runsync first fetched a payload in this state (at or after `valid_from`).',
  },
  {
    name: 'state_hash',
    type: 'VARCHAR',
    notNull: true,
    about: "A hash of the state's columns: a payload whose state hashes the same makes no new row.",
  },
];

/** The observed states of a resource: its summary columns, the counts, the validity. */
function statesTable(r: ResourceSpec, live: readonly TableColumn[], part: readonly TableColumn[]): TableDef {
  const spec = r.states as NonNullable<ResourceSpec['states']>;
  const columns = spec.columns.map((name) => {
    const c = live.find((l) => l.name === name);
    if (!c) throw new Error(`${spec.table} names ${name}, which ${r.table} does not have`);
    return c;
  });
  const counts: TableColumn[] = spec.counts.map((c) => ({
    name: c.name,
    type: 'BIGINT',
    notNull: true,
    about: c.about,
  }));
  return {
    resource: r,
    partitioned: part.length > 0,
    name: spec.table,
    role: 'states',
    columns: [...columns, ...counts, ...part, ...STATE_COLUMNS],
    primaryKey: [],
    orderBy: `${r.key}, valid_from`,
    about: spec.about,
  };
}

function historyTables(r: ResourceSpec, live: readonly TableColumn[], partitioned: boolean): TableDef[] {
  const base = { resource: r, partitioned };
  const hash: TableColumn = {
    name: 'content_hash',
    type: 'VARCHAR',
    notNull: true,
    about: "A hash of the version's content (its children included): a new hash is a new version.",
  };
  const versions = 'one row per version seen, `valid_to` null on the current one';
  const out: TableDef[] = [
    {
      ...base,
      name: `${r.table}_history`,
      role: 'history',
      columns: [...live.map((c) => (c.name === r.key ? { ...c, notNull: true } : c)), hash, ...VERSION_COLUMNS],
      primaryKey: [r.key, 'valid_from'],
      orderBy: `${r.key}, valid_from`,
      about: `Every version of ${r.table} (type 2): ${versions}, deletions included.`,
    },
  ];
  for (const child of r.children) {
    const order = child.orderBy.split(', ');
    out.push({
      ...base,
      name: `${child.table}_history`,
      role: 'child-history',
      child,
      columns: [...childColumns(child, r), ...VERSION_COLUMNS],
      primaryKey: [child.parentKey, child.key, 'valid_from'],
      orderBy: [order[0], 'valid_from', ...order.slice(1)].join(', '),
      about: `Every version of ${child.table}: ${versions}, valid as the version of its parent.`,
    });
  }
  return out;
}

export function tablesOf(r: ResourceSpec): TableDef[] {
  const partitioned = r.partitionBy !== undefined;
  const part: TableColumn[] = partitioned ? [PARTITION] : [];
  const live = r.columns.map((c) => asColumn(c, c.name === r.key));
  const base = { resource: r, partitioned };
  const out: TableDef[] = [
    {
      ...base,
      name: r.table,
      role: 'live',
      columns: [...live, ...part, ...ownColumns(r)],
      // Runs are kept unique by the merge (their rows are deleted by id, then inserted), as their
      // children are: a unique index holds every stored key in memory while a batch commits, which
      // grows with the warehouse without bound.
      primaryKey: r.merge === 'latest' ? [] : [r.key],
      orderBy: r.orderBy,
      about: r.about,
    },
  ];
  const keyed = r.merge === 'history';
  for (const child of r.children) {
    out.push({
      ...base,
      name: child.table,
      role: 'child',
      child,
      columns: [...childColumns(child, r), ...part],
      // Run children are kept unique by the merge, not an index, so bulk merges stay cheap.
      primaryKey: keyed ? [child.parentKey, child.key] : [],
      orderBy: child.orderBy,
      ...(child.about === undefined ? {} : { about: child.about }),
    });
  }
  for (const d of r.derived) {
    const of = out.find((t) => t.name === d.of);
    if (!of) throw new Error(`${d.name} derives from ${d.of}, which ${r.table} does not have`);
    out.push({
      ...of,
      name: d.name,
      role: 'derived',
      primaryKey: [],
      derivedFrom: { table: d.of, where: d.where },
      about: d.about,
    });
  }
  if (r.merge === 'history') out.push(...historyTables(r, live, partitioned));
  if (r.states) out.push(statesTable(r, live, part));
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
    const byDefault = c.default === undefined ? '' : ` DEFAULT ${c.default}`;
    return `  ${quoteIdent(c.name)} ${c.type}${byDefault}${constraint}`;
  });
  if (t.primaryKey.length > 1) cols.push(`  PRIMARY KEY (${t.primaryKey.map(quoteIdent).join(', ')})`);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(t.name)} (\n${cols.join(',\n')}\n)`;
}
