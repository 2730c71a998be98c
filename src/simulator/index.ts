export { ALL_SCOPES, KEY_PREFIX, type SimKeySpec } from './sim-auth.ts';
export type { Json } from './sim-catalog.ts';
export type { RequestRecord } from './sim-counters.ts';
export { type FaultConfig, NO_FAULTS } from './sim-faults.ts';
export type { Bucket, RateLimitConfig } from './sim-rate-limit.ts';
export { ENDPOINTS, type EndpointName } from './sim-routes.ts';
export { isOpenSummary } from './sim-runs.ts';
export { defaultNow, type Simulator, type SimulatorOptions, startSimulator } from './sim-server.ts';
export { SimWorld } from './sim-world.ts';
