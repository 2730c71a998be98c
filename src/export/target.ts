import { openStore } from '../storage/open.ts';
import type { S3Settings, StorageLocation } from '../storage/types.ts';
import type { ShareGroup } from '../util/file-share.ts';
import type { Logger } from '../util/logger.ts';
import type { ParquetTarget } from './tree.ts';

// The export's target as configured (RUNSYNC_PARQUET_URL), opened once by the command or the
// engine that exports, and closed by it: an object store holds a connection pool.

export interface ParquetSettings {
  parquet: StorageLocation;
  parquetGraceMs: number;
  s3: S3Settings;
}

export interface OpenTarget {
  target: ParquetTarget;
  close(): Promise<void>;
}

export function openParquetTarget(
  settings: ParquetSettings,
  o: { logger: Logger; share?: ShareGroup | null; partSize?: number },
): OpenTarget {
  if (settings.parquet.kind === 'folder') return { target: { folder: settings.parquet.dir }, close: async () => {} };
  const store = openStore(settings.parquet, settings.s3, o);
  return { target: { store, graceMs: settings.parquetGraceMs }, close: () => store.close() };
}
