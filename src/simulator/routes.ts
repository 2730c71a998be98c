import type { CatalogKind, Json } from './catalog.ts';
import type { CursorCodec } from './cursor.ts';
import {
  filterFingerprint,
  type Paging,
  parseGuardrailsQuery,
  parsePlainListQuery,
  parseRunsQuery,
  parseToolsQuery,
  QueryError,
  rejectAnyQuery,
} from './query.ts';
import { type CatalogPosition, SimWorld } from './world.ts';

// The 13 GET endpoints of the Export API: routing, scopes, and handlers that turn a validated query
// into a response body. Transport concerns (auth, rate limits, faults) live in server.ts.

export type EndpointName =
  | 'runs.list'
  | 'runs.get'
  | 'runs.toolOptions'
  | `${'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks'}.${'list' | 'get'}`
  | 'mcp';

export const ENDPOINTS: readonly EndpointName[] = [
  'runs.list',
  'runs.get',
  'runs.toolOptions',
  'tools.list',
  'tools.get',
  'agents.list',
  'agents.get',
  'guidelines.list',
  'guidelines.get',
  'guardrails.list',
  'guardrails.get',
  'runbooks.list',
  'runbooks.get',
];

const COLLECTIONS = {
  tools: { kind: 'tool', scope: 'api:tools:read' },
  agents: { kind: 'agent', scope: 'api:agents:read' },
  guidelines: { kind: 'guideline', scope: 'api:guidelines:read' },
  guardrails: { kind: 'guardrail', scope: 'api:guardrails:read' },
  runbooks: { kind: 'runbook', scope: 'api:runbooks:read' },
} as const satisfies Record<string, { kind: CatalogKind; scope: string }>;

type Collection = keyof typeof COLLECTIONS;

export interface Route {
  endpoint: EndpointName;
  scope: string | null;
  method: string;
  /** The decoded path parameter, for detail endpoints. */
  id: string | null;
  collection: Collection | null;
}

export class NotFound extends Error {}

/** Matches decoded path segments; returns null for paths the API does not have. */
export function matchRoute(segments: string[]): Route | null {
  if (segments[0] === 'api' && segments[1] === 'mcp' && segments.length === 2) {
    return { endpoint: 'mcp', scope: null, method: 'POST', id: null, collection: null };
  }
  if (segments[0] !== 'api' || segments[1] !== 'v1') return null;
  const [, , name, id, ...rest] = segments;
  if (rest.length > 0 || id === '') return null;
  if (name === 'runs') {
    if (id === undefined)
      return { endpoint: 'runs.list', scope: 'api:runs:read', method: 'GET', id: null, collection: null };
    if (id === 'tool-options') {
      return { endpoint: 'runs.toolOptions', scope: 'api:runs:read', method: 'GET', id: null, collection: null };
    }
    return { endpoint: 'runs.get', scope: 'api:runs:read', method: 'GET', id, collection: null };
  }
  if (name !== undefined && name in COLLECTIONS) {
    const collection = name as Collection;
    const { scope } = COLLECTIONS[collection];
    return id === undefined
      ? { endpoint: `${collection}.list`, scope, method: 'GET', id: null, collection }
      : { endpoint: `${collection}.get`, scope, method: 'GET', id, collection };
  }
  return null;
}

function listBody(items: Json[], limit: number, nextCursor: string | null): Json {
  return { data: items, pagination: { limit, next_cursor: nextCursor, has_more: nextCursor !== null } };
}

export class SimHandlers {
  constructor(
    private readonly world: SimWorld,
    private readonly cursors: CursorCodec,
  ) {}

  /** Returns the 200 body, or throws QueryError (400) / NotFound (404). */
  handle(route: Route, query: URLSearchParams): Json {
    switch (route.endpoint) {
      case 'runs.list':
        return this.listRuns(query);
      case 'runs.get': {
        rejectAnyQuery(query);
        const run = this.world.runDetailById(route.id as string);
        if (!run) throw new NotFound(`run ${route.id} was not found`);
        return { data: run };
      }
      case 'runs.toolOptions':
        rejectAnyQuery(query);
        return { data: this.world.toolOptions() };
      default:
        return route.id === null ? this.listCatalog(route, query) : this.getCatalog(route, query);
    }
  }

  private listRuns(query: URLSearchParams): Json {
    const { paging, filter } = parseRunsQuery(query);
    const fp = filterFingerprint(query);
    const before = paging.cursor === null ? null : this.position<number>('runs.list', fp, paging.cursor, isIndex);
    const page = this.world.listRuns(filter, before, paging.limit);
    const next = page.next === null ? null : this.cursors.encode('runs.list', fp, page.next);
    return listBody(page.items, paging.limit, next);
  }

  private listCatalog(route: Route, query: URLSearchParams): Json {
    const collection = route.collection as Collection;
    const { kind } = COLLECTIONS[collection];
    let paging: Paging;
    let keep: (o: Json) => boolean = () => true;
    if (collection === 'tools') {
      const parsed = parseToolsQuery(query);
      paging = parsed.paging;
      keep = (o) => SimWorld.toolMatches(o, parsed.filter);
    } else if (collection === 'guardrails') {
      const parsed = parseGuardrailsQuery(query);
      paging = parsed.paging;
      keep = (o) => SimWorld.guardrailMatches(o, parsed.filter);
    } else {
      paging = parsePlainListQuery(query).paging;
    }
    const fp = filterFingerprint(query);
    const after =
      paging.cursor === null ? null : this.position<CatalogPosition>(route.endpoint, fp, paging.cursor, isPosition);
    const page = this.world.listCatalog(kind, after, paging.limit, keep);
    const next = page.next === null ? null : this.cursors.encode(route.endpoint, fp, page.next);
    return listBody(page.items, paging.limit, next);
  }

  private getCatalog(route: Route, query: URLSearchParams): Json {
    rejectAnyQuery(query);
    const { kind } = COLLECTIONS[route.collection as Collection];
    const obj = this.world.catalogObject(kind, route.id as string);
    if (!obj) throw new NotFound(`${kind} ${route.id} was not found`);
    return { data: obj };
  }

  private position<P>(endpoint: string, fp: string, cursor: string, valid: (p: unknown) => p is P): P {
    let p: unknown;
    try {
      p = this.cursors.decode<unknown>(endpoint, fp, cursor);
    } catch (e) {
      if (e instanceof QueryError) throw e;
      throw new QueryError('cursor is not valid');
    }
    if (!valid(p)) throw new QueryError('cursor is not valid');
    return p;
  }
}

function isIndex(p: unknown): p is number {
  return typeof p === 'number' && Number.isSafeInteger(p) && p >= 0;
}

function isPosition(p: unknown): p is CatalogPosition {
  const o = p as CatalogPosition | null;
  return typeof o === 'object' && o !== null && typeof o.c === 'number' && typeof o.id === 'string';
}
