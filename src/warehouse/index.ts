// The warehouse as the sync engine, the CLI and the export see it.

export { holderName, WarehouseCommitError, WarehouseLockedError, WarehouseSchemaError } from './errors.ts';
export { flattenCatalogObject, flattenToolOption } from './flatten-catalog.ts';
export { checkRunDetail, flattenRunDetail, type RunIdentity, type RunRows } from './flatten-run.ts';
export { type Cell, PayloadError, type Row } from './flatten-values.ts';
export { type CatalogLoadOptions, type CatalogLoadResult, loadCatalogListing } from './load-catalog.ts';
export type { RejectedPayload } from './load-rejected.ts';
export { loadRunDetails, type RunLoadResult } from './load-runs.ts';
export { loadToolOptions, type ToolOptionsLoadResult } from './load-tool-options.ts';
export { isMasked, MASK_PREFIX, maskToolSecrets, maskValue } from './mask-secrets.ts';
export {
  defaultMigrationsDir,
  type Migration,
  migrate,
  pendingMigrations,
  readSchemaFiles,
  runScript,
  VIEWS_FILE,
} from './migrate.ts';
export { openWarehouse, systemMicros, withWarehouse } from './open.ts';
export { readSchemaChanges } from './schema.ts';
export { getState, setState } from './sync-state.ts';
export type { Bookkeeping, LoadOptions, SqlParams, SqlRunner, Warehouse, WarehouseOptions } from './types.ts';
export { ANALYTICS_FILE, DB_FILE } from './types.ts';
