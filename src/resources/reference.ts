import { BOOKKEEPING, type BookkeepingNote, LEDGER_VIEWS } from './reference-notes.ts';
import { type TableColumn, type TableDef, tablesOf } from './tables.ts';
import type { ColumnSpec, ResourceSpec } from './types.ts';

// The warehouse reference (docs/warehouse.md), rendered from what declares the warehouse: the
// resource registry for the resource tables and their meanings, views.sql's comments for the
// ready-made views, reference-notes.ts for the bookkeeping tables, and a freshly migrated
// warehouse as DuckDB describes it for the types of everything not declared here. Pure: the same
// input gives the same page, so a test can tell when the page is out of date.

export interface DescribedColumn {
  readonly name: string;
  /** As duckdb_columns() gives it. */
  readonly type: string;
}

export interface DescribedObject {
  readonly name: string;
  readonly kind: 'table' | 'view';
  readonly columns: readonly DescribedColumn[];
  readonly primaryKey: readonly string[];
}

export interface ReferenceInput {
  readonly resources: readonly ResourceSpec[];
  /** Every table and view of a freshly migrated warehouse (schema main). */
  readonly database: readonly DescribedObject[];
  /** schemas/duckdb/views.sql: its comments say what each ready-made view answers. */
  readonly viewsSql: string;
  /** Defaults to reference-notes.ts. */
  readonly bookkeeping?: Readonly<Record<string, BookkeepingNote>>;
  /** The completeness ledger's views; defaults to reference-notes.ts. */
  readonly ledger?: Readonly<Record<string, BookkeepingNote>>;
}

/** DuckDB's names for a type, as the declarations write it. */
export function typeName(duckdbType: string): string {
  return duckdbType.replaceAll('TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ');
}

const code = (s: string) => `\`${s}\``;
const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');
const row = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [row(head), row(head.map(() => '---')), ...rows.map(row)].join('\n');
}

/** The comment block above each `CREATE OR REPLACE VIEW`, as Markdown. */
export function viewNotes(sql: string): Map<string, string> {
  const notes = new Map<string, string>();
  let block: string[] = [];
  for (const line of sql.split('\n')) {
    const view = /^CREATE OR REPLACE VIEW (\w+)/.exec(line);
    if (view?.[1]) notes.set(view[1], commentMarkdown(block));
    block = line.startsWith('--') ? [...block, line.replace(/^-- ?/, '')] : [];
  }
  return notes;
}

/** A comment's lines as paragraphs, its aligned `term   meaning` lines as a list, in their order. */
function commentMarkdown(lines: readonly string[]): string {
  const blocks: { list: boolean; lines: string[] }[] = [];
  const add = (list: boolean, line: string) => {
    const last = blocks[blocks.length - 1];
    if (last && last.list === list && !list) last.lines.push(line);
    else blocks.push({ list, lines: [line] });
  };
  for (const line of lines) {
    const item = /^ {2}(\S+)\s{2,}(.*)$/.exec(line);
    const list = blocks[blocks.length - 1];
    if (item) {
      if (list?.list) list.lines.push(`- ${code(item[1] as string)}: ${item[2]}`);
      else add(true, `- ${code(item[1] as string)}: ${item[2]}`);
    } else if (/^ {3,}\S/.test(line) && list?.list) list.lines[list.lines.length - 1] += ` ${line.trim()}`;
    else add(false, line.trim());
  }
  return blocks.map((b) => b.lines.join(b.list ? '\n' : ' ')).join('\n\n');
}

const FILES: readonly (readonly [string, string])[] = [
  [
    'runsync.duckdb',
    'The warehouse: every table below. One process writes it at a time, and opens it only for each load.',
  ],
  [
    'analytics.duckdb',
    'Views over the Parquet tree under the same names (the resource tables, `run_tool_calls` and the ready-made views), never opened by the writer: open it at any time. Bookkeeping tables are not in it.',
  ],
  [
    'parquet/',
    'The Parquet tree (or `RUNSYNC_PARQUET_URL`): every resource table, see [The Parquet tree](#the-parquet-tree).',
  ],
  [
    'raw/',
    'The raw archive: `raw/<endpoint>/<YYYY-MM-DD>/*.parquet`, every payload that changed the warehouse, from which `runsync rebuild` re-derives the tables. Columns `seq`, `kind` (payload, rejected or manifest), `id`, `updated_at`, `fetched_at`, `listed_at`, `payload` (the JSON text, Brotli-compressed); DuckDB reads it with `read_parquet`.',
  ],
  ['staging/', "The worker fleet's fetched details waiting for the writer (or `RUNSYNC_STAGING_URL`)."],
  ['report.html', 'The page `runsync report` writes.'],
];

