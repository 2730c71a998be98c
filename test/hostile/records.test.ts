import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { DetailFetcher, type DetailSource } from '../../src/sync/detail-fetcher.ts';
import { runPass } from '../../src/sync/index.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { runMain } from '../support/cli.ts';
import { engineFor, SETTLE, startSim, tempDir, truth } from '../sync/kit.ts';
import { type HostileProxy, hostileProxy, type ProxyOptions, type Rewrite } from './proxy.ts';

// Records a broken or hostile API could send, over otherwise real simulator data: each kept or
// refused on its own, the rest of the pass unharmed.

type Json = Record<string, unknown>;
const isDetail = (path: string) => /^\/api\/v1\/runs\/(?!tool-options)[^/?]+/.test(path);
const isList = (path: string) => path.startsWith('/api/v1/runs?') || path === '/api/v1/runs';

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else out.push(p);
  }
  return out;
}

describe('hostile records', () => {
  let sim: Simulator | null = null;
  let proxy: HostileProxy | null = null;
  let tmp: ReturnType<typeof tempDir> | null = null;
  afterEach(async () => {
    await proxy?.close();
    await sim?.close();
    tmp?.cleanup();
  });

  async function syncThrough(rewrite: Rewrite, options: ProxyOptions = {}) {
    sim = await startSim({ seed: 91, size: 120, days: 5 });
    proxy = await hostileProxy(sim.url, rewrite, options);
    tmp = tempDir();
    const engine = engineFor({ sim, dir: tmp.dir, env: { RUNSYNC_API_URL: proxy.url } });
    try {
      return await runPass(engine.deps);
    } finally {
      await engine.close();
    }
  }

  async function rows<T>(sql: string): Promise<T[]> {
    const wh = await openWarehouse((tmp as { dir: string }).dir, { readOnly: true });
    try {
      return await wh.all<T>(sql);
    } finally {
      await wh.close();
    }
  }

  it('keeps unknown fields (in the raw archive) and takes missing optional ones as null', async () => {
    const r = await syncThrough(({ path, body }) => {
      const add = (run: Json) => {
        run.x_new_field = { nested: ['kept', 1] };
        const trigger = run.trigger as Json;
        delete trigger.ticket_tags;
        delete trigger.customer_name;
      };
      const b = body as { data: Json | Json[] };
      if (isList(path)) (b.data as Json[]).forEach(add);
      else if (isDetail(path)) add(b.data as Json);
      return { body: b };
    });
    expect(r.status).toBe('ok');
    expect(r.runs.rejected).toBe(0);
    const want = truth(sim as Simulator, (sim as Simulator).clock.now() - SETTLE);
    const [n] = await rows<{ n: bigint }>(
      `SELECT count(*) AS n FROM runs WHERE ticket_tags IS NULL AND trigger_customer_name IS NULL`,
    );
    expect(Number(n?.n)).toBe(want.size);
    const raw = join((tmp as { dir: string }).dir, 'raw');
    const [kept] = await rows<{ n: bigint }>(
      `SELECT count(*) AS n FROM read_parquet('${raw}/runs/*/*.parquet') WHERE payload LIKE '%x_new_field%'`,
    );
    expect(Number(kept?.n)).toBe(want.size);
  });

  it('a run missing a required field or with one of the wrong type is refused and set apart; others load', async () => {
    let victims: string[] = [];
    const r = await syncThrough(({ path, body }) => {
      if (!isDetail(path)) return;
      const run = (body as { data: Json }).data;
      if (victims.length < 2 && !victims.includes(run.id as string)) victims.push(run.id as string);
      if (run.id === victims[0]) delete run.updated_at;
      if (run.id === victims[1]) run.steps = 'not a list';
      return { body };
    });
    victims = victims.slice(0, 2);
    expect(r.status).toBe('ok');
    expect(r.runs.rejected).toBeGreaterThanOrEqual(2);
    const rejected = await rows<{ id: string; reason: string }>(
      `SELECT record_id AS id, reason FROM _sync_rejected WHERE endpoint = 'runs.get' ORDER BY id`,
    );
    expect(rejected.map((x) => x.id).sort()).toEqual([...victims].sort());
    for (const x of rejected) expect(x.reason).toMatch(/updated_at|steps/);
    const want = truth(sim as Simulator, (sim as Simulator).clock.now() - SETTLE);
    const [n] = await rows<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    expect(Number(n?.n)).toBe(want.size - 2);
  });

  it('loads a 10 MB tool output and deeply nested JSON', async () => {
    let big: string | null = null;
    let deep: string | null = null;
    const r = await syncThrough(({ path, body }) => {
      if (!isDetail(path)) return;
      const run = (body as { data: Json }).data;
      const steps = run.steps as Json[];
      const step = steps.find((s) => s.type === 'tool_call');
      if (!step) return;
      if (big === null) {
        big = run.id as string;
        (step.tool as Json).output = { text: 'ü'.repeat(5_000_000) };
      } else if (deep === null) {
        deep = run.id as string;
        let nested: Json = { leaf: true };
        for (let i = 0; i < 500; i++) nested = { level: i, child: nested };
        (step.tool as Json).input = nested;
      }
      return { body };
    });
    expect(r.status).toBe('ok');
    expect(r.runs.rejected).toBe(0);
    const [b] = await rows<{ n: bigint }>(
      `SELECT max(strlen(tool_output::VARCHAR)) AS n FROM run_steps WHERE run_id = '${big}'`,
    );
    expect(Number(b?.n)).toBeGreaterThan(10_000_000);
    const [d] = await rows<{ j: string }>(
      `SELECT tool_input::VARCHAR AS j FROM run_steps
       WHERE run_id = '${deep}' AND tool_input IS NOT NULL AND tool_input::VARCHAR LIKE '%"level":499%'`,
    );
    expect(d?.j).toMatch(/"leaf":true/);
  });

  it('ids with slashes, dots, percents, quotes, unicode: stored as sent, no path escapes, no broken SQL', async () => {
    const hostile = [
      '../../etc/passwd',
      'a/b/c',
      '%2e%2e%2fx',
      `it's "quoted"; DROP TABLE runs; --`,
      'ユニコード-✨',
      '..',
    ];
    const toHostile = new Map<string, string>();
    const toReal = new Map<string, string>();
    const rename = (id: string) => {
      if (!toHostile.has(id) && toHostile.size < hostile.length) {
        const h = hostile[toHostile.size] as string;
        toHostile.set(id, h);
        toReal.set(h, id);
      }
      return toHostile.get(id) ?? id;
    };
    const r = await syncThrough(
      ({ path, body }) => {
        const b = body as { data: Json | Json[] };
        if (isList(path)) for (const run of b.data as Json[]) run.id = rename(run.id as string);
        else if (isDetail(path)) (b.data as Json).id = rename((b.data as Json).id as string);
        else return;
        return { body: b };
      },
      {
        request: (path) => {
          const m = /^\/api\/v1\/runs\/([^?]+)(.*)$/.exec(path);
          if (!m || m[1] === 'tool-options') return path;
          const id = decodeURIComponent(m[1] as string);
          return `/api/v1/runs/${encodeURIComponent(toReal.get(id) ?? id)}${m[2]}`;
        },
      },
    );
    expect(r.status).toBe('ok');
    const stored = await rows<{ id: string }>(
      `SELECT id FROM runs WHERE id IN (${hostile.map((h) => `'${h.replace(/'/g, "''")}'`).join(', ')}) ORDER BY id`,
    );
    expect(stored.map((x) => x.id).sort()).toEqual([...hostile].sort());
    // Every detail was asked for by its encoded id, and every file stayed inside the warehouse.
    for (const h of hostile)
      expect((proxy as HostileProxy).paths).toContain(
        `/api/v1/runs/${encodeURIComponent(h).replace(/^\.\.?$/, (d) => d.replace(/\./g, '%2E'))}`,
      );
    const dir = (tmp as { dir: string }).dir;
    for (const f of files(dir)) expect(relative(dir, f).startsWith('..')).toBe(false);
    expect(existsSync(join(dir, 'etc'))).toBe(false);
    const [children] = await rows<{ n: bigint }>(
      `SELECT count(*) AS n FROM run_steps WHERE run_id = '../../etc/passwd'`,
    );
    expect(Number(children?.n)).toBeGreaterThan(0);
  });

  it('a payload the warehouse cannot load is never silent: named, retried by the next pass, in status', async () => {
    sim = await startSim({ seed: 91, size: 120, days: 5 });
    tmp = tempDir();
    const engine = engineFor({ sim, dir: tmp.dir });
    let victim: string | null = null;
    let poison = true;
    // Details as the client fetches them, one of them with what DuckDB refuses (a lone surrogate,
    // which the client itself mends): the way a payload no normalisation foresaw would arrive.
    const details = (signal: AbortSignal): DetailSource => {
      const real = new DetailFetcher(engine.deps.api, 8, signal);
      return {
        async fetch(ids) {
          const batch = await real.fetch(ids);
          for (const r of batch.results) {
            if (!r.ok || !poison) continue;
            victim ??= r.id;
            if (r.id !== victim) continue;
            const step = (r.detail.steps as { tool: unknown }[])[0];
            if (step) step.tool = { name: 'odd', input: { text: 'half a character: \udfff' } };
          }
          return batch;
        },
        close: () => real.close(),
      };
    };
    const deps = { ...engine.deps, details };
    try {
      const first = await runPass(deps);
      expect(first.status).toBe('partial');
      expect(first.errors.join('\n')).toMatch(new RegExp(`run ${victim} could not be loaded into the warehouse \\(`));
      const status = await runMain(['status'], { RUNSYNC_WAREHOUSE_DIR: tmp.dir });
      expect(status.out).toMatch(new RegExp(`not loaded +run ${victim}: .*tried again every pass`));
      poison = false;
      const second = await runPass(deps);
      expect(second.status, second.errors.join('\n')).toBe('ok');
      expect(second.pendingRetried).toBeGreaterThanOrEqual(1);
    } finally {
      await engine.close();
    }
    const [loaded] = await rows<{ n: bigint }>(`SELECT count(*) AS n FROM runs WHERE id = '${victim}'`);
    expect(Number(loaded?.n)).toBe(1);
    const want = truth(sim as Simulator, (sim as Simulator).clock.now() - SETTLE);
    const [n] = await rows<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    expect(Number(n?.n)).toBe(want.size);
  });
});
