import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CursorCodec } from '../../src/simulator/cursor.ts';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { get, pageAll } from '../support/sim-http.ts';

// Paging: defaults and bounds per endpoint, opaque signed cursors bound to their query and expiring
// each on its own lifetime, and the has_more / next_cursor rule, over 10,000 runs with several
// page sizes.

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, size: 10_000, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
});
afterAll(() => sim.close());

function truthIds(): string[] {
  return [...sim.world.visibleRuns()].map(({ plan }) => plan.id);
}

describe('runs paging', () => {
  it.each([100, 37, 50])('pages through 10,000 runs with limit %i, no gap and no duplicate', async (limit) => {
    const items = await pageAll(sim, '/api/v1/runs', { limit });
    const ids = items.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(truthIds()));
    expect(ids.length).toBeGreaterThan(9_500);
  });

  it('pages inside a created-at window the same way', async () => {
    const from = '2026-02-10T00:00:00Z';
    const to = '2026-02-11T00:00:00Z';
    const items = await pageAll(sim, '/api/v1/runs', { created_after: from, created_before: to, limit: 9 });
    const expected = [...sim.world.visibleRuns(Date.parse(from) * 1000, Date.parse(to) * 1000)].map((r) => r.plan.id);
    expect(items.map((r) => r.id).sort()).toEqual(expected.sort());
    expect(items.length).toBeGreaterThan(200);
  });

  it('echoes the page size and ends with has_more false and a null cursor, also on an exact multiple', async () => {
    const window = { created_after: '2026-02-10T00:00:00Z', created_before: '2026-02-10T06:00:00Z' };
    const all = await pageAll(sim, '/api/v1/runs', { ...window, limit: 100 });
    expect(all.length).toBeGreaterThan(3);
    const r = await get(sim, '/api/v1/runs', { ...window, limit: all.length });
    expect(r.body.data).toHaveLength(all.length);
    expect(r.body.pagination).toEqual({ limit: all.length, next_cursor: null, has_more: false });
    const empty = await get(sim, '/api/v1/runs', { created_after: '2030-01-01T00:00:00Z' });
    expect(empty.body).toEqual({ data: [], pagination: { limit: 50, next_cursor: null, has_more: false } });
  });

  it.each([['0'], ['101'], ['-1'], ['1.5'], ['abc'], ['']])(
    'refuses limit=%s on runs, naming the parameter',
    async (limit) => {
      const r = await get(sim, '/api/v1/runs', { limit });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.message).toContain('limit');
    },
  );

  it('accepts the bounds 1 and 100 on runs', async () => {
    expect((await get(sim, '/api/v1/runs', { limit: 1 })).body.data).toHaveLength(1);
    expect((await get(sim, '/api/v1/runs', { limit: 100 })).body.data).toHaveLength(100);
  });
});

