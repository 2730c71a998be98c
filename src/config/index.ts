export { ensureWritableDir, prepareWarehouseDir } from './dirs.ts';
export {
  type ApiConfig,
  configuredLogger,
  KEY_PREFIX,
  type LoadConfigOptions,
  loadConfig,
  progressEvery,
  type RunsyncConfig,
  schemaContract,
} from './env.ts';
export { ConfigError } from './error.ts';
export { memoryBudgetOf } from './memory.ts';
export { DEFAULT_POLICY_NAME, type PiiSettings, piiSettingsOf } from './pii.ts';
export { shareGroup } from './share.ts';
export { type StorageConfig, storageConfig, storageLocation } from './storage.ts';
export { apiBaseUrl, isLoopbackHost } from './url.ts';
