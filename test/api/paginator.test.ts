import { afterEach, describe, expect, it } from 'vitest';
import { CATALOG_CURSOR_RESTARTS } from '../../src/api/client.ts';
import {
  CursorRefusedError,
  FilterError,
  InvalidRequestError,
  NotFoundError,
  PaginationError,
  Paginator,
  ServerError,
} from '../../src/api/index.ts';
import { RECENT_CURSORS } from '../../src/api/paginator.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { collect, failure, json, makeClient, type ScriptedServer, scriptedServer, startSim } from './test-kit.ts';

// The paginator follows the spec's paging rule and stops a server that would loop it, with an
// error that says why. The simulator pages correctly, so the broken servers here are scripted.

const KEY = 'svc_live_paginator_test_key_0001';

describe('Paginator', () => {
  it('starts without a cursor, follows next_cursor, and finishes when has_more is false', () => {
    const p = new Paginator('tools.list');
    expect(p.cursor).toBeNull();
    p.advance({ itemCount: 2, hasMore: true, nextCursor: 'c1' });
    expect(p.cursor).toBe('c1');
    expect(p.finished).toBe(false);
    p.advance({ itemCount: 1, hasMore: false, nextCursor: null });
    expect(p.finished).toBe(true);
    expect(p.pageCount).toBe(2);
    expect(() => p.advance({ itemCount: 0, hasMore: false, nextCursor: null })).toThrow(PaginationError);
  });

  it('trusts has_more over a leftover cursor, and accepts an empty last page', () => {
    const p = new Paginator('runs.list');
    p.advance({ itemCount: 0, hasMore: false, nextCursor: 'stale' });
    expect(p.finished).toBe(true);
  });

  it('refuses a cursor it has already followed, even two pages back', () => {
    const p = new Paginator('runs.list');
    p.advance({ itemCount: 5, hasMore: true, nextCursor: 'a' });
    p.advance({ itemCount: 5, hasMore: true, nextCursor: 'b' });
    expect(() => p.advance({ itemCount: 5, hasMore: true, nextCursor: 'a', requestId: 'req_9' })).toThrow(
      /runs\.list: page 3 repeats a cursor already followed.*request_id req_9/,
    );
  });

  it('catches a loop longer than the cursors it keeps, within about twice its pages', () => {
    // Forty pages in, the server sends the walk back 3,000 pages: no cursor set of the latest
    // RECENT_CURSORS holds the one it repeats.
    const loop = 3 * RECENT_CURSORS;
    const cursorAfter = (page: number) => `c${page < 40 + loop ? page : 40 + ((page - 40) % loop)}`;
    const p = new Paginator('runs.list');
    let page = 0;
    const walk = () => {
      for (; page < 20 * loop; page++) p.advance({ itemCount: 100, hasMore: true, nextCursor: cursorAfter(page) });
    };
    expect(walk).toThrow(/repeats a cursor already followed/);
    expect(page).toBeGreaterThan(40 + loop);
    expect(page).toBeLessThan(40 + 3 * loop);
  });

  it('follows a listing of many thousand pages that never repeats', () => {
    const p = new Paginator('runs.list');
    for (let page = 0; page < 50_000; page++) p.advance({ itemCount: 100, hasMore: true, nextCursor: `c${page}` });
    p.advance({ itemCount: 100, hasMore: false, nextCursor: null });
    expect(p.finished).toBe(true);
    expect(p.pageCount).toBe(50_001);
  });

  it('refuses has_more with no cursor, and an empty page that claims more', () => {
    expect(() => new Paginator('agents.list').advance({ itemCount: 3, hasMore: true, nextCursor: null })).toThrow(
      /has_more but gives no next_cursor/,
    );
    expect(() => new Paginator('agents.list').advance({ itemCount: 3, hasMore: true, nextCursor: '' })).toThrow(
      PaginationError,
    );
    expect(() => new Paginator('agents.list').advance({ itemCount: 0, hasMore: true, nextCursor: 'n' })).toThrow(
      /empty yet says has_more/,
    );
  });

  it('resumes from a saved cursor and will not be sent back to it', () => {
    const p = new Paginator('runs.list', { cursor: 'saved' });
    expect(p.cursor).toBe('saved');
    expect(() => p.advance({ itemCount: 1, hasMore: true, nextCursor: 'saved' })).toThrow(PaginationError);
  });

  it('reads a refused request for the next page as a refused cursor, and nothing else as one', () => {
    let now = 1_000;
    const p = new Paginator('runs.list', { nowMs: () => now });
    const invalid = new InvalidRequestError('cursor has expired', { endpoint: 'runs.list', status: 400 });
    // The first page carries no cursor: its refusal is about the request itself.
    expect(p.refusal(invalid)).toBeNull();
    p.advance({ itemCount: 100, hasMore: true, nextCursor: 'c1' });
    now += 2_500;
    const refused = p.refusal(invalid);
    expect(refused).toBeInstanceOf(CursorRefusedError);
    expect(refused?.page).toBe(2);
    expect(refused?.heldMs).toBe(2_500);
    expect(refused?.status).toBe(400);
    expect(refused?.message).toMatch(/cursor for page 2 \(held 2\.5 s\) is no longer accepted: cursor has expired/);
    expect(p.refusal(new NotFoundError('gone', { endpoint: 'runs.list', status: 404 }))).toBeInstanceOf(
      CursorRefusedError,
    );
    expect(p.refusal(new ServerError('down', { endpoint: 'runs.list', status: 503 }))).toBeNull();
    expect(p.refusal(new FilterError('limit', 'out of range', 'runs.list'))).toBeNull();
    expect(p.refusal(new Error('socket'))).toBeNull();
    const saved = new Paginator('runs.list', { cursor: 'saved' }).refusal(invalid);
    expect(saved?.page).toBeNull();
    expect(saved?.message).toMatch(/the saved cursor is no longer accepted/);
  });

  it('restarts from the first page, may follow the same cursors again, and still caps the pages', () => {
    const p = new Paginator('runs.list', { maxPages: 4 });
    p.advance({ itemCount: 1, hasMore: true, nextCursor: 'a' });
    p.restart();
    expect(p.cursor).toBeNull();
    expect(p.restarts).toBe(1);
    p.advance({ itemCount: 1, hasMore: true, nextCursor: 'a' });
    p.advance({ itemCount: 1, hasMore: true, nextCursor: 'b' });
    expect(() => p.advance({ itemCount: 1, hasMore: true, nextCursor: 'c' })).toThrow(/more than 4 pages/);
  });

  it('gives up after the page cap', () => {
    const p = new Paginator('runs.list', { maxPages: 3 });
    p.advance({ itemCount: 1, hasMore: true, nextCursor: 'a' });
    p.advance({ itemCount: 1, hasMore: true, nextCursor: 'b' });
    expect(() => p.advance({ itemCount: 1, hasMore: true, nextCursor: 'c' })).toThrow(/more than 3 pages/);
  });
});

