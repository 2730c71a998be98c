import type { Dispatcher } from 'undici';
import { systemClock } from '../budget/clock.ts';
import type { BudgetClock, RateBudget } from '../budget/types.ts';
import { apiBaseUrl } from '../config/url.ts';
import { type Logger, silentLogger } from '../util/logger.ts';
import { type ConcurrentFetchOptions, fetchConcurrently, type ItemResult } from './details.ts';
import { type CatalogKind, type EndpointName, endpointInfo, pageBounds } from './endpoints.ts';
import { ApiError, AuthError, InvalidRecordError, PermissionError } from './errors.ts';
import {
  type GuardrailListFilter,
  guardrailListQuery,
  pageQuery,
  type QueryPair,
  type RunListFilter,
  runListQueries,
  type ToolListFilter,
  toolListQuery,
} from './filters.ts';
import { DEFAULT_IN_FLIGHT } from './in-flight.ts';
import { Paginator } from './paginator.ts';
import { createApiPool, type PoolOptions } from './pool.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.ts';
import { ServerClock } from './server-clock.ts';
import { DEFAULT_TIMEOUTS, RequestTimeouts, type TimeoutSettings } from './timeouts.ts';
import { type ApiStats, ApiTransport } from './transport.ts';
import type { Agent, Guardrail, Guideline, Runbook, RunDetail, RunSummary, RunToolOption, Tool } from './types.ts';
import { createRecordValidator, type RecordValidator, type ValidationMode } from './validate.ts';

// The typed Export API client: one method per endpoint, async iterators over every list, records
// checked against the schemas. A record that breaks its schema never stops a sync: a list page
// carries it aside in `refused`, a detail request fails with an InvalidRecordError holding it.

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
  /** How long each phase of a request may take (timeouts.ts); default DEFAULT_TIMEOUTS. */
  timeouts?: Partial<TimeoutSettings>;
  validation?: ValidationMode;
  /**
   * Applied to every record, valid or refused, before the client hands it over (the
   * personal-data policy), so nothing the API sent reaches a caller, and so disk, without it.
   */
  payloads?: PayloadFilter;
  clock?: BudgetClock;
  random?: () => number;
}

/** What the client does to a record before it hands it over. */
export type PayloadFilter = (endpoint: EndpointName, record: unknown) => unknown;

export interface CallOptions {
  signal?: AbortSignal;
  /** Told each time an attempt goes on the wire, after its turn in the budget. */
  onSend?: () => void;
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
  /**
   * Times the listing may go back to its first page when the API refuses a cursor; items already
   * yielded are not yielded again. Default 0: the refusal is thrown as a CursorRefusedError.
   */
  cursorRestarts?: number;
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
  /** Records of this page that break their schema, kept aside with why. */
  refused: InvalidRecordReport[];
}

/** A whole list (the tool options), with the records that break their schema kept aside. */
export interface ItemList<T> {
  items: T[];
  refused: InvalidRecordReport[];
}

export type CatalogRecord = {
  tools: Tool;
  agents: Agent;
  guidelines: Guideline;
  guardrails: Guardrail;
  runbooks: Runbook;
};

/** The list filters of each catalog collection. */
export type CatalogFilter = {
  tools: ToolListFilter;
  guardrails: GuardrailListFilter;
  agents: Record<string, never>;
  guidelines: Record<string, never>;
  runbooks: Record<string, never>;
};

function catalogQuery<K extends CatalogKind>(kind: K, filter: CatalogFilter[K]): QueryPair[] {
  if (kind === 'tools') return toolListQuery(filter as ToolListFilter);
  if (kind === 'guardrails') return guardrailListQuery(filter as GuardrailListFilter);
  return [];
}

export type RunDetailResult = ItemResult<RunDetail>;

export interface RunDetailsOptions extends ConcurrentFetchOptions {
  /** Requests in flight at most; default: as many as the budget's pace needs, DEFAULT_IN_FLIGHT at least. */
  concurrency?: ConcurrentFetchOptions['concurrency'];
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

/** Restarts of a catalog listing after refused cursors before the refusal is an error. */
export const CATALOG_CURSOR_RESTARTS = 3;

export class ApiClient {
  private readonly transport: ApiTransport;
  private readonly ownedPool: Dispatcher | null;
  private readonly validator: RecordValidator;
  private readonly logger: Logger;
  private readonly budget: RateBudget;
  private readonly payloads: PayloadFilter;
  private primed = false;
  /** The API's clock, from the Date header of its responses. */
  readonly serverClock = new ServerClock();

