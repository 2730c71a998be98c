import { formatTimestamp, type Micros, parseTimestamp } from '../util/timestamp.ts';
import type { EndpointName } from './endpoints.ts';
import { FilterError } from './errors.ts';

// List filters, checked against the spec's Limits table before anything is sent, so a bad filter
// fails with a message naming the parameter instead of costing a request and a 400. A runs-list
// value list longer than the API takes in one request is cut into several requests; repeated values
// of a filter combine with OR and different filters with AND, so the union of the pieces is exactly
// the answer to the whole filter.

export type QueryPair = readonly [name: string, value: string];

export const RUN_STATUS_FILTER = ['completed', 'running', 'failed', 'cancelled', 'paused'] as const;
export const RESOLUTION_TYPE_FILTER = ['deflected', 'resolved', 'escalated', 'pending'] as const;
export const TOOL_TYPE_FILTER = ['service_tool', 'app_tool', 'custom_tool', 'mcp_tool'] as const;
export const GUARDRAIL_TYPE_FILTER = ['escalation', 'restriction'] as const;

/** Values per array filter of the runs list in one request. */
export const MAX_FILTER_VALUES = 200;
/** More pieces than this means the filter is a mistake, not a backfill. */
export const MAX_SPLIT_REQUESTS = 500;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const METADATA_KEY = /^[A-Za-z0-9._:-]+$/;
const DURATION_OPS = ['eq', 'gt', 'gte', 'lt', 'lte'] as const;

export interface RunListFilter {
  /** Runs created at or after (RFC 3339 text or microseconds). */
  createdAfter?: string | Micros;
  /** Runs created before. */
  createdBefore?: string | Micros;
  status?: readonly string[];
  ticketId?: readonly string[];
  agentId?: readonly string[];
  source?: readonly string[];
  resolutionType?: readonly string[];
  duration?: Partial<Record<(typeof DURATION_OPS)[number], number>>;
  toolName?: readonly string[];
  search?: string;
  /** `metadata.<key>` filters. */
  metadata?: Readonly<Record<string, string>>;
}

export interface ToolListFilter {
  type?: readonly string[];
  search?: string;
  isWriteAction?: boolean;
  requiresApproval?: boolean;
  integrationId?: string;
  mcpServerId?: string;
}

export interface GuardrailListFilter {
  type?: string;
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

interface ListRule {
  param: string;
  maxLength?: number;
  allowed?: readonly string[];
  uuid?: boolean;
}

/** Checks each value, drops repeats (harmless under OR) and returns the distinct values. */
function checkValues(endpoint: EndpointName, values: readonly unknown[], rule: ListRule): string[] {
  const out = new Set<string>();
  for (const v of values) {
    if (typeof v !== 'string') throw new FilterError(rule.param, `values must be text; got ${typeof v}`, endpoint);
    if (rule.allowed && !rule.allowed.includes(v)) {
      throw new FilterError(rule.param, `"${v}" is not one of ${rule.allowed.join(', ')}`, endpoint);
    }
    if (rule.maxLength !== undefined && codePoints(v) > rule.maxLength) {
      throw new FilterError(
        rule.param,
        `each value may have at most ${rule.maxLength} characters; one has ${codePoints(v)}`,
        endpoint,
      );
    }
    if (rule.uuid && !UUID.test(v)) throw new FilterError(rule.param, `"${v}" is not a uuid`, endpoint);
    out.add(v);
  }
  return [...out];
}

function timestampParam(endpoint: EndpointName, param: string, v: string | Micros): string {
  const us = typeof v === 'number' ? (Number.isSafeInteger(v) ? v : null) : parseTimestamp(v);
  if (us === null) throw new FilterError(param, 'must be an RFC 3339 date-time such as 2026-01-31T00:00:00Z', endpoint);
  return formatTimestamp(us);
}

function textParam(endpoint: EndpointName, param: string, v: unknown, maxLength?: number): string {
  if (typeof v !== 'string') throw new FilterError(param, 'must be text', endpoint);
  if (maxLength !== undefined && codePoints(v) > maxLength) {
    throw new FilterError(param, `may have at most ${maxLength} characters; got ${codePoints(v)}`, endpoint);
  }
  return v;
}

function chunk<T>(values: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

const RUN_LISTS: [keyof RunListFilter, ListRule][] = [
  ['status', { param: 'status', allowed: RUN_STATUS_FILTER }],
  ['ticketId', { param: 'ticket_id', maxLength: 200 }],
  ['agentId', { param: 'agent_id', uuid: true }],
  ['source', { param: 'source', maxLength: 120 }],
  ['resolutionType', { param: 'resolution_type', allowed: RESOLUTION_TYPE_FILTER }],
  ['toolName', { param: 'tool_name', maxLength: 200 }],
];

/**
 * The query (or queries) for a runs-list filter. With `split` false, a list over the per-request
 * limit is an error; with it true, the filter becomes several queries whose answers, merged, are
 * the filter's answer.
 */
export function runListQueries(filter: RunListFilter, options: { split: boolean }): QueryPair[][] {
  const endpoint = 'runs.list';
  const fixed: QueryPair[] = [];
  if (filter.createdAfter !== undefined)
    fixed.push(['created_after', timestampParam(endpoint, 'created_after', filter.createdAfter)]);
  if (filter.createdBefore !== undefined)
    fixed.push(['created_before', timestampParam(endpoint, 'created_before', filter.createdBefore)]);

  const lists: { param: string; pieces: string[][] }[] = [];
  for (const [field, rule] of RUN_LISTS) {
    const raw = filter[field] as readonly unknown[] | undefined;
    if (raw === undefined) continue;
    if (!Array.isArray(raw)) throw new FilterError(rule.param, 'must be a list of values', endpoint);
    const values = checkValues(endpoint, raw, rule);
    if (values.length === 0) continue;
    if (values.length > MAX_FILTER_VALUES && !options.split) {
      throw new FilterError(
        rule.param,
        `at most ${MAX_FILTER_VALUES} values per request; got ${values.length} (iterate the list to have it split)`,
        endpoint,
      );
    }
    lists.push({ param: rule.param, pieces: chunk(values, MAX_FILTER_VALUES) });
  }

  for (const op of DURATION_OPS) {
    const v = filter.duration?.[op];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new FilterError(`duration[${op}]`, `must be an integer >= 0; got ${String(v)}`, endpoint);
    }
    fixed.push([`duration[${op}]`, String(v)]);
  }
  if (filter.search !== undefined) fixed.push(['search', textParam(endpoint, 'search', filter.search, 300)]);
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    const param = `metadata.${key}`;
    if (!METADATA_KEY.test(key)) {
      throw new FilterError(
        param,
        'the key may contain only letters, digits, dots, underscores, dashes or colons',
        endpoint,
      );
    }
    fixed.push([param, textParam(endpoint, param, value, 500)]);
  }

