export { ApiClient, encodeSegment } from './api-client.ts';
export { createApiClient, type ApiSetup } from './api-setup.ts';
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
export * from './api-errors.ts';
export { fetchConcurrently, type ConcurrentFetchOptions, type ItemResult } from './api-details.ts';
export { CATALOG_KINDS, endpointInfo, type CatalogKind, type EndpointName, type SchemaName } from './api-endpoints.ts';
export {
  GUARDRAIL_TYPE_FILTER,
  MAX_FILTER_VALUES,
  RESOLUTION_TYPE_FILTER,
  RUN_STATUS_FILTER,
  TOOL_TYPE_FILTER,
  encodeQuery,
  guardrailListQuery,
  runListQueries,
  toolListQuery,
  type GuardrailListFilter,
  type QueryPair,
  type RunListFilter,
  type ToolListFilter,
} from './api-filters.ts';
export { Paginator, type PageInfo, type PaginatorOptions } from './api-paginator.ts';
export { createApiPool, type PoolOptions } from './api-pool.ts';
export { DEFAULT_RETRY_POLICY, backoffDelay, classify, type Expect, type Outcome, type RetryPolicy, type Verdict } from './api-retry.ts';
export type { ApiStats } from './api-transport.ts';
export { createRecordValidator, type RecordValidator, type ValidationMode } from './api-validate.ts';
export type * from './api-types.ts';