describe('cursors', () => {
  async function firstCursor(query: Record<string, string | number> = {}): Promise<string> {
    const r = await get(sim, '/api/v1/runs', { limit: 10, ...query });
    return r.body.pagination.next_cursor as string;
  }

  it('refuses a tampered cursor', async () => {
    const c = await firstCursor();
    const [payload, sig] = c.split('.') as [string, string];
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString());
    body.p = 5;
    const forged = `${Buffer.from(JSON.stringify(body)).toString('base64url')}.${sig}`;
    for (const bad of [forged, `${c}x`, c.slice(1), 'abc', c.replace('.', '')]) {
      const r = await get(sim, '/api/v1/runs', { limit: 10, cursor: bad });
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.message).toMatch(/cursor/);
    }
  });

  it('refuses a cursor used with other filters or on another endpoint', async () => {
    const c = await firstCursor({ status: 'completed' });
    expect((await get(sim, '/api/v1/runs', { limit: 10, cursor: c, status: 'completed' })).status).toBe(200);
    expect((await get(sim, '/api/v1/runs', { limit: 10, cursor: c, status: 'failed' })).status).toBe(400);
    expect((await get(sim, '/api/v1/runs', { limit: 10, cursor: c })).status).toBe(400);
    expect((await get(sim, '/api/v1/tools', { cursor: c })).status).toBe(400);
  });

  it('lets the page size change between pages', async () => {
    const c = await firstCursor();
    const r = await get(sim, '/api/v1/runs', { limit: 3, cursor: c });
    expect(r.status).toBe(200);
    expect(r.body.pagination.limit).toBe(3);
  });

  it('ages each cursor from when it was handed out, whichever page of a listing it leads to', () => {
    let now = 0;
    const codec = new CursorCodec(5, 1_000, () => now);
    const first = codec.encode('runs.list', 'q', 100);
    now = 999;
    expect(codec.decode('runs.list', 'q', first)).toBe(100);
    // Handed out mid-walk, long after the walk's first page: it has its own full lifetime.
    const later = codec.encode('runs.list', 'q', 200);
    now = 1_000;
    expect(() => codec.decode('runs.list', 'q', first)).toThrow(/cursor has expired; restart paging/);
    now = 1_998;
    expect(codec.decode('runs.list', 'q', later)).toBe(200);
    now = 1_999;
    expect(() => codec.decode('runs.list', 'q', later)).toThrow(/expired/);
  });

  it('with a lifetime of 0, refuses every cursor of every list with 400 invalid_request', async () => {
    const none = await startSimulator({ seed: 5, size: 500, now: '2026-03-01T00:00:00Z', cursorTtlMs: 0 });
    try {
      for (const path of ['runs', 'tools', 'agents', 'guidelines', 'guardrails', 'runbooks']) {
        const first = await get(none, `/api/v1/${path}`, { limit: 5 });
        expect(first.status, path).toBe(200);
        const again = await get(none, `/api/v1/${path}`, { limit: 5, cursor: first.body.pagination.next_cursor });
        expect(again.status, path).toBe(400);
        expect(again.body.error.code, path).toBe('invalid_request');
        expect(again.body.error.message, path).toMatch(/cursor has expired; restart paging from the first page/);
      }
    } finally {
      await none.close();
    }
  });

  it('refuses an expired cursor when a lifetime is set', async () => {
    const short = await startSimulator({ seed: 5, size: 500, now: '2026-03-01T00:00:00Z', cursorTtlMs: 50 });
    try {
      const r = await get(short, '/api/v1/runs', { limit: 10 });
      await new Promise((res) => setTimeout(res, 120));
      const again = await get(short, '/api/v1/runs', { limit: 10, cursor: r.body.pagination.next_cursor });
      expect(again.status).toBe(400);
      expect(again.body.error.message).toMatch(/expired/);
    } finally {
      await short.close();
    }
  });
});

describe('catalog paging', () => {
  it.each(['tools', 'agents', 'guidelines', 'guardrails', 'runbooks'])(
    '%s: every object once with limit 7',
    async (path) => {
      const small = await pageAll(sim, `/api/v1/${path}`, { limit: 7 });
      const big = await pageAll(sim, `/api/v1/${path}`, { limit: 200 });
      expect(small.map((o) => o.id)).toEqual(big.map((o) => o.id));
      expect(new Set(small.map((o) => o.id)).size).toBe(small.length);
    },
  );

  it('defaults to 100 and refuses limits outside 1..200', async () => {
    const first = await get(sim, '/api/v1/tools');
    expect(first.body.data).toHaveLength(100);
    expect(first.body.pagination.has_more).toBe(true);
    expect((await get(sim, '/api/v1/tools', { limit: 200 })).status).toBe(200);
    for (const limit of ['0', '201', 'x']) {
      for (const path of ['tools', 'agents', 'guidelines', 'guardrails', 'runbooks']) {
        const r = await get(sim, `/api/v1/${path}`, { limit });
        expect(r.status).toBe(400);
        expect(r.body.error.message).toContain('limit');
      }
    }
  });

  it('a deletion between pages neither repeats nor skips the objects after it', async () => {
    const own = await startSimulator({ seed: 9, size: 100, now: '2026-03-01T00:00:00Z' });
    try {
      const page1 = await get(own, '/api/v1/tools', { limit: 50 });
      const before = await pageAll(own, '/api/v1/tools', { limit: 200 });
      own.advance('30d');
      const after = new Set((await pageAll(own, '/api/v1/tools', { limit: 200 })).map((t) => t.id));
      const rest = await pageAll(own, '/api/v1/tools', { limit: 50, cursor: page1.body.pagination.next_cursor });
      const expectedRest = before
        .slice(50)
        .map((t) => t.id)
        .filter((id) => after.has(id));
      const got = rest.map((t) => t.id);
      // Objects created during the 30 days sort first (newest first) and are not behind the cursor.
      expect(got.filter((id) => before.some((b) => b.id === id))).toEqual(expectedRest);
    } finally {
      await own.close();
    }
  });
});
