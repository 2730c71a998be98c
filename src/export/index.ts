export { exportParquet, type ExportOptions, type ExportResult } from './export-parquet.ts';
export { writeAnalyticsViews } from './export-analytics.ts';
export { ALL_EXPORT_TABLES, RUN_EXPORT_TABLES, FLAT_EXPORT_TABLES, PARQUET_DIR, DATA_FILE, type ExportTable } from './export-tables.ts';