  constructor(options: ApiClientOptions) {
    const base = new URL(apiBaseUrl(options.baseUrl, 'RUNSYNC_API_URL', options.httpHosts));
    const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.ownedPool = options.dispatcher
      ? null
      : createApiPool(base.origin, { connectTimeoutMs: timeouts.connectMs, ...options.pool });
    this.logger = options.logger ?? silentLogger();
    this.budget = options.budget;
    this.payloads = options.payloads ?? ((_endpoint, record) => record);
    this.validator = createRecordValidator(options.validation ?? 'lenient');
    this.transport = new ApiTransport({
      origin: base.origin,
      basePath: base.pathname,
      apiKey: options.apiKey,
      dispatcher: options.dispatcher ?? (this.ownedPool as Dispatcher),
      budget: options.budget,
      logger: this.logger,
      retry: { ...DEFAULT_RETRY_POLICY, ...options.retry },
      timeouts: new RequestTimeouts(timeouts),
      serverClock: this.serverClock,
      clock: options.clock ?? systemClock,
      random: options.random ?? Math.random,
      userAgent: 'runsync/0.1',
    });
  }

  /** How long a run detail's answer nearly always takes once sent (null: not known yet). */
  usualDetailMs(): number | null {
    return this.transport.usualAnswerMs('runs.get');
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

  /**
   * Reads the API's clock (`serverClock`) when nothing has told it yet: one runs-list request of
   * one item, tried once. A failure is the caller's to ignore; the work after it meets the same.
   */
  async readClock(signal?: AbortSignal): Promise<void> {
    if (this.serverClock.known) return;
    const query = pageQuery('runs.list', pageBounds('runs.list').max, 1, null);
    await this.transport.get({ endpoint: 'runs.list', path: '/runs', query, expect: 'list', signal, maxAttempts: 1 });
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

  async getRunToolOptions(options: CallOptions = {}): Promise<ItemList<RunToolOption>> {
    const { body, requestId } = await this.transport.get({
      endpoint: 'runs.toolOptions',
      path: '/runs/tool-options',
      expect: 'items',
      signal: options.signal,
    });
    return this.keepValid<RunToolOption>('runs.toolOptions', body.data as unknown[], requestId);
  }

  /** Run details fetched concurrently, paced by the budget, yielded as they arrive. */
  async *fetchRunDetails(
    ids: Iterable<string> | AsyncIterable<string>,
    options: RunDetailsOptions = {},
  ): AsyncGenerator<RunDetailResult> {
    const { primeBudget = true, ...fetchOptions } = options;
    if (primeBudget) await this.primeBudget(options.signal);
    const concurrency = fetchOptions.concurrency ?? this.inFlightBound(DEFAULT_IN_FLIGHT);
    yield* fetchConcurrently(ids, (id, signal) => this.getRun(id, { signal }), { ...fetchOptions, concurrency });
  }

  /**
   * Detail fetches to keep in flight, `base` at least, as many as the pace needs at the round trips
   * seen lately (see in-flight.ts); `shares` pools of one process drawing on it side by side each
   * get their part.
   */
  inFlightBound(base: number, shares = 1): () => number {
    if (!(Number.isInteger(base) && base >= 1 && Number.isInteger(shares) && shares >= 1))
      throw new RangeError('requests in flight and their shares must be positive integers');
    return () => Math.max(base, Math.floor(this.transport.details.needed(base * shares) / shares));
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
      await this.transport.get({
        endpoint: 'runs.list',
        path: '/runs',
        query: [['limit', '1']],
        expect: 'list',
        signal,
      });
    } catch (e) {
      // A refused key or a missing scope would refuse every detail too.
      if (!(e instanceof ApiError) || e instanceof AuthError || e instanceof PermissionError) throw e;
      this.logger.debug({ error: e.message }, 'could not learn the rate limit ahead of the detail fetches');
    }
  }

  // -- catalog: the five collections by kind, each with its list filters (tools and guardrails have some)

  async catalogPage<K extends CatalogKind>(
    kind: K,
    filter: CatalogFilter[K] = {},
    page: PageRequest = {},
  ): Promise<ListPage<CatalogRecord[K]>> {
    return this.fetchPage<CatalogRecord[K]>(`${kind}.list`, `/${kind}`, catalogQuery(kind, filter), page, 0, 1);
  }

  getCatalogObject<K extends CatalogKind>(kind: K, id: string, options: CallOptions = {}): Promise<CatalogRecord[K]> {
    return this.fetchOne<CatalogRecord[K]>(`${kind}.get`, `/${kind}/${encodeSegment(id)}`, options);
  }

  /**
   * Every page of one catalog collection (unfiltered: what a snapshot reads). A collection is read
   * whole before it is loaded, so a cursor the API refuses just starts the listing over (by default
   * up to CATALOG_CURSOR_RESTARTS times).
   */
  catalogPages<K extends CatalogKind>(
    kind: K,
    options: IterateOptions & { filter?: CatalogFilter[K] } = {},
  ): AsyncGenerator<ListPage<CatalogRecord[K]>> {
    const query = catalogQuery(kind, options.filter ?? {});
    return this.pages<CatalogRecord[K]>(`${kind}.list`, `/${kind}`, [query], {
      cursorRestarts: CATALOG_CURSOR_RESTARTS,
      ...options,
    });
  }

  iterateCatalog<K extends CatalogKind>(
    kind: K,
    options: IterateOptions & { filter?: CatalogFilter[K] } = {},
  ): AsyncGenerator<CatalogRecord[K]> {
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
    const { body, requestId } = await this.transport.get({
      endpoint,
      path,
      query,
      expect: 'list',
      signal: page.signal,
    });
    const data = body.data as unknown[];
    const pagination = body.pagination as { has_more: boolean; next_cursor: string | null };
    return {
      ...this.keepValid<T>(endpoint, data, requestId),
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
    const restarts = options.cursorRestarts ?? 0;
    // Pieces of a split filter can match the same run (a run used two of the tools asked for), and
    // a listing started over lists again what it yielded.
    const seen = parts > 1 || restarts > 0 ? new Set<string>() : null;
    for (let part = start; part < parts; part++) {
      const paginator = new Paginator(endpoint, { cursor: part === start ? (options.resume?.cursor ?? null) : null });
      while (!paginator.finished) {
        const request: PageRequest = { cursor: paginator.cursor };
        if (options.pageSize !== undefined) request.limit = options.pageSize;
        if (options.signal) request.signal = options.signal;
        let page: ListPage<T>;
        try {
          page = await this.fetchPage<T>(endpoint, path, queries[part] as QueryPair[], request, part, parts);
        } catch (e) {
          const refused = paginator.refusal(e);
          if (refused === null) throw e;
          if (paginator.restarts >= restarts) throw refused;
          paginator.restart();
          this.logger.warn(
            { endpoint, restart: paginator.restarts, error: refused.message },
            'a list cursor is no longer accepted; listing again from the first page',
          );
          continue;
        }
        paginator.advance({
          itemCount: page.received,
          hasMore: page.hasMore,
          nextCursor: page.nextCursor,
          requestId: page.requestId,
        });
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
    const { body, requestId } = await this.transport.get({
      endpoint,
      path,
      expect: 'detail',
      signal: options.signal,
      onSend: options.onSend,
    });
    const problems = this.validator.check(endpointInfo(endpoint).schema, body.data);
    const record = this.payloads(endpoint, body.data);
    if (problems.length > 0) {
      this.report(endpoint, record, problems, requestId);
      throw new InvalidRecordError(
        `the record breaks its schema: ${problems.slice(0, 3).join('; ')}`,
        { endpoint, path, requestId },
        { problems, recordId: recordId(record), record },
      );
    }
    return record as T;
  }

  private keepValid<T>(endpoint: EndpointName, records: unknown[], requestId: string | null): ItemList<T> {
    const schema = endpointInfo(endpoint).schema;
    const out: ItemList<T> = { items: [], refused: [] };
    for (const raw of records) {
      const problems = this.validator.check(schema, raw);
      const record = this.payloads(endpoint, raw);
      if (problems.length === 0) out.items.push(record as T);
      else out.refused.push(this.report(endpoint, record, problems, requestId));
    }
    return out;
  }

  private report(
    endpoint: EndpointName,
    record: unknown,
    problems: string[],
    requestId: string | null,
  ): InvalidRecordReport {
    this.transport.stats.invalidRecords++;
    const id = recordId(record);
    this.logger.warn(
      { endpoint, recordId: id, requestId, problems: problems.slice(0, 10) },
      'skipped a record that breaks its schema',
    );
    return { endpoint, recordId: id, requestId, problems, record };
  }
}
