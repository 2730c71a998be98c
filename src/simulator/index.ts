export { startSimulator, defaultNow, type Simulator, type SimulatorOptions } from './sim-server.ts';
export { SimWorld } from './sim-world.ts';
export { ALL_SCOPES, KEY_PREFIX, type SimKeySpec } from './sim-auth.ts';
export { NO_FAULTS, type FaultConfig } from './sim-faults.ts';
export type { RateLimitConfig, Bucket } from './sim-rate-limit.ts';
export type { RequestRecord } from './sim-counters.ts';
export { ENDPOINTS, type EndpointName } from './sim-routes.ts';
export { isOpenSummary } from './sim-runs.ts';
export type { Json } from './sim-catalog.ts';
