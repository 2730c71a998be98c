export type {
  ApiClientOptions,
  CallOptions,
  CatalogRecord,
  InvalidRecordReport,
  IterateOptions,
  ListPage,
  PageRequest,
  RunDetailResult,
  RunDetailsOptions,
} from './api-client.ts';
export { ApiClient, encodeSegment } from './api-client.ts';
export { type ConcurrentFetchOptions, FetchPool, fetchConcurrently, type ItemResult } from './api-details.ts';
export { CATALOG_KINDS, type CatalogKind, type EndpointName, endpointInfo, type SchemaName } from './api-endpoints.ts';
export * from './api-errors.ts';
export {
  encodeQuery,
  GUARDRAIL_TYPE_FILTER,
  type GuardrailListFilter,
  guardrailListQuery,
  MAX_FILTER_VALUES,
  type QueryPair,
  RESOLUTION_TYPE_FILTER,
  RUN_STATUS_FILTER,
  type RunListFilter,
  runListQueries,
  TOOL_TYPE_FILTER,
  type ToolListFilter,
  toolListQuery,
} from './api-filters.ts';
export { type PageInfo, Paginator, type PaginatorOptions } from './api-paginator.ts';
export { createApiPool, type PoolOptions } from './api-pool.ts';
export {
  backoffDelay,
  classify,
  DEFAULT_RETRY_POLICY,
  type Expect,
  type Outcome,
  type RetryPolicy,
  type Verdict,
} from './api-retry.ts';
export { type ApiSetup, createApiClient } from './api-setup.ts';
export type { ApiStats } from './api-transport.ts';
export type * from './api-types.ts';
export { createRecordValidator, type RecordValidator, type ValidationMode } from './api-validate.ts';