  let queries: QueryPair[][] = [fixed];
  for (const { param, pieces } of lists) {
    if (queries.length * pieces.length > MAX_SPLIT_REQUESTS) {
      throw new FilterError(param, `the filter would need more than ${MAX_SPLIT_REQUESTS} requests`, endpoint);
    }
    queries = queries.flatMap((q) => pieces.map((piece) => [...q, ...piece.map((v): QueryPair => [param, v])]));
  }
  return queries;
}

export function toolListQuery(filter: ToolListFilter): QueryPair[] {
  const endpoint = 'tools.list';
  const out: QueryPair[] = [];
  if (filter.type !== undefined) {
    for (const v of checkValues(endpoint, filter.type, { param: 'type', allowed: TOOL_TYPE_FILTER }))
      out.push(['type', v]);
  }
  if (filter.search !== undefined) out.push(['search', textParam(endpoint, 'search', filter.search)]);
  for (const [field, param] of [
    ['isWriteAction', 'is_write_action'],
    ['requiresApproval', 'requires_approval'],
  ] as const) {
    const v = filter[field];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw new FilterError(param, 'must be true or false', endpoint);
    out.push([param, String(v)]);
  }
  if (filter.integrationId !== undefined)
    out.push(['integration_id', textParam(endpoint, 'integration_id', filter.integrationId)]);
  if (filter.mcpServerId !== undefined) {
    const v = textParam(endpoint, 'mcp_server_id', filter.mcpServerId);
    if (!UUID.test(v)) throw new FilterError('mcp_server_id', `"${v}" is not a uuid`, endpoint);
    out.push(['mcp_server_id', v]);
  }
  return out;
}

export function guardrailListQuery(filter: GuardrailListFilter): QueryPair[] {
  if (filter.type === undefined) return [];
  const [type] = checkValues('guardrails.list', [filter.type], { param: 'type', allowed: GUARDRAIL_TYPE_FILTER });
  return [['type', type as string]];
}

/** `limit` and `cursor`, checked against the endpoint's page-size bounds. */
export function pageQuery(
  endpoint: EndpointName,
  max: number,
  limit: number | undefined,
  cursor: string | null,
): QueryPair[] {
  const out: QueryPair[] = [];
  if (limit !== undefined) {
    if (!Number.isInteger(limit) || limit < 1 || limit > max) {
      throw new FilterError('limit', `must be an integer from 1 to ${max}; got ${limit}`, endpoint);
    }
    out.push(['limit', String(limit)]);
  }
  if (cursor !== null) {
    if (cursor === '') throw new FilterError('cursor', 'must not be empty', endpoint);
    out.push(['cursor', cursor]);
  }
  return out;
}

/** Keys keep their brackets readable (`duration[gte]`); everything else is percent-encoded. */
export function encodeQuery(pairs: readonly QueryPair[]): string {
  if (pairs.length === 0) return '';
  const enc = (s: string) => encodeURIComponent(s);
  const encKey = (s: string) => enc(s).replace(/%5B/g, '[').replace(/%5D/g, ']');
  return `?${pairs.map(([k, v]) => `${encKey(k)}=${enc(v)}`).join('&')}`;
}
