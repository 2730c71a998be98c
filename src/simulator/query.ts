import { type Micros, parseTimestamp } from '../util/timestamp.ts';

// Query validation for every list endpoint, bound by bound as the spec's Limits table states.
// Unknown parameters are refused rather than ignored: a client sending a filter the API does not
// have (say `updated_after`) must find out, not silently get everything.

export class QueryError extends Error {}

export const RUN_STATUSES = ['completed', 'running', 'failed', 'cancelled', 'paused'] as const;
export const RESOLUTION_TYPES = ['deflected', 'resolved', 'escalated', 'pending'] as const;
export const TOOL_TYPE_FILTER = ['service_tool', 'app_tool', 'custom_tool', 'mcp_tool'] as const;
export const GUARDRAIL_TYPES = ['escalation', 'restriction'] as const;
const DURATION_OPS = ['eq', 'gt', 'gte', 'lt', 'lte'] as const;
const MAX_ARRAY_ITEMS = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const METADATA_KEY = /^[A-Za-z0-9._:-]+$/;

export interface Paging {
  limit: number;
  cursor: string | null;
}

export interface RunFilter {
  createdAfter: Micros | null;
  createdBefore: Micros | null;
  status: string[] | null;
  ticketId: string[] | null;
  agentId: string[] | null;
  source: string[] | null;
  resolutionType: string[] | null;
  duration: Partial<Record<(typeof DURATION_OPS)[number], number>>;
  toolName: string[] | null;
  search: string | null;
  metadata: Record<string, string>;
}

export interface ToolFilter {
  type: string[] | null;
  search: string | null;
  isWriteAction: boolean | null;
  requiresApproval: boolean | null;
  integrationId: string | null;
  mcpServerId: string | null;
}

export interface GuardrailFilter {
  type: string | null;
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Reads parameters one by one and refuses anything left over. */
class Params {
  private readonly seen = new Set<string>();
  constructor(private readonly q: URLSearchParams) {}

  all(name: string): string[] {
    this.seen.add(name);
    return this.q.getAll(name);
  }

  one(name: string): string | null {
    const values = this.all(name);
    if (values.length > 1) throw new QueryError(`${name} may be given only once`);
    return values[0] ?? null;
  }

  names(): string[] {
    return [...new Set(this.q.keys())];
  }

  markSeen(name: string): void {
    this.seen.add(name);
  }

  rejectUnknown(): void {
    for (const name of this.names()) {
      if (!this.seen.has(name)) throw new QueryError(`unknown query parameter: ${name}`);
    }
  }
}

function paging(p: Params, defaultLimit: number, maxLimit: number): Paging {
  const raw = p.one('limit');
  let limit = defaultLimit;
  if (raw !== null) {
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > maxLimit) {
      throw new QueryError(`limit must be an integer from 1 to ${maxLimit}`);
    }
    limit = Number(raw);
  }
  const cursor = p.one('cursor');
  if (cursor === '') throw new QueryError('cursor must not be empty');
  return { limit, cursor };
}

function list(
  p: Params,
  name: string,
  check?: { allowed?: readonly string[]; maxLength?: number; uuid?: boolean },
): string[] | null {
  const values = p.all(name);
  if (values.length === 0) return null;
  if (values.length > MAX_ARRAY_ITEMS) throw new QueryError(`${name} accepts at most ${MAX_ARRAY_ITEMS} values`);
  for (const v of values) {
    if (check?.allowed && !check.allowed.includes(v)) {
      throw new QueryError(`${name} must be one of ${check.allowed.join(', ')}; got "${v}"`);
    }
    if (check?.maxLength !== undefined && codePoints(v) > check.maxLength) {
      throw new QueryError(`each ${name} value must be at most ${check.maxLength} characters`);
    }
    if (check?.uuid && !UUID.test(v)) throw new QueryError(`${name} must be a uuid; got "${v}"`);
  }
  return values;
}

function timestamp(p: Params, name: string): Micros | null {
  const raw = p.one(name);
  if (raw === null) return null;
  const t = parseTimestamp(raw);
  if (t === null) throw new QueryError(`${name} must be an RFC 3339 date-time, e.g. 2026-01-31T00:00:00Z`);
  return t;
}

function bool(p: Params, name: string): boolean | null {
  const raw = p.one(name);
  if (raw === null) return null;
  if (raw !== 'true' && raw !== 'false') throw new QueryError(`${name} must be true or false`);
  return raw === 'true';
}

