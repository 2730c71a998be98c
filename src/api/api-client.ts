import type { Dispatcher } from 'undici';
import { systemClock } from '../budget/budget-clock.ts';
import type { BudgetClock, RateBudget } from '../budget/budget-types.ts';
import { apiBaseUrl } from '../config/config-url.ts';
import { silentLogger, type Logger } from '../util/logger.ts';
import { fetchConcurrently, type ConcurrentFetchOptions, type ItemResult } from './api-details.ts';
import { endpointInfo, pageBounds, type CatalogKind, type EndpointName } from './api-endpoints.ts';
import { ApiError, AuthError, InvalidRecordError, PermissionError } from './api-errors.ts';
import {
  guardrailListQuery,
  pageQuery,
  runListQueries,
  toolListQuery,
  type GuardrailListFilter,
  type QueryPair,
  type RunListFilter,
  type ToolListFilter,
} from './api-filters.ts';
import { Paginator } from './api-paginator.ts';
import { createApiPool, type PoolOptions } from './api-pool.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './api-retry.ts';
import { ApiTransport, type ApiStats } from './api-transport.ts';
import type { Agent, Guardrail, Guideline, RunDetail, RunSummary, RunToolOption, Runbook, Tool } from './api-types.ts';
import { createRecordValidator, type RecordValidator, type ValidationMode } from './api-validate.ts';

// The typed Export API client: one method per endpoint, async iterators over every list, records
// checked against the schemas. A record that breaks its schema is reported and skipped, never a
// reason to stop a sync.

export interface InvalidRecordReport {
  endpoint: EndpointName;
  recordId: string | null;
  /** The request_id of the response that carried the record, when the API gave one. */
  requestId: string | null;
  problems: readonly string[];
  record: unknown;
}

