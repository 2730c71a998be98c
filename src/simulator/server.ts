import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Micros, parseDuration, parseTimestamp } from '../util/timestamp.ts';
import { handleAdmin } from './admin.ts';
import { type AuthResult, type SimKeySpec, SimKeys } from './auth.ts';
import type { CatalogSizes, Json } from './catalog.ts';
import { SimClock } from './clock.ts';
import { SimCounters } from './counters.ts';
import { CursorCodec } from './cursor.ts';
import { type FaultConfig, type FaultDecision, SimFaults } from './faults.ts';
import { QueryError } from './query.ts';
import { DEFAULT_RATE_LIMIT, type RateDecision, type RateLimitConfig, SimRateLimiter } from './rate-limit.ts';
import { matchRoute, NotFound, type Route, SimHandlers } from './routes.ts';
import type { RunUniverseOptions } from './runs.ts';
import { SimWorld } from './world.ts';

export interface SimulatorOptions {
  seed?: number;
  /** Runs created in the `days` before the clock's start. */
  size?: number;
  days?: number;
  /** The clock's start (ISO date-time or microseconds); default: the current hour. */
  now?: string | Micros;
  clock?: 'manual' | 'wall';
  /** Wall clocks only: simulated seconds per real second. */
  speed?: number;
  catalog?: Partial<CatalogSizes>;
  runs?: Partial<Omit<RunUniverseOptions, 'seed' | 'spanStart' | 'initialNow' | 'size'>>;
  /** Keys accepted; default one key with every scope (`Simulator.key`). */
  keys?: SimKeySpec[];
  rateLimit?: Partial<RateLimitConfig>;
  faults?: Partial<FaultConfig>;
  /** Cursors this old are refused (wall time; 0: every cursor); null: never. Applies to every list. */
  cursorTtlMs?: number | null;
  /** Serve the /_sim control endpoints (clock, faults, keys, counters). */
  admin?: boolean;
  host?: string;
  port?: number;
}

export interface Simulator {
  /** The API's base URL (without /api/v1). */
  readonly url: string;
  /** The first key of `options.keys`, or the generated all-scopes key. */
  readonly key: string;
  readonly world: SimWorld;
  readonly clock: SimClock;
  readonly keys: SimKeys;
  readonly faults: SimFaults;
  readonly rateLimiter: SimRateLimiter;
  readonly counters: SimCounters;
  /** Moves the clock forward: `'1h'`, `'15m'`, or microseconds. */
  advance(by: string | Micros): Micros;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function defaultNow(): Micros {
  const ms = Date.now();
  return (ms - (ms % 3_600_000)) * 1000;
}

function toMicros(v: string | Micros | undefined, fallback: () => Micros): Micros {
  if (v === undefined) return fallback();
  if (typeof v === 'number') return v;
  const t = parseTimestamp(v);
  if (t === null) throw new Error(`not an RFC 3339 date-time: ${v}`);
  return t;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const seed = options.seed ?? 42;
  const clock = new SimClock(toMicros(options.now, defaultNow), options.clock ?? 'manual', options.speed ?? 1);
  const world = new SimWorld(
    {
      seed,
      size: options.size ?? 2000,
      days: options.days ?? 30,
      initialNow: clock.now(),
      ...(options.catalog ? { catalog: options.catalog } : {}),
      ...(options.runs ? { runs: options.runs } : {}),
    },
    clock,
  );
  const keys = new SimKeys();
  const keySpecs = options.keys?.length ? options.keys : [{}];
  const firstKey = keySpecs.map((k) => keys.add(k))[0] as string;
  const faults = new SimFaults(options.faults);
  const rateLimiter = new SimRateLimiter({ ...DEFAULT_RATE_LIMIT, ...options.rateLimit });
  const counters = new SimCounters();
  const handlers = new SimHandlers(
    world,
    new CursorCodec(seed, options.cursorTtlMs === undefined ? 3_600_000 : options.cursorTtlMs),
  );

  const ctx: ServerContext = { world, keys, faults, rateLimiter, counters, handlers, admin: options.admin ?? true };
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    serve(ctx, req, res).catch((err: unknown) => {
      const reqId = String(res.getHeader('X-Request-Id') ?? requestId());
      if (!res.headersSent) sendJson(res, 500, errorBody('internal_error', String(err), reqId));
      else res.destroy();
    });
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  const host = options.host && options.host !== '0.0.0.0' && options.host !== '::' ? options.host : '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    key: firstKey,
    world,
    clock,
    keys,
    faults,
    rateLimiter,
    counters,
    advance(by) {
      const us = typeof by === 'number' ? by : parseDuration(by);
      if (us === null) throw new Error(`not a duration: ${String(by)}`);
      return clock.advance(us);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        rateLimiter.close();
        server.close(() => resolve());
      }),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

export interface ServerContext {
  world: SimWorld;
  keys: SimKeys;
  faults: SimFaults;
  rateLimiter: SimRateLimiter;
  counters: SimCounters;
  handlers: SimHandlers;
  admin: boolean;
}

function requestId(): string {
  return `req_${randomBytes(8).toString('hex')}`;
}

export function errorBody(code: string, message: string, reqId: string, retryAfter?: number): Json {
  const error: Json = { code, message, request_id: reqId };
  if (retryAfter !== undefined) error.retry_after = retryAfter;
  return { error };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** X-RateLimit-* of a decision; Reset on the API's clock, `offsetMs` from the real one. */
function rateHeaders(d: RateDecision, offsetMs: number): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(d.reset + Math.round(offsetMs / 1000)),
  };
}

