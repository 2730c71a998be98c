// One error class per way a call to the Export API can fail. Callers branch on the class (or on
// `retriable`), never on message text. Every error names the endpoint and the request_id the API
// gave (null when no response came back); none ever holds the API key, because messages that quote
// the server are passed through the client's redaction before they get here.

export interface ApiErrorInfo {
  /** Logical endpoint, e.g. `runs.get`. */
  endpoint: string;
  /** Request path and query as sent, without the origin. */
  path?: string | null;
  status?: number | null;
  /** The body's `error.code`, when the API sent one. */
  code?: string | null;
  requestId?: string | null;
  /** How many attempts were made before giving up. */
  attempts?: number;
  cause?: unknown;
}

export abstract class ApiError extends Error {
  readonly endpoint: string;
  readonly path: string | null;
  readonly status: number | null;
  readonly code: string | null;
  readonly requestId: string | null;
  /** What went wrong, without the endpoint and status the message adds. */
  readonly detail: string;
  attempts: number;
  /** Whether repeating the same request may succeed. */
  abstract readonly retriable: boolean;

  constructor(detail: string, info: ApiErrorInfo) {
    super(describe(detail, info), info.cause === undefined ? undefined : { cause: info.cause });
    this.endpoint = info.endpoint;
    this.path = info.path ?? null;
    this.status = info.status ?? null;
    this.code = info.code ?? null;
    this.requestId = info.requestId ?? null;
    this.detail = detail;
    this.attempts = info.attempts ?? 1;
  }

  override get name(): string {
    return this.constructor.name;
  }

  /** Records that the client gave up after `attempts` tries (set once, by the retry loop). */
  noteAttempts(attempts: number): this {
    if (attempts > 1 && this.attempts === 1) {
      this.attempts = attempts;
      this.message = `${this.message}; gave up after ${attempts} attempts`;
    }
    return this;
  }
}

function describe(detail: string, info: ApiErrorInfo): string {
  const parts = [
    info.status ? `HTTP ${info.status}` : null,
    info.code,
    info.requestId ? `request_id ${info.requestId}` : null,
  ];
  const meta = parts.filter((p) => p !== null && p !== undefined).join(', ');
  return `${info.endpoint}: ${detail}${meta ? ` (${meta})` : ''}`;
}

/**
 * The errors that carry facts of their own: they are given by name when the error is made and
 * kept as read-only fields beside those every ApiError has.
 */
function withFacts<Facts extends object, Base extends ApiError = ApiError>(
  base: abstract new (detail: string, info: ApiErrorInfo) => Base,
) {
  const parent: abstract new (detail: string, info: ApiErrorInfo) => ApiError = base;
  abstract class WithFacts extends parent {
    constructor(detail: string, info: ApiErrorInfo, facts: Facts) {
      super(detail, info);
      Object.assign(this, facts);
    }
  }
  type WithFactsClass = abstract new (detail: string, info: ApiErrorInfo, facts: Facts) => Base & Readonly<Facts>;
  return WithFacts as WithFactsClass;
}

/** 401 / `unauthenticated`: the key is missing, unknown, expired or revoked. Stops everything. */
export class AuthError extends ApiError {
  readonly retriable = false;
}

/** 403 / `permission_denied`: the key lacks the scope this endpoint needs; other resources may still work. */
export class PermissionError extends withFacts<{ scope: string | null }>(ApiError) {
  readonly retriable = false;
}

/** 400 / `invalid_request`, and any other 4xx the API does not describe. */
export class InvalidRequestError extends ApiError {
  readonly retriable = false;
}

/**
 * A page request carrying a cursor was refused (`invalid_request`, or `not_found`) although its
 * filters were accepted for the first page: the API no longer takes that cursor (it expired, or
 * the server forgot it). Paging can start over from the first page; the same request cannot succeed.
 */
export class CursorRefusedError extends withFacts<CursorFacts, InvalidRequestError>(InvalidRequestError) {}

interface CursorFacts {
  /** The page of the listing that was asked for (2: the one after the first); null for a saved cursor. */
  page: number | null;
  /** How long the cursor was held, from its page's answer to the refused request; null for a saved one. */
  heldMs: number | null;
}

/** A filter or page request that breaks the spec's limits; found before any request is made. */
export class FilterError extends InvalidRequestError {
  constructor(
    readonly parameter: string,
    detail: string,
    endpoint: string,
  ) {
    super(`${parameter}: ${detail}`, { endpoint });
  }
}

/** `not_found` (whatever the status) or 404. */
export class NotFoundError extends ApiError {
  readonly retriable = false;
}

/** 429 / `rate_limited`, raised only once the client has waited as long as it is allowed to. */
export class RateLimitedError extends withFacts<{ retryAfterMs: number }>(ApiError) {
  readonly retriable = true;
}

/** 5xx / `internal_error`. */
export class ServerError extends ApiError {
  readonly retriable = true;
}

/** No usable response: connection refused or reset, the body cut short. */
export class NetworkError extends ApiError {
  readonly retriable = true;
}

/** The connection, the headers or the body took longer than the client allows. */
export class TimeoutError extends NetworkError {}

/** A 2xx whose body is not JSON or not the envelope the spec describes. */
export class MalformedResponseError extends ApiError {
  readonly retriable = true;
}

/** The pagination broke its own rules (a cursor seen before, more pages but no cursor...). */
export class PaginationError extends ApiError {
  readonly retriable = false;
}

/** A record that breaks a required field of its schema; it is kept aside with why, and skipped. */
export class InvalidRecordError extends withFacts<{
  problems: readonly string[];
  recordId: string | null;
  /** The record as it came. */
  record: unknown;
}>(ApiError) {
  readonly retriable = false;
}