describe('the client against a server whose pagination loops', () => {
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const agent = (i: number) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` });

  async function walk(pagination: (n: number) => { data: unknown[]; pagination: unknown }) {
    server = await scriptedServer((_req, res, n) => {
      if (n > 50) return json(res, 500, { error: { code: 'internal_error', message: 'looped', request_id: 'r' } });
      json(res, 200, pagination(n));
    });
    const t = makeClient(server.url, KEY, { validation: 'lenient', retry: { maxAttempts: 1 } });
    const e = await failure(collect(t.client.iterateCatalog('agents')));
    await t.client.close();
    return { e, requests: server.requests.length };
  }

  it('stops on a cursor that comes back', async () => {
    const { e, requests } = await walk((n) => ({
      data: [agent(n)],
      pagination: { limit: 1, has_more: true, next_cursor: n % 2 === 0 ? 'even' : 'odd' },
    }));
    expect(e).toBeInstanceOf(PaginationError);
    expect(requests).toBe(3);
  });

  it('stops on has_more with a null cursor', async () => {
    const { e, requests } = await walk(() => ({
      data: [agent(1)],
      pagination: { limit: 1, has_more: true, next_cursor: null },
    }));
    expect(e).toBeInstanceOf(PaginationError);
    expect(requests).toBe(1);
  });

  it('stops on an empty page that claims more', async () => {
    const { e, requests } = await walk((n) => ({
      data: [],
      pagination: { limit: 1, has_more: true, next_cursor: `c${n}` },
    }));
    expect(e).toBeInstanceOf(PaginationError);
    expect(requests).toBe(1);
  });
});

describe('the client against a simulator whose cursors expire', () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('a refused runs cursor is a CursorRefusedError: a 400 invalid_request for the page after the first', async () => {
    sim = await startSim({ cursorTtlMs: 0 });
    const t = makeClient(sim.url, sim.key);
    const pages: number[] = [];
    const e = await failure(
      (async () => {
        for await (const page of t.client.runPages({}, { pageSize: 100 })) pages.push(page.items.length);
      })(),
    );
    await t.client.close();
    expect(pages).toEqual([100]);
    expect(e).toBeInstanceOf(CursorRefusedError);
    expect((e as CursorRefusedError).code).toBe('invalid_request');
    expect((e as CursorRefusedError).page).toBe(2);
    expect(sim.counters.count('runs.list', 400)).toBe(1);
  });

  it('a catalog listing starts over after a cursor expires, and yields every object once', async () => {
    sim = await startSim({ cursorTtlMs: 1_000 });
    const t = makeClient(sim.url, sim.key);
    const ids: string[] = [];
    let held = false;
    for await (const page of t.client.catalogPages('tools', { pageSize: 50 })) {
      ids.push(...page.items.map((x) => x.id));
      // The first cursor is held past its lifetime, once.
      if (!held) {
        held = true;
        await new Promise((r) => setTimeout(r, 1_100));
      }
    }
    await t.client.close();
    const want = sim.world.catalogObjects('tool').map((o) => o.id as string);
    expect(ids.sort()).toEqual(want.sort());
    // Once for the held cursor; a slow moment may add one more before the listing gets through.
    expect(sim.counters.count('tools.list', 400)).toBeGreaterThanOrEqual(1);
    expect(sim.counters.count('tools.list', 400)).toBeLessThanOrEqual(CATALOG_CURSOR_RESTARTS);
  });

  it('a catalog listing whose every cursor is refused fails after a few restarts, saying why', async () => {
    sim = await startSim({ cursorTtlMs: 0 });
    const t = makeClient(sim.url, sim.key);
    const e = await failure(collect(t.client.iterateCatalog('tools', { pageSize: 50 })));
    await t.client.close();
    expect(e).toBeInstanceOf(CursorRefusedError);
    expect(e.message).toMatch(/tools\.list: the cursor for page 2 .* is no longer accepted: cursor has expired/);
    expect(sim.counters.count('tools.list', 400)).toBe(CATALOG_CURSOR_RESTARTS + 1);
    expect(sim.counters.count('tools.list', 200)).toBe(CATALOG_CURSOR_RESTARTS + 1);
  });
});
