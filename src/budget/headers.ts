import type { HeaderMap, RateObservation } from './types.ts';

// Reading the API's rate-limit headers. The spec gives X-RateLimit-Reset as a Unix timestamp in
// seconds; some servers send the seconds left instead, or milliseconds, so the magnitude decides:
// below 10^9 it cannot be a date after 2001 and is read as a delta, above 10^12 it is milliseconds.

const DELTA_BELOW = 1e9;
const MILLIS_ABOVE = 1e12;

export function header(headers: HeaderMap, name: string): string | null {
  const v = headers[name.toLowerCase()];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

function nonNegativeNumber(text: string | null): number | null {
  if (text === null || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

/** X-RateLimit-Reset as wall-clock milliseconds. */
export function resetToMs(value: number, nowMs: number): number {
  if (value < DELTA_BELOW) return nowMs + value * 1000;
  if (value > MILLIS_ABOVE) return value;
  return value * 1000;
}

/** The X-RateLimit-* headers of a response, or null when it carries none. */
export function readRateHeaders(headers: HeaderMap, nowMs: number): RateObservation | null {
  const limit = nonNegativeNumber(header(headers, 'x-ratelimit-limit'));
  const remaining = nonNegativeNumber(header(headers, 'x-ratelimit-remaining'));
  const reset = nonNegativeNumber(header(headers, 'x-ratelimit-reset'));
  if (limit === null && remaining === null && reset === null) return null;
  return {
    limit: limit !== null && limit >= 1 ? Math.floor(limit) : null,
    remaining: remaining === null ? null : Math.floor(remaining),
    resetAtMs: reset === null ? null : resetToMs(reset, nowMs),
    atMs: nowMs,
  };
}

/**
 * How long a 429 asks us to wait, in ms: the Retry-After header (seconds or an HTTP date), else the
 * body's `retry_after`, else the time to X-RateLimit-Reset, else one second.
 */
export function retryAfterMs(headers: HeaderMap, bodyRetryAfter: unknown, nowMs: number): number {
  const raw = header(headers, 'retry-after');
  const seconds = nonNegativeNumber(raw);
  if (seconds !== null) return Math.max(0, seconds * 1000);
  if (raw !== null) {
    const date = Date.parse(raw);
    if (Number.isFinite(date)) return Math.max(0, date - nowMs);
  }
  if (typeof bodyRetryAfter === 'number' && Number.isFinite(bodyRetryAfter) && bodyRetryAfter >= 0) {
    return bodyRetryAfter * 1000;
  }
  const reset = nonNegativeNumber(header(headers, 'x-ratelimit-reset'));
  if (reset !== null) {
    const wait = resetToMs(reset, nowMs) - nowMs;
    if (wait > 0) return wait;
  }
  return 1000;
}
