export { ensureWritableDir, prepareWarehouseDir } from './config-dirs.ts';
export {
  type ApiConfig,
  configuredLogger,
  KEY_PREFIX,
  type LoadConfigOptions,
  loadConfig,
  progressEvery,
  type RunsyncConfig,
} from './config-env.ts';
export { ConfigError } from './config-error.ts';
export { shareGroup } from './config-share.ts';
export { apiBaseUrl, isLoopbackHost } from './config-url.ts';