function decodeSegments(rawPath: string): string[] | null {
  try {
    return rawPath
      .split('/')
      .slice(1)
      .map((s) => decodeURIComponent(s));
  } catch {
    return null;
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1_000_000) break;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function serve(ctx: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = Date.now();
  const reqId = requestId();
  res.setHeader('X-Request-Id', reqId);
  const offsetMs = ctx.world.clock.offsetFromRealMs();
  res.setHeader('Date', new Date(started + offsetMs).toUTCString());
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const rawPath = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const method = req.method ?? 'GET';

  if (rawPath.startsWith('/_sim/') || rawPath === '/_sim') {
    if (!ctx.admin) return sendJson(res, 404, errorBody('not_found', 'no such path', reqId));
    return handleAdmin(ctx, method, rawPath, query, await readBody(req), res);
  }

  const segments = decodeSegments(rawPath);
  const route = segments ? matchRoute(segments) : null;
  const endpoint = route?.endpoint ?? 'unknown';
  const auth = ctx.keys.authenticate(req.headers.authorization, ctx.world.now());
  const keyId = auth.ok ? auth.keyId : null;
  const fault = ctx.faults.decide(endpoint, keyId, started);
  const ex = exchange(ctx, res, reqId, started, offsetMs, (status) =>
    ctx.counters.record({
      t: started,
      endpoint,
      status,
      keyId,
      ...(fault.action !== 'none' && status === fault.status
        ? { fault: fault.action, ...(fault.retryAfter === undefined ? {} : { retryAfter: fault.retryAfter }) }
        : {}),
    }),
  );
  if (fault.delayMs > 0) await new Promise((r) => setTimeout(r, fault.delayMs));
  if (answeredByFault(ex, req, fault)) return;
  if (fault.action === 'spurious_429') return refuseSpuriously(ex, fault.retryAfter ?? 1, auth, endpoint);
  if (!auth.ok) return ex.fail(401, 'unauthenticated', UNAUTHENTICATED[auth.reason]);
  if (refusedForBurst(ex, auth.keyId)) return;
  const rate = await ctx.rateLimiter.decide(auth.keyId, auth.org, endpoint, started);
  if (rate && !rate.allowed) {
    const headers = { 'Retry-After': String(rate.retryAfter), ...rateHeaders(rate, offsetMs) };
    return ex.fail(429, 'rate_limited', `rate limit exceeded; retry in ${rate.retryAfter}s`, headers, rate.retryAfter);
  }

  if (segments === null) return ex.fail(400, 'invalid_request', 'the path is not valid percent-encoding');
  if (!route) return ex.fail(404, 'not_found', `no such path: ${rawPath}`);
  if (method !== route.method) {
    return ex.fail(405, 'invalid_request', `${method} is not allowed here; use ${route.method}`, {
      Allow: route.method,
    });
  }
  if (route.scope && !auth.scopes.has(route.scope)) {
    return ex.fail(403, 'permission_denied', `the API key lacks the scope ${route.scope}`);
  }
  answer(ex, route, query, route.endpoint === 'runs.list' && rate ? rateHeaders(rate, offsetMs) : {}, fault);
}

/** One request being answered: when it came, and how it is counted and refused. */
interface Exchange {
  readonly ctx: ServerContext;
  readonly res: ServerResponse;
  readonly started: number;
  /** The API's clock minus the real one, in ms. */
  readonly offsetMs: number;
  /** Counts the request with the status it was answered with (0: none). */
  count(status: number): void;
  /** Counts the request and answers it with the spec's error body. */
  fail(status: number, code: string, message: string, headers?: Record<string, string>, retryAfter?: number): void;
}

function exchange(
  ctx: ServerContext,
  res: ServerResponse,
  reqId: string,
  started: number,
  offsetMs: number,
  count: (status: number) => void,
): Exchange {
  return {
    ctx,
    res,
    started,
    offsetMs,
    count,
    fail(status, code, message, headers = {}, retryAfter) {
      count(status);
      sendJson(res, status, errorBody(code, message, reqId, retryAfter), headers);
    },
  };
}

const UNAUTHENTICATED: Record<Extract<AuthResult, { ok: false }>['reason'], string> = {
  missing: 'the Authorization header is missing',
  malformed: 'the Authorization header must be "Bearer svc_live_…"',
  unknown: 'the API key is not recognised',
  expired: 'the API key has expired',
  revoked: 'the API key has been revoked',
};

/** A fault that takes the place of an answer (a reset, a hang, a server error); whether one did. */
function answeredByFault(ex: Exchange, req: IncomingMessage, fault: FaultDecision): boolean {
  const { res } = ex;
  if (fault.action === 'reset') {
    ex.count(0);
    req.socket.destroy();
    return true;
  }
  // Never answered: the connection stays open until the client gives up on it.
  if (fault.action === 'hang') {
    ex.count(0);
    return true;
  }
  if (fault.action !== 'server_error') return false;
  if (fault.status === 500) {
    ex.fail(500, 'internal_error', 'the API could not complete the request');
    return true;
  }
  const status = fault.status;
  ex.count(status);
  const title = `${status} ${status === 502 ? 'Bad Gateway' : 'Service Unavailable'}`;
  const html = `<html><head><title>${status}</title></head><body><h1>${title}</h1></body></html>`;
  res.writeHead(status, { 'Content-Type': 'text/html', 'Content-Length': Buffer.byteLength(html) });
  res.end(html);
  return true;
}

/** A burst of 429s the faults started for this key; whether this request is one of them. */
function refusedForBurst(ex: Exchange, keyId: string): boolean {
  const burst = ex.ctx.faults.burstRemaining(keyId, ex.started);
  if (burst <= 0) return false;
  const limit = ex.ctx.rateLimiter.config.perKey?.limit ?? 100;
  const headers = {
    'Retry-After': String(burst),
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': '0',
    'X-RateLimit-Reset': String(Math.ceil((ex.started + ex.offsetMs) / 1000) + burst),
  };
  ex.fail(429, 'rate_limited', `rate limit exceeded; retry in ${burst}s`, headers, burst);
  return true;
}

/**
 * A 429 a gateway in front sent while shedding load: before the key is checked, counted in no
 * bucket. With figures on, it carries the key's bucket as it stands.
 */
async function refuseSpuriously(ex: Exchange, retryAfter: number, auth: AuthResult, endpoint: string): Promise<void> {
  const { ctx } = ex;
  const figures =
    ctx.faults.config.spurious429Figures && auth.ok
      ? await ctx.rateLimiter.peek(auth.keyId, auth.org, endpoint, ex.started)
      : null;
  const headers = { 'Retry-After': String(retryAfter), ...(figures ? rateHeaders(figures, ex.offsetMs) : {}) };
  ex.fail(429, 'rate_limited', `too many requests; retry in ${retryAfter}s`, headers, retryAfter);
}

/** The endpoint's answer, or what a fault makes of its body (cut, stalled, malformed). */
function answer(
  ex: Exchange,
  route: Route,
  query: URLSearchParams,
  headers: Record<string, string>,
  fault: FaultDecision,
): void {
  const { res } = ex;
  if (route.endpoint === 'mcp') {
    ex.count(200);
    return sendJson(res, 200, {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32601, message: 'the simulator serves no MCP tools' },
    });
  }
  let body: Json;
  try {
    body = ex.ctx.handlers.handle(route, query);
  } catch (e) {
    if (e instanceof QueryError) return ex.fail(400, 'invalid_request', e.message);
    if (e instanceof NotFound) return ex.fail(404, 'not_found', e.message);
    throw e;
  }
  ex.count(200);
  if (fault.action === 'malformed') {
    const text = `${JSON.stringify(body).slice(0, 40)}<!-- upstream error -->`;
    res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(text), ...headers });
    res.end(text);
    return;
  }
  if (fault.action === 'truncated' || fault.action === 'stall') {
    const text = Buffer.from(JSON.stringify(body));
    res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Content-Length': text.length, ...headers });
    // Cut: the connection closes half-way. Stalled: it stays open and silent.
    const half = text.subarray(0, Math.floor(text.length / 2));
    res.write(half, () => (fault.action === 'truncated' ? res.destroy() : undefined));
    return;
  }
  sendJson(res, 200, body, headers);
}
