import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { runMain as cli } from '../support/cli.ts';
import { spanStart, startSim, tempDir } from '../sync/kit.ts';
import { type HostileProxy, hostileProxy } from './proxy.ts';

// Lists that would never end: a cursor that comes back, a page that claims more with no cursor.
// The pass stops with a clear message and exit 1, keeping the pages it loaded before.

describe('hostile paging', () => {
  let sim: Simulator | null = null;
  let proxy: HostileProxy | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  afterEach(async () => {
    await proxy?.close();
    await sim?.close();
    tmp?.cleanup();
  });

  async function run(
    mangle: (
      page: { data: unknown[]; pagination: { next_cursor: string | null; has_more: boolean } },
      n: number,
    ) => void,
  ) {
    sim = await startSim({ seed: 92, size: 400, days: 5 });
    let n = 0;
    proxy = await hostileProxy(sim.url, ({ path, body }) => {
      // The pages of the walk; a one-item listing reads the API's clock before it.
      if (!path.startsWith('/api/v1/runs?') || /[?&]limit=1(&|$)/.test(path)) return;
      const page = body as { data: unknown[]; pagination: { next_cursor: string | null; has_more: boolean } };
      mangle(page, ++n);
      return { body: page };
    });
    tmp = tempDir();
    const env = {
      RUNSYNC_API_URL: proxy.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: tmp.dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
    };
    const t0 = Date.now();
    const r = await cli(['sync', '--no-export'], env);
    const wh = await openWarehouse(tmp.dir, { readOnly: true });
    const [kept] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    await wh.close();
    return { ...r, seconds: (Date.now() - t0) / 1000, kept: Number(kept?.n), pages: n };
  }

  it('a cursor that comes back', async () => {
    let first: string | null = null;
    const r = await run((page, n) => {
      if (n === 1) first = page.pagination.next_cursor;
      else if (n === 3) page.pagination.next_cursor = first;
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/cursor/i);
    expect(r.err).toMatch(/repeat|again|loop/i);
    expect(r.pages).toBeLessThan(10);
    // The pages before the loop were loaded and kept.
    expect(r.kept).toBeGreaterThan(0);
  });

  it('a page that claims more but gives no cursor', async () => {
    const r = await run((page, n) => {
      if (n === 2) page.pagination.next_cursor = null;
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/has_more|no cursor|next_cursor/i);
    expect(r.pages).toBeLessThan(5);
    expect(r.kept).toBeGreaterThan(0);
  });

  it('a non-https API address is refused before anything is sent', async () => {
    tmp = tempDir();
    const r = await cli(['sync'], {
      RUNSYNC_API_URL: 'http://api.example.com',
      RUNSYNC_API_KEY: 'svc_live_abcdefghijkl',
      RUNSYNC_WAREHOUSE_DIR: tmp.dir,
    });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/RUNSYNC_API_URL: must use https/);
  });
});
