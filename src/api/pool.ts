import { Pool } from 'undici';
import { MAX_IN_FLIGHT } from './in-flight.ts';

// One keep-alive connection pool per API origin: bounded connections so concurrency cannot run
// away, and timeouts on every phase so a stalled server costs a retry, not a hung sync (each request
// sets its own waits for headers and body: timeouts.ts).

export interface PoolOptions {
  /** Connections at most; default: the most detail fetches a process keeps in flight, and room for list pages. */
  connections?: number;
  /** Idle time a kept-alive connection is held; default 30 s. */
  keepAliveMs?: number;
  connectTimeoutMs?: number;
  /** Time to the response headers. */
  headersTimeoutMs?: number;
  /** Longest silence while the body streams in. */
  bodyTimeoutMs?: number;
}

export function createApiPool(origin: string, options: PoolOptions = {}): Pool {
  return new Pool(origin, {
    connections: options.connections ?? MAX_IN_FLIGHT + 4,
    pipelining: 1,
    keepAliveTimeout: options.keepAliveMs ?? 30_000,
    keepAliveMaxTimeout: 10 * 60_000,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    headersTimeout: options.headersTimeoutMs ?? 30_000,
    bodyTimeout: options.bodyTimeoutMs ?? 30_000,
  });
}
