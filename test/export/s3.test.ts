import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Latest } from '../../src/export/manifest.ts';
import { exportParquet } from '../../src/export/parquet.ts';
import { AccessDeniedError } from '../../src/storage/errors.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { sqlRunner } from '../../src/warehouse/sql.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { BUCKET, type TestS3, useS3 } from '../support/s3.ts';
import { simWorld, tempDir } from '../warehouse/wh-kit.ts';
import { differences, loadWorld, readListing, readObject, readPublished } from './s3-kit.ts';

// The Parquet export to an S3-compatible server: read back from the bucket through the pointer
// and by listing, it is the tables; a new export swaps in a new generation and keeps what it
// replaced for the grace period; one that fails half way leaves the published state as it was.

const GRACE_MS = 60_000;
const world = simWorld(52, 120, 5);
const held = useS3();
let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
let now = 1_772_323_200_000_000;

beforeEach(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => (now += 1_000) });
  await loadWorld(wh, world);
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

async function latestOf(store: ReturnType<TestS3['store']>): Promise<Latest> {
  return JSON.parse((await store.get('_latest.json'))?.toString('utf8') ?? 'null') as Latest;
}

/** A newer version of the first run: another status, a later updated_at. */
async function changeOneRun(): Promise<string> {
  const run: Record<string, unknown> = {
    ...[...world.truthRunDetails()][0],
    status: 'failed',
    updated_at: '2099-01-01T00:00:00.000000Z',
  };
  await loadRunDetails(wh, [run as never]);
  return String(run.created_at).slice(0, 10);
}

