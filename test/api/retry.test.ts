import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthError,
  backoffDelay,
  classify,
  DEFAULT_RETRY_POLICY,
  type Expect,
  InvalidRequestError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  type PermissionError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  type Verdict,
} from '../../src/api/index.ts';
import { failure, json, makeClient, type ScriptedServer, scriptedServer } from './test-kit.ts';

// The one classification of responses and exceptions, case by case: the body's error.code first,
// the status second; what is fatal, what is retried, what waits.

const KEY = 'svc_live_classify_secret_key_123';
const NOW = 1_800_000_000_000;

function response(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  expect: Expect = 'detail',
): Verdict {
  return classify(
    { kind: 'response', status, headers, body: typeof body === 'string' ? body : JSON.stringify(body) },
    {
      endpoint: 'runs.get',
      path: '/api/v1/runs/x',
      expect,
      redact: (s) => s.split(KEY).join('[REDACTED]'),
      nowMs: NOW,
    },
  );
}

function apiError(code: string, message = 'm', extra: Record<string, unknown> = {}) {
  return { error: { code, message, request_id: 'req_abc', ...extra } };
}

function errorOf(v: Verdict): Error {
  if (v.action === 'ok') throw new Error('expected an error verdict');
  return v.error;
}

describe('classify', () => {
  it('passes a well-formed body through', () => {
    const v = response(200, { data: { id: 'r' } });
    expect(v).toMatchObject({ action: 'ok', body: { data: { id: 'r' } } });
  });

  it('makes 401 fatal (AuthError), 403 fatal naming the scope, 400 fatal, 404 NotFoundError', () => {
    expect(response(401, apiError('unauthenticated'))).toMatchObject({ action: 'fatal', error: expect.any(AuthError) });
    const perm = response(403, apiError('permission_denied', 'the API key lacks the scope api:tools:read'));
    expect(perm.action).toBe('fatal');
    expect((errorOf(perm) as PermissionError).scope).toBe('api:tools:read');
    expect(errorOf(perm).message).toContain('api:tools:read');
    expect(response(400, apiError('invalid_request'))).toMatchObject({
      action: 'fatal',
      error: expect.any(InvalidRequestError),
    });
    expect(response(404, apiError('not_found'))).toMatchObject({ action: 'fatal', error: expect.any(NotFoundError) });
  });

  it('names the endpoint scope when a 403 message does not', () => {
    const v = response(403, 'Forbidden');
    expect((errorOf(v) as PermissionError).scope).toBe('api:runs:read');
  });

  it('reads the code before the status: not_found under any status, a known code under an odd status', () => {
    expect(errorOf(response(400, apiError('not_found')))).toBeInstanceOf(NotFoundError);
    expect(errorOf(response(200, apiError('not_found')))).toBeInstanceOf(NotFoundError);
    expect(errorOf(response(422, apiError('unauthenticated')))).toBeInstanceOf(AuthError);
    expect(errorOf(response(404, apiError('invalid_request')))).toBeInstanceOf(InvalidRequestError);
    expect(errorOf(response(418, apiError('something_new')))).toBeInstanceOf(InvalidRequestError);
    expect(errorOf(response(404, '<html>not here</html>'))).toBeInstanceOf(NotFoundError);
  });

  it('retries 5xx, including proxy pages that are not JSON, and takes the request id from the header', () => {
    const v = response(502, '<html><h1>502 Bad Gateway</h1></html>', { 'x-request-id': 'req_proxy' });
    expect(v.action).toBe('retry');
    expect(errorOf(v)).toBeInstanceOf(ServerError);
    expect((errorOf(v) as ServerError).requestId).toBe('req_proxy');
    expect(response(500, apiError('internal_error'))).toMatchObject({
      action: 'retry',
      error: expect.any(ServerError),
    });
    expect(response(503, 'busy', { 'retry-after': '3' })).toMatchObject({ action: 'retry', minDelayMs: 3000 });
    expect(response(408, '')).toMatchObject({ action: 'retry', error: expect.any(TimeoutError) });
  });

  it('retries a 2xx that is not JSON or not the expected envelope', () => {
    expect(errorOf(response(200, '{"data": [1, 2'))).toBeInstanceOf(MalformedResponseError);
    expect(response(200, { data: [] }, {}, 'list').action).toBe('retry');
    expect(response(200, { data: [], pagination: { has_more: 'yes', next_cursor: null } }, {}, 'list').action).toBe(
      'retry',
    );
    expect(
      response(200, { data: [], pagination: { limit: 5, has_more: false, next_cursor: null } }, {}, 'list').action,
    ).toBe('ok');
    expect(response(200, { data: [] }, {}, 'detail').action).toBe('retry');
    expect(response(200, { data: [] }, {}, 'items').action).toBe('ok');
  });

  it('waits on 429 for Retry-After, else the body, else the reset, else a second', () => {
    expect(response(429, apiError('rate_limited', 'slow', { retry_after: 9 }), { 'retry-after': '2' })).toMatchObject({
      action: 'wait',
      waitMs: 2000,
    });
    expect(response(429, apiError('rate_limited', 'slow', { retry_after: 9 }))).toMatchObject({
      action: 'wait',
      waitMs: 9000,
    });
    expect(response(429, 'x', { 'x-ratelimit-reset': String(NOW / 1000 + 4) })).toMatchObject({
      action: 'wait',
      waitMs: 4000,
    });
    expect(response(429, 'x', { 'x-ratelimit-reset': '3' })).toMatchObject({ action: 'wait', waitMs: 3000 });
    expect(response(429, 'x')).toMatchObject({ action: 'wait', waitMs: 1000 });
    const date = new Date(NOW + 5000).toUTCString();
    expect(response(429, 'x', { 'retry-after': date })).toMatchObject({ action: 'wait', waitMs: 5000 });
  });

  it('retries connection failures and timeouts', () => {
    const ctx = {
      endpoint: 'runs.list' as const,
      path: '/p',
      expect: 'list' as const,
      redact: (s: string) => s,
      nowMs: NOW,
    };
    const reset = classify(
      {
        kind: 'exception',
        error: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
        timedOut: false,
      },
      ctx,
    );
    expect(reset).toMatchObject({ action: 'retry', error: expect.any(NetworkError) });
    expect(errorOf(reset)).not.toBeInstanceOf(TimeoutError);
    const headers = classify(
      { kind: 'exception', error: Object.assign(new Error('x'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), timedOut: false },
      ctx,
    );
    expect(errorOf(headers)).toBeInstanceOf(TimeoutError);
    const ours = classify({ kind: 'exception', error: new Error('aborted'), timedOut: true }, ctx);
    expect(errorOf(ours)).toBeInstanceOf(TimeoutError);
  });

  it('never lets the key into an error, even when the server quotes it', () => {
    const v = response(401, apiError('unauthenticated', `key ${KEY} is revoked`));
    const e = errorOf(v);
    expect(e.message).not.toContain(KEY);
    expect(JSON.stringify(e)).not.toContain(KEY);
    expect(e.message).toContain('[REDACTED]');
    expect(e).toMatchObject({ endpoint: 'runs.get', requestId: 'req_abc', status: 401, code: 'unauthenticated' });
  });
});

describe('backoff', () => {
  it('grows exponentially with jitter between half and all of the cap, and stops growing at the maximum', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(1, policy, () => 0)).toBe(50);
    expect(backoffDelay(1, policy, () => 1)).toBe(100);
    expect(backoffDelay(3, policy, () => 0)).toBe(200);
    expect(backoffDelay(3, policy, () => 1)).toBe(400);
    expect(backoffDelay(10, policy, () => 1)).toBe(1000);
    const draws = Array.from({ length: 50 }, () => backoffDelay(2, policy));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...draws)).toBeLessThanOrEqual(200);
    expect(new Set(draws).size).toBeGreaterThan(1);
  });
});

