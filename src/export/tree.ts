import type { ObjectStore } from '../storage/types.ts';

// The Parquet tree an export writes, seen the same way whether it is a local folder or an object
// store: what is published (tables, partition folders, file names), and the changes the export
// makes. A folder's changes are visible as each is made (each file renamed into place); an object
// store's only at publish(), all at once.

/** Where the export writes (RUNSYNC_PARQUET_URL): a folder, or an object store with its grace period. */
export type ParquetTarget = { folder: string } | { store: ObjectStore; graceMs: number };

export interface ParquetTree {
  readonly kind: 'folder' | 'store';
  /** Where readers find it: a folder's absolute path or s3://bucket/prefix. */
  readonly url: string;
  /** A local folder for COPY's output before a file is placed. */
  readonly scratch: string;
  /** Whether the table was exported before, even with no rows. */
  hasTable(table: string): Promise<boolean>;
  /** Whether the table has at least one file. */
  hasFiles(table: string): Promise<boolean>;
  /** The partition folders of a run table (created_date=…). */
  partitions(table: string): Promise<string[]>;
  /** The file names in a partition folder, or (null) in the table's own folder. */
  files(table: string, part: string | null): Promise<string[]>;
  /** Puts a file written in scratch at `path` under the table (it is moved); returns how results name it. */
  place(table: string, path: string, file: string, rows: number): Promise<string>;
  /** Removes a file; returns how results name it, or null when there was none. */
  remove(table: string, path: string): Promise<string | null>;
  /** Removes a partition folder and all its files; returns how results name it. */
  removePartition(table: string, part: string): Promise<string>;
  /** Records the table as exported even without files. */
  ensureTable(table: string): Promise<void>;
  /** Makes every change visible to readers; an object store's generation they now read (null: a folder). */
  publish(): Promise<number | null>;
  /** Ends the export, published or not: scratch is removed, connections are left to their owner. */
  close(): Promise<void>;
}
