// A resource of the Export API as runsync stores it: where it comes from, how it is keyed, which
// member feeds which column, which arrays become child tables, whether it keeps a type-2 history,
// and how it is archived and exported. Everything else (DDL, flattening, validation, staging SQL,
// the export, rebuild and status) is derived from these declarations.

/** A column's type. Lists hold scalars of one kind. */
export type ColumnKind =
  | 'text'
  | 'boolean'
  | 'double'
  | 'bigint'
  | 'timestamptz'
  | 'json'
  | 'text_list'
  | 'bigint_list'
  | 'double_list'
  | 'boolean_list';

export interface ColumnSpec {
  readonly name: string;
  readonly kind: ColumnKind;
  /** Member path inside the object; empty parents (null or absent) give a null cell. */
  readonly path: readonly string[];
  /** The payload is refused when this member is absent or null. */
  readonly required?: boolean;
  /** Added to the table after its declaration, when the API first sent the member. */
  readonly evolved?: boolean;
  /** What the column holds, for the warehouse reference; declared columns all have one. */
  readonly about?: string;
}

/** An array member of a resource whose items are rows of a table of their own. */
export interface ChildSpec {
  readonly table: string;
  /** The member holding the items. */
  readonly member: string;
  /** The parent's key column, first in every child row. */
  readonly parentKey: string;
  /** The key of a child row besides the parent key (an item member, or the item's position). */
  readonly key: string;
  /** Position of the item in its array, as this column (when the items carry no order of their own). */
  readonly positionColumn?: string;
  /** Duplicate keys within one parent: the payload is refused, or later duplicates are dropped. */
  readonly duplicates: 'refuse' | 'drop';
  readonly columns: readonly ColumnSpec[];
  /** Sort order of the exported files, for reproducible output. */
  readonly orderBy: string;
  /** What a row is, for the warehouse reference; declared child tables all have one. */
  readonly about?: string;
}

/** A view over a table that the export writes like a table (run_tool_calls). */
export interface DerivedTable {
  readonly name: string;
  readonly of: string;
  readonly where: string;
  readonly about: string;
}

export type ArchiveName = 'runs' | 'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks' | 'tool-options';
export type SchemaName =
  | 'run-summary'
  | 'run-detail'
  | 'run-tool-option'
  | 'tool'
  | 'agent'
  | 'guideline'
  | 'guardrail'
  | 'runbook';

/**
 * - `latest`: one row per key, the payload with the newest updated_at wins and replaces the
 *   row and its children (run details);
 * - `history`: a live table plus `<table>_history`, type 2 (catalog objects);
 * - `whole-list`: the endpoint returns the whole list at once, which replaces the table.
 */
/** A count of a run's child rows that a state records (messages, steps, tool calls, evaluations). */
export interface StateCount {
  readonly name: string;
  /** The child array counted. */
  readonly member: string;
  /** Only items whose member `type` is this (tool calls among steps). */
  readonly ofType?: string;
  readonly about: string;
}

/**
 * Every state of a record that runsync observed, one row per state (type 2): the live table's
 * columns named here and the counts of its children, each state valid from its `updated_at`.
 */
export interface StatesSpec {
  readonly table: string;
  /** Live-table columns a state is made of (the summary's, not the detail's). */
  readonly columns: readonly string[];
  readonly counts: readonly StateCount[];
  readonly about: string;
}

export type MergeStrategy = 'latest' | 'history' | 'whole-list';

export interface ResourceSpec {
  /** The live table's name. */
  readonly table: string;
  /** Path under /api/v1 of the list, and of one object by id when there is one. */
  readonly endpoint: { readonly list: string; readonly get?: string };
  readonly scope: string;
  /** JSON Schema (schemas/api) of what is loaded: the detail for runs, the list item otherwise. */
  readonly schema: SchemaName;
  readonly key: string;
  readonly merge: MergeStrategy;
  readonly columns: readonly ColumnSpec[];
  readonly children: readonly ChildSpec[];
  readonly derived: readonly DerivedTable[];
  /** The observed states of a `latest` resource, kept as a table of their own (runs_history). */
  readonly states?: StatesSpec;
  /** New arrays of objects in a payload: a child table of their own (named with this prefix), or JSON. */
  readonly newArrays: { readonly tablePrefix: string } | 'json';
  /** Members known and deliberately not stored (`object`, the same for every record). */
  readonly ignored: readonly string[];
  /** Columns that change without making a new history version (agents' last_run_at). */
  readonly unversioned: readonly string[];
  readonly archive: ArchiveName;
  /** Partitioned by the UTC day of this column (created_date), or one file per table. */
  readonly partitionBy?: string;
  readonly orderBy: string;
  /** How status and logs name the resource. */
  readonly label: string;
  /** What a row of the live table is, for the warehouse reference. */
  readonly about: string;
}