describe('classification through the client, against a server that answers oddly', () => {
  const KEY2 = 'svc_live_odd_server_test_key_0001';
  const option = { tool_name: 'web_search', display_name: 'Web search', run_count: 3 };
  let server: ScriptedServer;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    server = await scriptedServer((req, res) => {
      const path = (req.url ?? '').split('?')[0] as string;
      const n = (hits.get(path) ?? 0) + 1;
      hits.set(path, n);
      const html = (status: number) => {
        res.writeHead(status, { 'content-type': 'text/html', 'x-request-id': `req_proxy_${n}` });
        res.end(`<html><body><h1>${status}</h1></body></html>`);
      };
      switch (path) {
        case '/api/v1/runs/gone-400':
          return json(res, 400, { error: { code: 'not_found', message: 'no such run', request_id: 'req_gone' } });
        case '/api/v1/runs/gone-500':
          return json(res, 500, { error: { code: 'not_found', message: 'no such run', request_id: 'req_gone5' } });
        case '/api/v1/runs/tool-options':
          // Two proxy pages, then an HTML 200, then the answer.
          if (n <= 2) return html(502);
          if (n === 3) return html(200);
          return json(res, 200, { data: [option] });
        case '/api/v1/tools/service%3Adown':
          return html(503);
        case '/api/v1/agents/echo':
          return json(res, 401, {
            error: {
              code: 'unauthenticated',
              message: `revoked: ${req.headers.authorization}`,
              request_id: 'req_echo',
            },
          });
        case '/api/v1/guardrails/penalty':
          return json(
            res,
            429,
            { error: { code: 'rate_limited', message: 'slow down', request_id: 'req_pen', retry_after: 3600 } },
            { 'retry-after': '3600' },
          );
        default:
          return json(res, 500, {
            error: { code: 'internal_error', message: `unscripted ${path}`, request_id: 'req_x' },
          });
      }
    });
  });
  afterAll(() => server.close());

  const client = () =>
    makeClient(server.url, KEY2, { validation: 'lenient', retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 4 } });

  it('takes not_found for NotFoundError whatever the status, without retrying', async () => {
    const { client: c } = client();
    for (const [id, requestId] of [
      ['gone-400', 'req_gone'],
      ['gone-500', 'req_gone5'],
    ] as const) {
      const e = (await failure(c.getRun(id))) as NotFoundError;
      expect(e).toBeInstanceOf(NotFoundError);
      expect(e).toMatchObject({ endpoint: 'runs.get', requestId, code: 'not_found' });
      expect(hits.get(`/api/v1/runs/${id}`)).toBe(1);
    }
    await c.close();
  });

  it('retries proxy pages and an HTML 200 until the real answer comes', async () => {
    const { client: c } = client();
    expect(await c.getRunToolOptions()).toEqual({ items: [option], refused: [] });
    expect(hits.get('/api/v1/runs/tool-options')).toBe(4);
    expect(c.stats().retries).toBe(3);
    await c.close();
  });

  it('gives up after the bounded attempts with the proxy request id and the endpoint', async () => {
    const { client: c } = client();
    const e = (await failure(c.getCatalogObject('tools', 'service:down'))) as ServerError;
    expect(e).toBeInstanceOf(ServerError);
    expect(e).toMatchObject({ endpoint: 'tools.get', status: 503, requestId: 'req_proxy_4', attempts: 4 });
    expect(hits.get('/api/v1/tools/service%3Adown')).toBe(4);
    await c.close();
  });

  it('keeps the key out of an error even when the server echoes the Authorization header', async () => {
    const { client: c } = client();
    const e = (await failure(c.getCatalogObject('agents', 'echo'))) as AuthError;
    expect(e).toBeInstanceOf(AuthError);
    expect(e.requestId).toBe('req_echo');
    expect(e.message).not.toContain(KEY2);
    expect(JSON.stringify(e)).not.toContain(KEY2);
    await c.close();
  });

  it('fails fast on a Retry-After longer than it will wait, without holding the other callers', async () => {
    const { client: c, budget } = client();
    const t0 = Date.now();
    const e = (await failure(c.getCatalogObject('guardrails', 'penalty'))) as RateLimitedError;
    expect(e).toBeInstanceOf(RateLimitedError);
    expect(e.retryAfterMs).toBe(3_600_000);
    expect(e.requestId).toBe('req_pen');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect((await budget.snapshot()).pausedUntilMs).toBeLessThan(Date.now());
    await c.close();
  });
});
