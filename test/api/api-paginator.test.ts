import { afterEach, describe, expect, it } from 'vitest';
import { PaginationError, Paginator } from '../../src/api/index.ts';
import { collect, failure, json, makeClient, scriptedServer, type ScriptedServer } from './api-test-kit.ts';

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

  it('refuses has_more with no cursor, and an empty page that claims more', () => {
    expect(() => new Paginator('agents.list').advance({ itemCount: 3, hasMore: true, nextCursor: null })).toThrow(
      /has_more but gives no next_cursor/,
    );
    expect(() => new Paginator('agents.list').advance({ itemCount: 3, hasMore: true, nextCursor: '' })).toThrow(PaginationError);
    expect(() => new Paginator('agents.list').advance({ itemCount: 0, hasMore: true, nextCursor: 'n' })).toThrow(
      /empty yet says has_more/,
    );
  });

  it('resumes from a saved cursor and will not be sent back to it', () => {
    const p = new Paginator('runs.list', { cursor: 'saved' });
    expect(p.cursor).toBe('saved');
    expect(() => p.advance({ itemCount: 1, hasMore: true, nextCursor: 'saved' })).toThrow(PaginationError);
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
    const { e, requests } = await walk(() => ({ data: [agent(1)], pagination: { limit: 1, has_more: true, next_cursor: null } }));
    expect(e).toBeInstanceOf(PaginationError);
    expect(requests).toBe(1);
  });

  it('stops on an empty page that claims more', async () => {
    const { e, requests } = await walk((n) => ({ data: [], pagination: { limit: 1, has_more: true, next_cursor: `c${n}` } }));
    expect(e).toBeInstanceOf(PaginationError);
    expect(requests).toBe(1);
  });
});
