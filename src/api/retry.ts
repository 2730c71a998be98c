import { header, retryAfterMs } from '../budget/headers.ts';
import type { HeaderMap } from '../budget/types.ts';
import { type EndpointName, endpointInfo } from './endpoints.ts';
import {
  type ApiError,
  type ApiErrorInfo,
  AuthError,
  InvalidRequestError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  PermissionError,
  RateLimitedError,
  ServerError,
  TimeoutError,
} from './errors.ts';
import { wellFormedJson } from './well-formed.ts';

// The one place that decides what a response or a failed request means: success, fatal, retriable
// (with backoff) or wait (429, for Retry-After, shared through the budget). Errors are classified by
// the body's `error.code` first and the HTTP status second, since the spec leaves the status of
// `not_found` open and proxies answer 502/503 with bodies that are not JSON.

/** What a successful body must look like. */
export type Expect = 'list' | 'detail' | 'items';

export type Outcome =
  | { kind: 'response'; status: number; headers: HeaderMap; body: string }
  | {
      kind: 'exception';
      error: unknown;
      timedOut: boolean;
      /** Set when the failure came after the response headers (a body cut short or too slow). */
      status?: number | null;
      requestId?: string | null;
    };

export type Verdict =
  | { action: 'ok'; body: Record<string, unknown>; requestId: string | null }
  | { action: 'fatal'; error: ApiError }
  | { action: 'retry'; error: ApiError; minDelayMs: number }
  | { action: 'wait'; error: RateLimitedError; waitMs: number };

export interface ClassifyContext {
  endpoint: EndpointName;
  path: string;
  expect: Expect;
  /** Removes secrets (the API key) from text that came from the server. */
  redact: (text: string) => string;
  nowMs: number;
}

export interface RetryPolicy {
  /** Attempts per request for retriable failures (5xx, network, timeouts, malformed bodies). */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** 429s one request may wait out before giving up. */
  maxRateLimitWaits: number;
  /** A Retry-After longer than this is not waited for: the request fails with RateLimitedError. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  maxRateLimitWaits: 10,
  maxRetryAfterMs: 120_000,
});

/** Delay before retry number `retry` (1-based): exponential, capped, with "equal jitter". */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.round(cap / 2 + (random() * cap) / 2);
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const SCOPE_IN_TEXT = /\bapi:[a-z_]+:[a-z_]+\b/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Why a 2xx body is not the expected envelope, or null when it is. */
function envelopeProblem(body: unknown, expect: Expect): string | null {
  if (!isRecord(body)) return 'the body is not a JSON object';
  if (expect === 'detail') return isRecord(body.data) ? null : '`data` is not an object';
  if (!Array.isArray(body.data)) return '`data` is not an array';
  if (expect === 'items') return null;
  const p = body.pagination;
  if (!isRecord(p)) return '`pagination` is missing';
  if (typeof p.has_more !== 'boolean') return '`pagination.has_more` is not a boolean';
  if (p.next_cursor !== null && typeof p.next_cursor !== 'string')
    return '`pagination.next_cursor` is neither text nor null';
  return null;
}

export function classify(outcome: Outcome, ctx: ClassifyContext): Verdict {
  const base = { endpoint: ctx.endpoint, path: ctx.path };
  if (outcome.kind === 'exception') {
    const e = outcome.error as { code?: unknown; message?: unknown } | null;
    const code = typeof e?.code === 'string' ? e.code : null;
    const text = ctx.redact(typeof e?.message === 'string' ? e.message : String(outcome.error));
    const info: ApiErrorInfo = {
      ...base,
      status: outcome.status ?? null,
      requestId: outcome.requestId ?? null,
      cause: outcome.error,
    };
    if (outcome.timedOut || (code !== null && TIMEOUT_CODES.has(code))) {
      return { action: 'retry', error: new TimeoutError(`timed out (${code ?? text})`, info), minDelayMs: 0 };
    }
    return {
      action: 'retry',
      error: new NetworkError(`no usable response: ${code ? `${code} ` : ''}${text}`, info),
      minDelayMs: 0,
    };
  }

  const { status, headers } = outcome;
  const parsed = wellFormedJson(parseJson(outcome.body), outcome.body);
  const errorObj =
    isRecord(parsed) && isRecord(parsed.error) && typeof parsed.error.code === 'string' ? parsed.error : null;
  const code = errorObj ? (errorObj.code as string) : null;
  const requestId =
    (errorObj && typeof errorObj.request_id === 'string' ? errorObj.request_id : null) ??
    header(headers, 'x-request-id');
  const info: ApiErrorInfo = { ...base, status, code, requestId };

  if (status >= 200 && status < 300 && errorObj === null) {
    if (parsed === undefined) {
      return { action: 'retry', error: new MalformedResponseError('the body is not valid JSON', info), minDelayMs: 0 };
    }
    const problem = envelopeProblem(parsed, ctx.expect);
    if (problem) return { action: 'retry', error: new MalformedResponseError(problem, info), minDelayMs: 0 };
    return { action: 'ok', body: parsed as Record<string, unknown>, requestId };
  }

  const serverText = errorObj && typeof errorObj.message === 'string' ? ctx.redact(errorObj.message) : null;
  const detail = serverText ?? `the API answered HTTP ${status}`;
  const kind = kindOf(code, status);
  switch (kind) {
    case 'auth':
      return { action: 'fatal', error: new AuthError(`the API key was refused: ${detail}`, info) };
    case 'permission': {
      const scope = SCOPE_IN_TEXT.exec(serverText ?? '')?.[0] ?? endpointInfo(ctx.endpoint).scope;
      return {
        action: 'fatal',
        error: new PermissionError(`the API key lacks the scope ${scope}: ${detail}`, info, { scope }),
      };
    }
    case 'not_found':
      return { action: 'fatal', error: new NotFoundError(detail, info) };
    case 'invalid':
      return { action: 'fatal', error: new InvalidRequestError(detail, info) };
    case 'rate_limited': {
      const waitMs = retryAfterMs(headers, errorObj?.retry_after, ctx.nowMs);
      return { action: 'wait', error: new RateLimitedError(detail, info, { retryAfterMs: waitMs }), waitMs };
    }
    case 'timeout':
      return { action: 'retry', error: new TimeoutError(detail, info), minDelayMs: 0 };
    case 'server': {
      // A 503 may say when to come back; honour it as a floor under the backoff.
      const minDelayMs = header(headers, 'retry-after') === null ? 0 : retryAfterMs(headers, undefined, ctx.nowMs);
      return { action: 'retry', error: new ServerError(detail, info), minDelayMs };
    }
    case 'malformed':
      return {
        action: 'retry',
        error: new MalformedResponseError(`unexpected error body: ${detail}`, info),
        minDelayMs: 0,
      };
  }
}

type Kind = 'auth' | 'permission' | 'not_found' | 'invalid' | 'rate_limited' | 'timeout' | 'server' | 'malformed';

const BY_CODE: Record<string, Kind> = {
  unauthenticated: 'auth',
  permission_denied: 'permission',
  not_found: 'not_found',
  invalid_request: 'invalid',
  rate_limited: 'rate_limited',
  internal_error: 'server',
};

function kindOf(code: string | null, status: number): Kind {
  const byCode = code === null ? undefined : BY_CODE[code];
  if (byCode) return byCode;
  if (status === 401) return 'auth';
  if (status === 403) return 'permission';
  if (status === 404 || status === 410) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server';
  if (status >= 200 && status < 300) return 'malformed';
  return 'invalid';
}
