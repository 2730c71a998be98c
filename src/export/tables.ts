import { tablesOf } from '../resources/tables.ts';
import type { ResourceSpec } from '../resources/types.ts';

// What the Parquet export writes: every table of every resource as the warehouse holds them
// (evolved ones included). Run tables are partitioned by their run's created_date (hive style, the
// partition column lives in the path, not in the files); the catalog, its history and the tool
// options are one file per table. Rows are ordered by key so files are reproducible.

export interface ExportTable {
  name: string;
  partitioned: boolean;
  orderBy: string;
  /** The column naming a row's run (or catalog object): its own key, or a child's parent key. */
  runKey: string;
  /** The table its rows lie in: its own, or for a view the export writes like a table, the view's. */
  stored: { table: string; where: string | null };
  /** Its rows carry their run's created_at (runs, and a run's states): a span selects them by it. */
  ownCreatedAt: boolean;
}

export function exportTables(resources: readonly ResourceSpec[]): ExportTable[] {
  return resources.flatMap((r) =>
    tablesOf(r).map((t) => ({
      name: t.name,
      partitioned: t.partitioned,
      orderBy: t.orderBy,
      runKey: t.child ? t.child.parentKey : r.key,
      stored: t.derivedFrom ?? { table: t.name, where: null },
      ownCreatedAt: t.partitioned && !t.child && !t.derivedFrom && t.columns.some((c) => c.name === 'created_at'),
    })),
  );
}

export const PARQUET_DIR = 'parquet';
export { PARTITION_COLUMN } from '../resources/tables.ts';
/** The one file of a partition, or of an unpartitioned table. */
export const DATA_FILE = 'data.parquet';

export function partitionDirName(date: string): string {
  return `created_date=${date}`;
}