export interface ApiClientOptions {
  /** The API's base URL, with or without /api/v1. */
  baseUrl: string;
  /** Hosts that may be reached over plain http besides loopback (RUNSYNC_ALLOW_HTTP). */
  httpHosts?: readonly string[];
  apiKey: string;
  budget: RateBudget;
  logger?: Logger;
  /** Default: a pool of its own, closed by close(). */
  dispatcher?: Dispatcher;
  pool?: PoolOptions;
  retry?: Partial<RetryPolicy>;
  /** One attempt, send to last byte; default 60 s. */
  requestTimeoutMs?: number;
  validation?: ValidationMode;
  onInvalid?: (report: InvalidRecordReport) => void;
  clock?: BudgetClock;
  random?: () => number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface PageRequest extends CallOptions {
  limit?: number;
  cursor?: string | null;
}

export interface IterateOptions extends CallOptions {
  /** Items per page (the endpoint's bounds apply). */
  pageSize?: number;
  /** Where an earlier walk stopped: the part (of a split filter) and the cursor within it. */
  resume?: { part: number; cursor: string | null };
}

export interface ListPage<T> {
  items: T[];
  /** Items the page held, valid or not. */
  received: number;
  nextCursor: string | null;
  hasMore: boolean;
  /** The cursor that fetched this page (null for a first page). */
  cursor: string | null;
  requestId: string | null;
  /** For a filter split into several requests: this page's part, and how many there are. */
  part: number;
  parts: number;
}

export type CatalogRecord = { tools: Tool; agents: Agent; guidelines: Guideline; guardrails: Guardrail; runbooks: Runbook };

export type RunDetailResult = ItemResult<RunDetail>;

export interface RunDetailsOptions extends ConcurrentFetchOptions {
  /**
   * Before the first request, let a budget that knows no limit learn it from one smallest runs-list
   * page (the response the spec gives X-RateLimit-* headers), instead of from a burst of 429s.
   * Default true.
   */
  primeBudget?: boolean;
}

/** A path segment: every reserved character encoded, and dot segments too, which a proxy would fold. */
export function encodeSegment(id: string): string {
  const enc = encodeURIComponent(id);
  return enc === '.' || enc === '..' ? enc.replace(/\./g, '%2E') : enc;
}

function recordId(record: unknown): string | null {
  const id = (record as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : null;
}

export class ApiClient {
  private readonly transport: ApiTransport;
  private readonly ownedPool: Dispatcher | null;
  private readonly validator: RecordValidator;
  private readonly logger: Logger;
  private readonly onInvalid: ((report: InvalidRecordReport) => void) | undefined;
  private readonly budget: RateBudget;
  private primed = false;

  constructor(options: ApiClientOptions) {
    const base = new URL(apiBaseUrl(options.baseUrl, 'RUNSYNC_API_URL', options.httpHosts));
    this.ownedPool = options.dispatcher ? null : createApiPool(base.origin, options.pool);
    this.logger = options.logger ?? silentLogger();
    this.onInvalid = options.onInvalid;
    this.budget = options.budget;
    this.validator = createRecordValidator(options.validation ?? 'lenient');
    this.transport = new ApiTransport({
      origin: base.origin,
      basePath: base.pathname,
      apiKey: options.apiKey,
      dispatcher: options.dispatcher ?? (this.ownedPool as Dispatcher),
      budget: options.budget,
      logger: this.logger,
      retry: { ...DEFAULT_RETRY_POLICY, ...options.retry },
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
      clock: options.clock ?? systemClock,
      random: options.random ?? Math.random,
      userAgent: 'runsync/0.1',
    });
  }

  stats(): ApiStats {
    const s = this.transport.stats;
    return { ...s, byStatus: { ...s.byStatus } };
  }

  async close(): Promise<void> {
    await this.ownedPool?.close();
  }

  // -- runs

  /** One page of run summaries: one request, so a value list over the per-request limit is refused. */
  async listRuns(filter: RunListFilter = {}, page: PageRequest = {}): Promise<ListPage<RunSummary>> {
    const [query] = runListQueries(filter, { split: false });
    return this.fetchPage<RunSummary>('runs.list', '/runs', query ?? [], page, 0, 1);
  }

  /** Every page of run summaries; long value lists are split and their answers merged by id. */
  async *runPages(filter: RunListFilter = {}, options: IterateOptions = {}): AsyncGenerator<ListPage<RunSummary>> {
    yield* this.pages<RunSummary>('runs.list', '/runs', runListQueries(filter, { split: true }), options);
  }

  async *iterateRuns(filter: RunListFilter = {}, options: IterateOptions = {}): AsyncGenerator<RunSummary> {
    for await (const page of this.runPages(filter, options)) yield* page.items;
  }

  getRun(runId: string, options: CallOptions = {}): Promise<RunDetail> {
    return this.fetchOne<RunDetail>('runs.get', `/runs/${encodeSegment(runId)}`, options);
  }

  async getRunToolOptions(options: CallOptions = {}): Promise<RunToolOption[]> {
    const { body, requestId } = await this.transport.get({
      endpoint: 'runs.toolOptions',
      path: '/runs/tool-options',
      expect: 'items',
      signal: options.signal,
    });
    return this.keepValid<RunToolOption>('runs.toolOptions', body.data as unknown[], requestId);
  }

  /** Run details fetched concurrently, paced by the budget, yielded as they arrive. */
  async *fetchRunDetails(ids: Iterable<string> | AsyncIterable<string>, options: RunDetailsOptions = {}): AsyncGenerator<RunDetailResult> {
    const { primeBudget = true, ...fetchOptions } = options;
    if (primeBudget) await this.primeBudget(options.signal);
    yield* fetchConcurrently(ids, (id, signal) => this.getRun(id, { signal }), fetchOptions);
  }

  /**
   * Once per client, when the budget has not learned the key's limit yet: one runs-list page of a
   * single item, whose X-RateLimit-* headers tell it. Detail responses carry no such headers, so a
   * burst of detail fetches would otherwise learn the limit from 429s. A refused key or missing
   * scope is thrown at once; any other failure is left for the requests that follow to report.
   */
  async primeBudget(signal?: AbortSignal): Promise<void> {
    if (this.primed) return;
    this.primed = true;
    if ((await this.budget.snapshot()).limit !== null) return;
    try {
      // Only the headers matter: the page itself is neither checked nor reported.
      await this.transport.get({ endpoint: 'runs.list', path: '/runs', query: [['limit', '1']], expect: 'list', signal });
    } catch (e) {
      // A refused key or a missing scope would refuse every detail too.
      if (!(e instanceof ApiError) || e instanceof AuthError || e instanceof PermissionError) throw e;
      this.logger.debug({ error: e.message }, 'could not learn the rate limit ahead of the detail fetches');
    }
  }

  // -- catalog

  async listTools(filter: ToolListFilter = {}, page: PageRequest = {}): Promise<ListPage<Tool>> {
    return this.fetchPage<Tool>('tools.list', '/tools', toolListQuery(filter), page, 0, 1);
  }

  async *iterateTools(filter: ToolListFilter = {}, options: IterateOptions = {}): AsyncGenerator<Tool> {
    yield* this.items(this.pages<Tool>('tools.list', '/tools', [toolListQuery(filter)], options));
  }

  getTool(toolId: string, options: CallOptions = {}): Promise<Tool> {
    return this.fetchOne<Tool>('tools.get', `/tools/${encodeSegment(toolId)}`, options);
  }

  async listGuardrails(filter: GuardrailListFilter = {}, page: PageRequest = {}): Promise<ListPage<Guardrail>> {
    return this.fetchPage<Guardrail>('guardrails.list', '/guardrails', guardrailListQuery(filter), page, 0, 1);
  }

  async *iterateGuardrails(filter: GuardrailListFilter = {}, options: IterateOptions = {}): AsyncGenerator<Guardrail> {
    yield* this.items(this.pages<Guardrail>('guardrails.list', '/guardrails', [guardrailListQuery(filter)], options));
  }

  getGuardrail(id: string, options: CallOptions = {}): Promise<Guardrail> {
    return this.fetchOne<Guardrail>('guardrails.get', `/guardrails/${encodeSegment(id)}`, options);
  }

  async listAgents(page: PageRequest = {}): Promise<ListPage<Agent>> {
    return this.fetchPage<Agent>('agents.list', '/agents', [], page, 0, 1);
  }

  iterateAgents(options: IterateOptions = {}): AsyncGenerator<Agent> {
    return this.iterateCatalog('agents', options);
  }

  getAgent(id: string, options: CallOptions = {}): Promise<Agent> {
    return this.fetchOne<Agent>('agents.get', `/agents/${encodeSegment(id)}`, options);
  }

  async listGuidelines(page: PageRequest = {}): Promise<ListPage<Guideline>> {
    return this.fetchPage<Guideline>('guidelines.list', '/guidelines', [], page, 0, 1);
  }

  iterateGuidelines(options: IterateOptions = {}): AsyncGenerator<Guideline> {
    return this.iterateCatalog('guidelines', options);
  }

  getGuideline(id: string, options: CallOptions = {}): Promise<Guideline> {
    return this.fetchOne<Guideline>('guidelines.get', `/guidelines/${encodeSegment(id)}`, options);
  }

  async listRunbooks(page: PageRequest = {}): Promise<ListPage<Runbook>> {
    return this.fetchPage<Runbook>('runbooks.list', '/runbooks', [], page, 0, 1);
  }

  iterateRunbooks(options: IterateOptions = {}): AsyncGenerator<Runbook> {
    return this.iterateCatalog('runbooks', options);
  }

  getRunbook(id: string, options: CallOptions = {}): Promise<Runbook> {
    return this.fetchOne<Runbook>('runbooks.get', `/runbooks/${encodeSegment(id)}`, options);
  }

  /** Every page of one catalog collection, unfiltered (what a snapshot reads). */
  catalogPages<K extends CatalogKind>(kind: K, options: IterateOptions = {}): AsyncGenerator<ListPage<CatalogRecord[K]>> {
    return this.pages<CatalogRecord[K]>(`${kind}.list`, `/${kind}`, [[]], options);
  }

  iterateCatalog<K extends CatalogKind>(kind: K, options: IterateOptions = {}): AsyncGenerator<CatalogRecord[K]> {
    return this.items(this.catalogPages(kind, options));
  }

  // -- machinery

  private async *items<T>(pages: AsyncGenerator<ListPage<T>>): AsyncGenerator<T> {
    for await (const page of pages) yield* page.items;
  }

  private async fetchPage<T>(
    endpoint: EndpointName,
    path: string,
    filterQuery: readonly QueryPair[],
    page: PageRequest,
    part: number,
    parts: number,
  ): Promise<ListPage<T>> {
    const cursor = page.cursor ?? null;
    const query = [...filterQuery, ...pageQuery(endpoint, pageBounds(endpoint).max, page.limit, cursor)];
    const { body, requestId } = await this.transport.get({ endpoint, path, query, expect: 'list', signal: page.signal });
    const data = body.data as unknown[];
    const pagination = body.pagination as { has_more: boolean; next_cursor: string | null };
    return {
      items: this.keepValid<T>(endpoint, data, requestId),
      received: data.length,
      nextCursor: pagination.next_cursor,
      hasMore: pagination.has_more,
      cursor,
      requestId,
      part,
      parts,
    };
  }

  private async *pages<T>(
    endpoint: EndpointName,
    path: string,
    queries: QueryPair[][],
    options: IterateOptions,
  ): AsyncGenerator<ListPage<T>> {
    const parts = queries.length;
    const start = options.resume?.part ?? 0;
    // Pieces of a split filter can match the same run (a run used two of the tools asked for).
    const seen = parts > 1 ? new Set<string>() : null;
    for (let part = start; part < parts; part++) {
      const paginator = new Paginator(endpoint, { cursor: part === start ? (options.resume?.cursor ?? null) : null });
      while (!paginator.finished) {
        const request: PageRequest = { cursor: paginator.cursor };
        if (options.pageSize !== undefined) request.limit = options.pageSize;
        if (options.signal) request.signal = options.signal;
        const page = await this.fetchPage<T>(endpoint, path, queries[part] as QueryPair[], request, part, parts);
        paginator.advance({ itemCount: page.received, hasMore: page.hasMore, nextCursor: page.nextCursor, requestId: page.requestId });
        if (seen) {
          page.items = page.items.filter((item) => {
            const id = recordId(item);
            if (id === null) return true;
            if (seen.has(id)) return false;
            seen.add(id);
            return true;
          });
        }
        yield page;
      }
    }
  }

  private async fetchOne<T>(endpoint: EndpointName, path: string, options: CallOptions): Promise<T> {
    const { body, requestId } = await this.transport.get({ endpoint, path, expect: 'detail', signal: options.signal });
    const problems = this.validator.check(endpointInfo(endpoint).schema, body.data);
    if (problems.length > 0) {
      this.report(endpoint, body.data, problems, requestId);
      throw new InvalidRecordError(
        `the record breaks its schema: ${problems.slice(0, 3).join('; ')}`,
        { endpoint, path, requestId },
        problems,
        recordId(body.data),
      );
    }
    return body.data as T;
  }

  private keepValid<T>(endpoint: EndpointName, records: unknown[], requestId: string | null): T[] {
    const schema = endpointInfo(endpoint).schema;
    const out: T[] = [];
    for (const record of records) {
      const problems = this.validator.check(schema, record);
      if (problems.length === 0) out.push(record as T);
      else this.report(endpoint, record, problems, requestId);
    }
    return out;
  }

  private report(endpoint: EndpointName, record: unknown, problems: string[], requestId: string | null): void {
    this.transport.stats.invalidRecords++;
    const id = recordId(record);
    this.logger.warn({ endpoint, recordId: id, requestId, problems: problems.slice(0, 10) }, 'skipped a record that breaks its schema');
    this.onInvalid?.({ endpoint, recordId: id, requestId, problems, record });
  }
}
