import { afterEach, describe, expect, it } from 'vitest';
import {
  emptyRunCounts,
  RESTARTS_BEFORE_NARROWING,
  readSlice,
  type SliceAt,
  SlicePagingError,
} from '../../src/sync/index.ts';
import { silentLogger } from '../../src/util/logger.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { json, makeClient, type ScriptedServer, scriptedServer } from '../api/test-kit.ts';

// The one way a slice cannot be read: the API refuses every cursor and more than a page of runs
// share one microsecond of created time, so no narrower piece fits a page. The simulator spreads
// its runs over time, so this server is scripted: every created-time range holds more than a page,
// and any request with a cursor is refused as the spec says (400 invalid_request).

const KEY = 'svc_live_slice_test_key_00000001';

describe('a slice that cannot be read', () => {
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('is narrowed down to one microsecond, then fails saying why, after a bounded number of requests', async () => {
    let issued = 0;
    server = await scriptedServer((req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      if (q.has('cursor')) {
        return json(res, 400, {
          error: { code: 'invalid_request', message: 'cursor has expired', request_id: 'req_x' },
        });
      }
      const data = Array.from({ length: 100 }, (_, i) => ({ id: `run-${issued}-${i}`, object: 'run' }));
      json(res, 200, { data, pagination: { limit: 100, has_more: true, next_cursor: `c${++issued}` } });
    });
    const t = makeClient(server.url, KEY, { validation: 'lenient', retry: { maxAttempts: 1 } });
    const from = parseTimestamp('2026-02-01T00:00:00Z') as number;
    const counts = emptyRunCounts();
    const start: SliceAt = { part: 0, cursor: null };
    let pages = 0;
    let error: unknown = null;
    try {
      const slice = { from, to: from + 16 };
      const signal = new AbortController().signal;
      for await (const p of readSlice({ api: t.client, logger: silentLogger() }, slice, start, {
        filter: {},
        counts,
        signal,
      })) {
        pages++;
        expect(p.next.done).toBe(false);
      }
    } catch (e) {
      error = e;
    } finally {
      await t.client.close();
    }
    expect(error).toBeInstanceOf(SlicePagingError);
    const message = (error as Error).message;
    expect(message).toContain('the runs created in [2026-02-01T00:00:00Z, 2026-02-01T00:00:00.000001Z) 3 times');
    expect(message).toMatch(/cannot be narrowed further: more than a page \(100\) of runs.*cursor has expired/);
    // 16 µs halved four times to 1 µs; each piece tried RESTARTS_BEFORE_NARROWING + 1 times, one page
    // and one refused request each.
    const attempts = 5 * (RESTARTS_BEFORE_NARROWING + 1);
    expect(counts.narrowed).toBe(4);
    expect(counts.cursorRestarts).toBe(attempts - 1);
    expect(pages).toBe(attempts);
    expect(server.requests).toHaveLength(2 * attempts);
  });
});
