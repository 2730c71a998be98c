import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { get } from '../support/sim-http.ts';

// Authentication and scopes as the spec states them: 401 unauthenticated for a missing, malformed,
// unknown, expired or revoked key (revocation at once), 403 permission_denied naming the scope.

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, size: 200, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
});
afterAll(() => sim.close());

async function raw(headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${sim.url}/api/v1/runs`, { headers });
  return { status: res.status, body: await res.json() };
}

describe('401 unauthenticated', () => {
  it.each([
    ['missing', {}],
    ['not a bearer token', { authorization: `Basic ${sim?.key}` }],
    ['without the svc_live_ prefix', { authorization: 'Bearer sk_live_abcdefghijklmnop' }],
    ['the bare prefix', { authorization: 'Bearer svc_live_' }],
    ['two tokens', { authorization: 'Bearer svc_live_a svc_live_b' }],
    ['unknown', { authorization: 'Bearer svc_live_this_key_was_never_issued' }],
  ])('refuses a key that is %s', async (_name, headers) => {
    const r = await raw(headers as Record<string, string>);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthenticated');
    expect(r.body.error.request_id).toMatch(/^req_/);
  });

  it('a key sent in the wrong case of "Bearer" or without a space is malformed', async () => {
    expect((await raw({ authorization: `bearer${sim.key}` })).status).toBe(401);
  });

  it('refuses an expired key once the clock passes its expiry', async () => {
    const expiresAt = parseTimestamp('2026-03-01T01:00:00Z') as number;
    const key = sim.keys.add({ expiresAt });
    expect((await get(sim, '/api/v1/runs', { limit: 1 }, key)).status).toBe(200);
    sim.advance('61m');
    const r = await get(sim, '/api/v1/runs', { limit: 1 }, key);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/expired/);
  });

  it('revocation takes effect on the very next request, also on an open connection', async () => {
    const key = sim.keys.add();
    expect((await get(sim, '/api/v1/agents', {}, key)).status).toBe(200);
    sim.keys.revoke(key);
    const r = await get(sim, '/api/v1/agents', {}, key);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('unauthenticated');
    expect(r.body.error.message).toMatch(/revoked/);
    expect((await get(sim, '/api/v1/agents')).status).toBe(200);
  });
});

describe('403 permission_denied', () => {
  const scopeOf: [string, string][] = [
    ['/api/v1/runs', 'api:runs:read'],
    ['/api/v1/runs/00000000-0000-4000-8000-000000000000', 'api:runs:read'],
    ['/api/v1/runs/tool-options', 'api:runs:read'],
    ['/api/v1/tools', 'api:tools:read'],
    ['/api/v1/tools/service%3Aknowledge_search', 'api:tools:read'],
    ['/api/v1/agents', 'api:agents:read'],
    ['/api/v1/guidelines', 'api:guidelines:read'],
    ['/api/v1/guardrails', 'api:guardrails:read'],
    ['/api/v1/runbooks', 'api:runbooks:read'],
  ];

  it.each(scopeOf)('%s needs %s, and says so', async (path, scope) => {
    const without = sim.keys.add({ scopes: ALL_SCOPES.filter((s) => s !== scope) });
    const r = await get(sim, path, {}, without);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('permission_denied');
    expect(r.body.error.message).toContain(scope);
    const only = sim.keys.add({ scopes: [scope] });
    expect([200, 404]).toContain((await get(sim, path, {}, only)).status);
  });
});
