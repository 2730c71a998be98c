export { writeAnalyticsViews } from './export-analytics.ts';
export { type ExportOptions, type ExportResult, exportParquet } from './export-parquet.ts';
export { DATA_FILE, type ExportTable, exportTables, PARQUET_DIR } from './export-tables.ts';