describe('parquet export to an object store', () => {
  it('reads back as the tables through _latest.json, by listing, and from analytics.duckdb', async () => {
    const store = held.s3.store('one/parquet');
    const r = await exportParquet(wh, { target: { store, graceMs: GRACE_MS } });
    expect(r.generation).toBe(1);
    expect(r.location).toBe(`s3://${BUCKET}/one/parquet`);
    expect(r.written.every((w) => w.startsWith(`s3://${BUCKET}/one/parquet/`))).toBe(true);
    expect(existsSync(join(wh.dir, 'parquet'))).toBe(false);

    await readPublished(store, join(tmp.dir, 'published'));
    expect(await differences(wh, join(tmp.dir, 'published'))).toEqual({});
    await readListing(store, join(tmp.dir, 'listed'));
    expect(await differences(wh, join(tmp.dir, 'listed'))).toEqual({});

    // The README's DuckDB recipe for a snapshot, on a copy of the bucket (httpfs reads s3:// alike).
    const bucket = join(tmp.dir, 'bucket');
    for (const o of await store.list('')) await readObject(store, o.key, join(bucket, o.key));
    await wh.run(`SET VARIABLE root = '${bucket}'`);
    await wh.run(`SET VARIABLE manifest = (SELECT getvariable('root') || '/' || tables.run_steps.manifest
                  FROM read_json(getvariable('root') || '/_latest.json'))`);
    await wh.run(`SET VARIABLE files = (SELECT list(getvariable('root') || '/' || f.key)
                  FROM (SELECT unnest(files) AS f FROM read_json(getvariable('manifest'))))`);
    const steps = `SELECT * EXCLUDE (created_date) FROM run_steps`;
    const recipe = await wh.all(
      `SELECT count(*) AS n FROM (${steps} EXCEPT ALL
       SELECT * EXCLUDE (created_date) FROM read_parquet(getvariable('files'), hive_partitioning = true))`,
    );
    expect(recipe).toEqual([{ n: 0n }]);

    // The views name the bucket; pointed at a copy of it, they read what the warehouse holds.
    const copy = join(tmp.dir, 'analytics.duckdb');
    copyFileSync(r.analyticsFile, copy);
    const db = await DuckDBInstance.create(copy);
    const conn = await db.connect();
    const q = sqlRunner(conn);
    try {
      expect(await q.all(`SELECT runsync_parquet_root() AS r`)).toEqual([{ r: `s3://${BUCKET}/one/parquet` }]);
      await q.run(`CREATE OR REPLACE MACRO runsync_parquet_root() AS '${join(tmp.dir, 'listed')}'`);
      const daily = `SELECT day::VARCHAR AS day, runs, resolved FROM v_runs_daily_resolution ORDER BY day`;
      expect(await q.all(daily)).toEqual(await wh.all(daily));
      expect(await q.all(`SELECT count(*) AS n FROM run_steps`)).toEqual(
        await wh.all(`SELECT count(*) AS n FROM run_steps`),
      );
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });

  it('swaps in a new generation, keeps replaced files for the grace period, shows a lister each run once', async () => {
    const store = held.s3.store('two/parquet');
    const target = { store, graceMs: GRACE_MS };
    await exportParquet(wh, { target });
    const first = await latestOf(store);
    const day = await changeOneRun();
    const r = await exportParquet(wh, { target });
    expect(r.generation).toBe(2);
    expect(r.dates).toEqual([day]);
    expect(r.written.length).toBeGreaterThan(0);
    expect(r.written.every((w) => w.includes(`/created_date=${day}/`))).toBe(true);

    const second = await latestOf(store);
    expect(second.tables.runs?.manifest).toBe('_manifests/runs/00000002.json');
    expect(second.tables.tools?.manifest).toBe(first.tables.tools?.manifest);
    const oldRuns = `_data/00000001/runs/created_date=${day}/data.parquet`;
    expect(await store.get(oldRuns)).not.toBeNull();
    await readPublished(store, join(tmp.dir, 'published'));
    expect(await differences(wh, join(tmp.dir, 'published'))).toEqual({});
    await readListing(store, join(tmp.dir, 'listed'));
    const [once] = await wh.all<{ rows: bigint; ids: bigint }>(
      `SELECT count(*) AS rows, count(DISTINCT id) AS ids
       FROM read_parquet('${join(tmp.dir, 'listed', 'runs', '*', '*.parquet')}', hive_partitioning = true)`,
    );
    const [runs] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
    expect(once).toEqual({ rows: runs?.n, ids: runs?.n });

    // Past the grace period, the next export deletes what generation 2 replaced, and only that.
    now += (GRACE_MS + 1_000) * 1_000;
    expect((await exportParquet(wh, { target })).generation).toBe(2);
    expect(await store.get(oldRuns)).toBeNull();
    expect(await store.list('_retired/')).toEqual([]);
    const live = new Set<string>();
    for (const t of Object.values(second.tables)) {
      const m = JSON.parse((await store.get(t.manifest))?.toString('utf8') ?? '{}') as { files: { key: string }[] };
      for (const f of m.files) live.add(f.key);
    }
    expect((await store.list('_data/')).map((o) => o.key).sort()).toEqual([...live].sort());
  });

  it('an export whose upload is refused half way leaves the published generation as it was', async () => {
    const store = held.s3.store('three/parquet', {
      endpoint: held.proxy.url,
      retry: { attempts: 3, baseMs: 5, maxMs: 10 },
    });
    const target = { store, graceMs: GRACE_MS };
    await exportParquet(wh, { target });
    const before = (await store.get('_latest.json'))?.toString('utf8');
    await readPublished(store, join(tmp.dir, 'before'));
    await changeOneRun();
    await loadRunDetails(wh, [
      { ...[...world.truthRunDetails()][5], status: 'failed', updated_at: '2099-01-02T00:00:00Z' } as never,
    ]);
    let uploads = 0;
    held.proxy.fault = (r) =>
      r.method === 'PUT' && r.path.includes('/_data/00000002/') && ++uploads > 2
        ? { status: 403, code: 'AccessDenied' }
        : undefined;
    const e = await exportParquet(wh, { target }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AccessDeniedError);
    expect((e as Error).message).toMatch(
      /^put s3:\/\/runsync-test\/three\/parquet\/_data\/00000002\/.* \(AccessDenied, HTTP 403\)$/,
    );
    expect((await store.get('_latest.json'))?.toString('utf8')).toBe(before);
    await readPublished(store, join(tmp.dir, 'after'));
    const same = await wh.all<{ n: bigint }>(
      `SELECT count(*) AS n FROM (SELECT * FROM read_parquet('${join(tmp.dir, 'before', 'runs', '*', '*.parquet')}')
       EXCEPT ALL SELECT * FROM read_parquet('${join(tmp.dir, 'after', 'runs', '*', '*.parquet')}'))`,
    );
    expect(same).toEqual([{ n: 0n }]);
    expect((await store.list('_data/00000002/')).length).toBeGreaterThan(0);

    held.proxy.fault = () => undefined;
    expect((await exportParquet(wh, { target })).generation).toBe(2);
    await readPublished(store, join(tmp.dir, 'published'));
    expect(await differences(wh, join(tmp.dir, 'published'))).toEqual({});
    const manifest = JSON.parse((await store.get('_manifests/runs/00000002.json'))?.toString('utf8') ?? '{}') as {
      files: { key: string }[];
    };
    const published = new Set(manifest.files.map((f) => f.key));
    for (const o of await store.list('_data/00000002/runs/')) expect(published.has(o.key), o.key).toBe(true);
  });
});
