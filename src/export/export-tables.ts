// What the Parquet export writes. Run tables are partitioned by their run's created_date (hive
// style, the partition column lives in the path, not in the files); the catalog, its history and
// the tool options are one file per table. Rows are ordered by key so files are reproducible.

export interface ExportTable {
  name: string;
  partitioned: boolean;
  orderBy: string;
}

export const RUN_EXPORT_TABLES: readonly ExportTable[] = [
  { name: 'runs', partitioned: true, orderBy: 'created_at, id' },
  { name: 'run_messages', partitioned: true, orderBy: 'run_id, ordinal, id' },
  { name: 'run_steps', partitioned: true, orderBy: 'run_id, ordinal, id' },
  { name: 'run_tool_calls', partitioned: true, orderBy: 'run_id, ordinal, id' },
  { name: 'run_evaluations', partitioned: true, orderBy: 'run_id, id' },
];

export const FLAT_EXPORT_TABLES: readonly ExportTable[] = [
  { name: 'run_tool_options', partitioned: false, orderBy: 'tool_name' },
  ...['tools', 'agents', 'guidelines', 'guardrails', 'runbooks'].flatMap((t) => [
    { name: t, partitioned: false, orderBy: 'id' },
    { name: `${t}_history`, partitioned: false, orderBy: 'id, valid_from' },
  ]),
  { name: 'tool_parameters', partitioned: false, orderBy: 'tool_id, ordinal, name' },
  { name: 'tool_parameters_history', partitioned: false, orderBy: 'tool_id, valid_from, ordinal, name' },
];

export const ALL_EXPORT_TABLES: readonly ExportTable[] = [...RUN_EXPORT_TABLES, ...FLAT_EXPORT_TABLES];

export const PARQUET_DIR = 'parquet';
export const PARTITION_COLUMN = 'created_date';
/** The one file of a partition, or of an unpartitioned table. */
export const DATA_FILE = 'data.parquet';

export function partitionDirName(date: string): string {
  return `${PARTITION_COLUMN}=${date}`;
}