const CONVENTIONS: readonly string[] = [
  "A scalar member of a nested object becomes a `parent_member` column (`ticket.id` → `ticket_id`); a member already prefixed keeps one prefix (`trigger.trigger_message_type` → `trigger_message_type`). The API's `order` is `ordinal`; another SQL keyword gets `_value`.",
  'Times are `TIMESTAMPTZ` with the microseconds the API sent. Arrays of scalars are DuckDB lists (`VARCHAR[]`); free-form JSON (tool input and output, approval params, `model_config`, `input_schema`, `auth`) is `JSON`.',
  'Values the spec does not enumerate (statuses, step types, roles, sources) are text: a new value is a new string, never an error.',
  "A run's child rows are replaced as a whole when the run is fetched again: a step that disappeared upstream disappears here. Every run table carries `created_date`, the UTC day its run was created.",
  'A catalog table holds what the last snapshot listed; its `_history` table holds every version (`valid_from`, `valid_to` null while current, `is_deleted` when it left the listing).',
  "Sensitive values of custom tools' `headers` and `auth` are masked (a short fingerprint) before anything reaches disk, the raw archive included.",
  'A member the API adds becomes a column of its table, or a `run_<member>` table for a new array of objects on a run (schema evolution): such columns and tables are not listed here; `_sync_schema_changes` records each.',
  'Keys are unique. Run tables are kept unique by the merge rather than an index; the others carry a primary key.',
];

function apiMember(def: TableDef, c: TableColumn): string {
  const declared = (def.child?.columns ?? def.resource.columns).find((s: ColumnSpec) => s.name === c.name);
  if (!declared) return '—';
  const path = declared.path.join('.');
  return code(def.child ? `${def.child.member}[].${path}` : path);
}

function keyOf(def: TableDef): readonly string[] {
  if (def.primaryKey.length) return def.primaryKey;
  if (def.role === 'states') return [def.resource.key, 'valid_from'];
  if (def.child) return [def.child.parentKey, def.child.key];
  return [def.resource.key];
}

function parquetPath(def: TableDef): string {
  return def.partitioned ? `parquet/${def.name}/created_date=YYYY-MM-DD/*.parquet` : `parquet/${def.name}/data.parquet`;
}

/** Where a table's rows come from. */
function source(def: TableDef): string {
  const r = def.resource;
  const scope = `scope \`${r.scope}\``;
  if (r.merge === 'whole-list') return `\`GET /api/v1${r.endpoint.list}\`, read whole by every snapshot, ${scope}`;
  if (r.merge === 'history') return `every page of \`GET /api/v1${r.endpoint.list}\`, read by every snapshot, ${scope}`;
  const detail = `\`GET /api/v1${r.endpoint.get ?? r.endpoint.list}\``;
  if (def.child) return `the run's detail, ${detail}, ${scope}`;
  return `the runs list (summaries) and each run's detail, ${detail}, ${scope}`;
}

function resourceSection(def: TableDef): string {
  const missing = def.columns.find((c) => !c.about);
  if (!def.about || missing)
    throw new Error(`${def.name}${missing ? `.${missing.name}` : ''} has no description in the registry`);
  const facts = [
    `Key: ${keyOf(def).map(code).join(', ')}${def.role === 'derived' ? ` (a view of ${code(def.derivedFrom?.table ?? '')})` : ''}.`,
    `From ${source(def)}.`,
    `Parquet: ${code(parquetPath(def))}.`,
  ];
  const rows = def.columns.map((c) => [code(c.name), c.type, apiMember(def, c), c.about ?? '']);
  return [
    `### ${code(def.name)}`,
    def.about,
    facts.map((f) => `- ${f}`).join('\n'),
    table(['column', 'type', 'API member', 'meaning'], rows),
  ].join('\n\n');
}

function described(db: readonly DescribedObject[], name: string): DescribedObject {
  const o = db.find((d) => d.name === name);
  if (!o) throw new Error(`${name} is not in the migrated warehouse`);
  return o;
}

function viewSection(o: DescribedObject, note: string): string {
  const rows = o.columns.map((c) => [code(c.name), typeName(c.type)]);
  return [`### ${code(o.name)}`, note, table(['column', 'type'], rows)].join('\n\n');
}

function notedColumns(o: DescribedObject, note: BookkeepingNote): string[][] {
  const names = o.columns.map((c) => c.name);
  const lacking = names.filter((n) => !note.columns[n]);
  const stale = Object.keys(note.columns).filter((n) => !names.includes(n));
  if (lacking.length || stale.length)
    throw new Error(
      `${o.name}: ${[...lacking.map((n) => `${n} has no line in reference-notes.ts`), ...stale.map((n) => `${n} is not a column`)].join('; ')}`,
    );
  return o.columns.map((c) => [code(c.name), typeName(c.type), note.columns[c.name] ?? '']);
}

