export { writeAnalyticsViews } from './analytics.ts';
export { type ExportOptions, type ExportResult, exportParquet } from './parquet.ts';
export { DATA_FILE, type ExportTable, exportTables, PARQUET_DIR } from './tables.ts';
export { type OpenTarget, openParquetTarget, type ParquetSettings } from './target.ts';
export type { ParquetTarget } from './tree.ts';
