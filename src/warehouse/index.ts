// The warehouse as the sync engine, the CLI and the export see it.
export { openWarehouse, withWarehouse, systemMicros } from './warehouse-open.ts';
export { WarehouseLockedError, WarehouseSchemaError } from './warehouse-errors.ts';
export { DB_FILE, ANALYTICS_FILE } from './warehouse-types.ts';
export type { Warehouse, WarehouseOptions, SqlRunner, SqlParams, Bookkeeping } from './warehouse-types.ts';
export { defaultMigrationsDir, migrate, pendingMigrations, readMigrations, type Migration } from './warehouse-migrate.ts';
export { loadRunDetails, type RunLoadOptions, type RunLoadResult } from './load-runs.ts';
export { loadCatalogListing, type CatalogLoadOptions, type CatalogLoadResult } from './load-catalog.ts';
export { loadToolOptions, type ToolOptionsLoadOptions, type ToolOptionsLoadResult } from './load-tool-options.ts';
export type { RejectedPayload } from './load-rejected.ts';
export { getState, setState } from './sync-state.ts';
export { flattenRunDetail, checkRunDetail, type RunRows, type RunIdentity } from './flatten-run.ts';
export {
  flattenCatalogObject,
  flattenTool,
  flattenAgent,
  flattenGuideline,
  flattenGuardrail,
  flattenRunbook,
  flattenToolOption,
  type CatalogRows,
} from './flatten-catalog.ts';
export { PayloadError, type Cell, type Row, type ColumnSpec, type ColumnKind } from './flatten-values.ts';
export { maskToolSecrets, maskValue, isMasked, MASK_PREFIX } from './mask-secrets.ts';
export { CATALOG_TABLES, type CatalogTable } from './spec-catalog.ts';
export { exportParquet, type ExportOptions, type ExportResult } from '../export/export-parquet.ts';
export { rebuildInPlace, rebuildInto, type RebuildResult } from '../archive/rebuild.ts';