function bookkeepingSection(o: DescribedObject, note: BookkeepingNote): string {
  const rows = notedColumns(o, note);
  const key = o.primaryKey.length ? `Key: ${o.primaryKey.map(code).join(', ')}.` : 'No key: rows are added.';
  return [`### ${code(o.name)}`, note.about, key, table(['column', 'type', 'meaning'], rows)].join('\n\n');
}

function ledgerSection(o: DescribedObject, note: BookkeepingNote): string {
  return [`### ${code(o.name)}`, note.about, table(['column', 'type', 'meaning'], notedColumns(o, note))].join('\n\n');
}

function checkCovered(input: ReferenceInput, declared: readonly string[], views: readonly string[]): void {
  const notes = input.bookkeeping ?? BOOKKEEPING;
  const known = new Set([...declared, ...views, ...Object.keys(notes), ...Object.keys(input.ledger ?? LEDGER_VIEWS)]);
  const unknown = input.database.filter((o) => !known.has(o.name)).map((o) => o.name);
  if (unknown.length)
    throw new Error(`not described anywhere: ${unknown.join(', ')} (declare them, or add them to reference-notes.ts)`);
}

const INTRO = [
  '# Warehouse reference',
  '<!-- Generated by `npm run docs:warehouse` from src/resources (the registry and reference-notes.ts), schemas/duckdb/views.sql and a freshly migrated warehouse. Edit those, not this page. -->',
  'Every table, view and column runsync writes under `RUNSYNC_WAREHOUSE_DIR` (default `./warehouse`), with its type, key and meaning. Table and key names are fixed: analysts and dashboards depend on them. How to query them is in the [user guide](user-guide.md#querying).',
];

const CONTENTS = [
  '- [Files](#files)',
  '- [Conventions](#conventions)',
  '- [Resource tables](#resource-tables)',
  '- [Ready-made views](#ready-made-views)',
  '- [Completeness ledger](#completeness-ledger)',
  '- [Bookkeeping tables](#bookkeeping-tables)',
  '- [The Parquet tree](#the-parquet-tree)',
].join('\n');

function parquetSection(defs: readonly TableDef[]): string {
  const rows = defs.map((d) => [code(d.name), code(parquetPath(d))]);
  return [
    '## The Parquet tree',
    "Every resource table is exported to `warehouse/parquet/` (or to `RUNSYNC_PARQUET_URL`), ZSTD-compressed, with the columns above. Run tables are hive-partitioned by `created_date` (the partition column is in the path, not in the files); a quiet day is one `data.parquet`, a busy one a file per span of created time, `part-HHMM.parquet` (UTC, the span's first minute), and all rows of a run lie in the file of its created time. Read a table as every `*.parquet` under its folder. In an object store the tree also holds `_latest.json`, `_manifests/`, `_data/` and `_retired/`: see [operations](operations.md#object-storage).",
    table(['table', 'files'], rows),
  ].join('\n\n');
}

/** docs/warehouse.md. Throws when something in the warehouse has no description. */
export function renderWarehouseReference(input: ReferenceInput): string {
  const defs = input.resources.flatMap(tablesOf);
  const notes = input.bookkeeping ?? BOOKKEEPING;
  const views = viewNotes(input.viewsSql);
  checkCovered(
    input,
    defs.map((d) => d.name),
    [...views.keys()],
  );
  const parts = [
    ...INTRO,
    CONTENTS,
    '## Files',
    table(
      ['path', 'what it is'],
      FILES.map(([p, what]) => [code(p), what]),
    ),
    '## Conventions',
    CONVENTIONS.map((c) => `- ${c}`).join('\n'),
    '## Resource tables',
    ...defs.map(resourceSection),
    '## Ready-made views',
    'Defined in `schemas/duckdb/views.sql`, in `runsync.duckdb` and, with the same definitions, in `analytics.duckdb`. A day is the UTC day a run was created; a rate is a fraction from 0 to 1.',
    ...[...views].map(([name, note]) => viewSection(described(input.database, name), note)),
    '## Completeness ledger',
    'Views in `runsync.duckdb` only (not in `analytics.duckdb`): whether the warehouse holds every run the API listed, day by day. `runsync status` sums them up in one line; `runsync verify` repairs what they flag.',
    ...Object.entries(input.ledger ?? LEDGER_VIEWS).map(([name, note]) =>
      ledgerSection(described(input.database, name), note),
    ),
    '## Bookkeeping tables',
    'In `runsync.duckdb` only, written in the same transactions as the rows they describe. Names start with `_sync` (the sync) or `_report` (sums for `runsync report`).',
    ...Object.entries(notes).map(([name, note]) => bookkeepingSection(described(input.database, name), note)),
    parquetSection(defs),
  ];
  return `${parts.join('\n\n')}\n`;
}
