export type {
  ApiClientOptions,
  CallOptions,
  CatalogRecord,
  InvalidRecordReport,
  IterateOptions,
  ListPage,
  PageRequest,
  PayloadFilter,
  RunDetailResult,
  RunDetailsOptions,
} from './client.ts';
export { ApiClient, encodeSegment } from './client.ts';
export { type ConcurrentFetchOptions, FetchPool, fetchConcurrently, type ItemResult } from './details.ts';
export { CATALOG_KINDS, type CatalogKind, type EndpointName, endpointInfo, type SchemaName } from './endpoints.ts';
export * from './errors.ts';
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
} from './filters.ts';
export { type PageInfo, Paginator, type PaginatorOptions } from './paginator.ts';
export { createApiPool, type PoolOptions } from './pool.ts';
export {
  backoffDelay,
  classify,
  DEFAULT_RETRY_POLICY,
  type Expect,
  type Outcome,
  type RetryPolicy,
  type Verdict,
} from './retry.ts';
export { type ApiSetup, createApiClient } from './setup.ts';
export type { ApiStats } from './transport.ts';
export type * from './types.ts';
export { createRecordValidator, type RecordValidator, type ValidationMode } from './validate.ts';