function text(p: Params, name: string, maxLength?: number): string | null {
  const raw = p.one(name);
  if (raw !== null && maxLength !== undefined && codePoints(raw) > maxLength) {
    throw new QueryError(`${name} must be at most ${maxLength} characters`);
  }
  return raw;
}

/**
 * A listing's query: its paging (`limit` up to `maxLimit`), then the filter `read` takes from the
 * rest; a parameter neither reads is refused.
 */
function listQuery<F>(
  q: URLSearchParams,
  defaultLimit: number,
  maxLimit: number,
  read: (p: Params) => F,
): { paging: Paging; filter: F } {
  const p = new Params(q);
  const pg = paging(p, defaultLimit, maxLimit);
  const filter = read(p);
  p.rejectUnknown();
  return { paging: pg, filter };
}

function durationFilter(p: Params): RunFilter['duration'] {
  const duration: RunFilter['duration'] = {};
  for (const op of DURATION_OPS) {
    const raw = p.one(`duration[${op}]`);
    if (raw === null) continue;
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
      throw new QueryError(`duration[${op}] must be an integer >= 0`);
    }
    duration[op] = Number(raw);
  }
  return duration;
}

function metadataFilter(p: Params): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const name of p.names()) {
    if (!name.startsWith('metadata.')) continue;
    const key = name.slice('metadata.'.length);
    if (!METADATA_KEY.test(key)) {
      throw new QueryError(
        `${name}: the metadata key may contain only letters, digits, dots, underscores, dashes or colons`,
      );
    }
    const value = text(p, name, 500);
    if (value !== null) metadata[key] = value;
  }
  return metadata;
}

export function parseRunsQuery(q: URLSearchParams): { paging: Paging; filter: RunFilter } {
  return listQuery(q, 50, 100, (p) => {
    const duration = durationFilter(p);
    const metadata = metadataFilter(p);
    return {
      createdAfter: timestamp(p, 'created_after'),
      createdBefore: timestamp(p, 'created_before'),
      status: list(p, 'status', { allowed: RUN_STATUSES }),
      ticketId: list(p, 'ticket_id', { maxLength: 200 }),
      agentId: list(p, 'agent_id', { uuid: true }),
      source: list(p, 'source', { maxLength: 120 }),
      resolutionType: list(p, 'resolution_type', { allowed: RESOLUTION_TYPES }),
      duration,
      toolName: list(p, 'tool_name', { maxLength: 200 }),
      search: text(p, 'search', 300),
      metadata,
    };
  });
}

export function parseToolsQuery(q: URLSearchParams): { paging: Paging; filter: ToolFilter } {
  return listQuery(q, 100, 200, (p) => {
    const mcpServerId = p.one('mcp_server_id');
    if (mcpServerId !== null && !UUID.test(mcpServerId)) throw new QueryError('mcp_server_id must be a uuid');
    return {
      type: list(p, 'type', { allowed: TOOL_TYPE_FILTER }),
      search: text(p, 'search'),
      isWriteAction: bool(p, 'is_write_action'),
      requiresApproval: bool(p, 'requires_approval'),
      integrationId: text(p, 'integration_id'),
      mcpServerId,
    };
  });
}

export function parseGuardrailsQuery(q: URLSearchParams): { paging: Paging; filter: GuardrailFilter } {
  return listQuery(q, 100, 200, (p) => {
    const type = p.one('type');
    if (type !== null && !(GUARDRAIL_TYPES as readonly string[]).includes(type)) {
      throw new QueryError(`type must be one of ${GUARDRAIL_TYPES.join(', ')}`);
    }
    return { type };
  });
}

/** Agents, guidelines and runbooks accept only `limit` and `cursor`. */
export function parsePlainListQuery(q: URLSearchParams): { paging: Paging } {
  return { paging: listQuery(q, 100, 200, () => null).paging };
}

export function rejectAnyQuery(q: URLSearchParams): void {
  new Params(q).rejectUnknown();
}

/** A stable text of the filters, to bind a cursor to the query that produced it. */
export function filterFingerprint(q: URLSearchParams): string {
  const entries = [...q.entries()].filter(([k]) => k !== 'cursor' && k !== 'limit');
  entries.sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : av > bv ? 1 : 0) : a < b ? -1 : 1));
  return JSON.stringify(entries);
}
