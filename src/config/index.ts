export { ConfigError } from './config-error.ts';
export { apiBaseUrl, isLoopbackHost } from './config-url.ts';
export { KEY_PREFIX, configuredLogger, loadConfig, type ApiConfig, type LoadConfigOptions, type RunsyncConfig } from './config-env.ts';
