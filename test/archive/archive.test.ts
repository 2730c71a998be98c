import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import parquet from 'parquetjs-lite';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registerArchiveCodec } from '../../src/archive/codec.ts';
import { ARCHIVE_ENDPOINTS, listArchiveFiles } from '../../src/archive/paths.ts';
import { CATALOG_TABLES } from '../../src/resources/registry.ts';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { loadCatalogListing } from '../../src/warehouse/load-catalog.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { loadToolOptions } from '../../src/warehouse/load-tool-options.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { rebuildInPlace, rebuildInto } from '../../src/warehouse/rebuild.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { runDetail } from '../warehouse/run-fixture.ts';
import { CATALOG_KIND, count, dumpAll, simDetails, tempDir } from '../warehouse/wh-kit.ts';

let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
let now = 1_772_323_200_000_000;
beforeEach(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => (now += 1_000_000) });
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

function walk(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: false }).map((f) => join(dir, String(f)));
}

describe('raw archive', () => {
  it('keeps each changed payload compressed, by endpoint and day, readable by DuckDB and parquetjs-lite', async () => {
    const details = simDetails(41, 40);
    const r = await loadRunDetails(wh, details, { fetchedAt: 1_772_323_200_123_456 });
    expect(
      relative(wh.dir, r.archiveFile as string)
        .split(sep)
        .slice(0, 3),
    ).toEqual(['raw', 'runs', '2026-03-01']);

    const viaDuck = await wh.all<{ id: string; payload: string; f: bigint; codec: string }>(
      `SELECT id, payload, epoch_us(fetched_at) AS f FROM read_parquet('${r.archiveFile}') ORDER BY seq`,
    );
    expect(viaDuck.map((x) => JSON.parse(x.payload))).toEqual(details);
    expect(viaDuck.every((x) => x.f === 1_772_323_200_123_456n)).toBe(true);
    const codecs = await wh.all<{ c: string }>(
      `SELECT DISTINCT compression AS c FROM parquet_metadata('${r.archiveFile}') WHERE path_in_schema = 'payload'`,
    );
    expect(codecs).toEqual([{ c: 'BROTLI' }]);

    registerArchiveCodec(); // parquetjs-lite's Brotli codec is supplied by runsync
    const reader = await parquet.ParquetReader.openFile(r.archiveFile as string);
    const cursor = reader.getCursor();
    const ids: unknown[] = [];
    for (let row = await cursor.next(); row; row = await cursor.next()) ids.push(row.id);
    await reader.close();
    expect(ids).toEqual(details.map((d) => d.id));
  });

  it('never builds a path from an API value, however hostile the id', async () => {
    const hostile = [
      '../../escape',
      '..',
      '%2F..%2Fx',
      'it\'s "quoted"',
      'チケット/..\\x',
      '\u0000nul',
      'a'.repeat(5000),
      '.hidden',
      '/abs/path',
    ];
    const r = await loadRunDetails(
      wh,
      hostile.map((id) => runDetail({ id })),
    );
    expect(r.inserted).toBe(hostile.length);
    const files = walk(join(wh.dir, 'raw'));
    for (const f of files) {
      const rel = relative(join(wh.dir, 'raw'), f);
      expect(rel).toMatch(/^runs(\/\d{4}-\d{2}-\d{2}(\/\d{8}T\d{12}Z-\d+-[0-9a-f]{8}\.parquet)?)?$/);
    }
    expect(walk(tmp.dir).every((f) => f.startsWith(wh.dir))).toBe(true);
    expect((await wh.all<{ id: string }>(`SELECT id FROM runs ORDER BY id`)).map((x) => x.id).sort()).toEqual(
      [...hostile].sort(),
    );
  });

  it('creates its directories and files for the owner only', async () => {
    await loadRunDetails(wh, [runDetail()]);
    await loadCatalogListing(wh, 'guardrails', [{ id: 'g', object: 'guardrail' }], { complete: true });
    const entries = walk(join(wh.dir, 'raw'));
    expect(entries.length).toBeGreaterThan(3);
    expect(statSync(join(wh.dir, 'raw')).mode & 0o777).toBe(0o700);
    for (const e of entries) {
      const st = statSync(e);
      expect(st.mode & 0o777, e).toBe(st.isDirectory() ? 0o700 : 0o600);
    }
  });

  it('lists only finished files, oldest first', async () => {
    await loadRunDetails(wh, [runDetail({ id: 'a' })]);
    await loadRunDetails(wh, [runDetail({ id: 'b' })]);
    const files = await listArchiveFiles(wh.dir, 'runs');
    expect(files).toHaveLength(2);
    expect([...files].sort()).toEqual(files);
    const ids = await wh.all(
      `SELECT id FROM read_parquet([${files.map((f) => `'${f}'`).join(',')}], filename = true) ORDER BY filename`,
    );
    expect(ids).toEqual([{ id: 'a' }, { id: 'b' }]);
    for (const e of ARCHIVE_ENDPOINTS) expect(Array.isArray(await listArchiveFiles(wh.dir, e))).toBe(true);
  });
});

describe('rebuild', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 12,
      size: 220,
      days: 8,
      now: '2026-03-01T00:00:00Z',
      rateLimit: { perKey: null },
    });
  });
  afterAll(() => sim.close());

  async function syncFromSimulator(target: Warehouse, rounds: number): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      for (const t of CATALOG_TABLES)
        await loadCatalogListing(target, t, sim.world.catalogObjects(CATALOG_KIND[t]), {
          complete: true,
          listedAt: sim.clock.now(),
        });
      await loadToolOptions(target, sim.world.toolOptions(), { fetchedAt: sim.clock.now() });
      const details = [...sim.world.truthRunDetails()];
      // Out of order and in overlapping batches, as racing fetches would deliver them.
      await loadRunDetails(target, details.slice(details.length / 2), { fetchedAt: sim.clock.now() });
      await loadRunDetails(target, details.slice(0, details.length / 2 + 10).reverse(), { fetchedAt: sim.clock.now() });
      sim.advance('3d');
    }
  }

  it('re-derives every table from the raw archive alone, to the same rows', async () => {
    await syncFromSimulator(wh, 3);
    await loadRunDetails(wh, [runDetail({ id: 'refused', created_at: 'not a time' })]);
    await loadCatalogListing(wh, 'guidelines', [{ id: 'bad-guideline', title: 7 }], { complete: false });
    const before = await dumpAll(wh);
    expect(before.runs?.length).toBeGreaterThan(200);
    expect(before.guidelines_history?.some((r) => r.includes('true'))).toBe(true);

    const target = join(tmp.dir, 'rebuilt');
    const result = await rebuildInto(wh.dir, target);
    expect(result.runs).toBe(before.runs?.length);
    expect(result.rejected).toBe(2);
    const fresh = await openWarehouse(target, { readOnly: true });
    const after = await dumpAll(fresh);
    for (const table of Object.keys(before)) expect(after[table], table).toEqual(before[table]);
    expect(await count(fresh, `SELECT count(*) FROM _sync_rejected`)).toBe(2);
    await fresh.close();

    // Cut into ranges of a few runs, read by several statements side by side, with the winners of
    // a file scattered among runs later loads replaced: the same rows.
    const cut = join(tmp.dir, 'rebuilt-cut');
    const again = await rebuildInto(wh.dir, cut, { rangeRuns: 7 });
    expect(again.runs).toBe(result.runs);
    expect(again.childRows).toBe(result.childRows);
    const other = await openWarehouse(cut, { readOnly: true });
    const afterCut = await dumpAll(other);
    for (const table of Object.keys(before)) expect(afterCut[table], table).toEqual(before[table]);
    await other.close();
  });

  it('in place, keeps the sync bookkeeping, swaps the file and removes what a stopped rebuild left', async () => {
    await syncFromSimulator(wh, 1);
    await wh.run(`INSERT INTO _sync_state VALUES ('runs.watermark', '"2026-03-01T00:00:00Z"', now())`);
    await wh.run(`INSERT INTO _sync_audit (id, kind, started_at, counts) VALUES ('a1', 'sync', now(), '{"runs": 3}')`);
    await wh.run(`INSERT INTO _sync_open_runs (run_id, reason) VALUES ('r-open', 'running')`);
    // A refusal from outside the archive (a list page, say) is kept; the archive's own are re-derived.
    await wh.run(`INSERT INTO _sync_rejected VALUES ('runs-list', NULL, now(), 'page 3: bad cursor', '{}')`);
    const bookkeeping = async (db: Warehouse) => ({
      audit: await db.all(`SELECT id, counts::VARCHAR AS c FROM _sync_audit`),
      open: await db.all(`SELECT run_id, reason FROM _sync_open_runs`),
      rejected: await db.all(`SELECT endpoint, reason FROM _sync_rejected ORDER BY ALL`),
    });
    const kept = await bookkeeping(wh);
    const before = await dumpAll(wh);
    await wh.run(`DELETE FROM run_steps`); // damage the tables: only the archive knows them now
    await wh.close();
    // What earlier rebuilds left: one stopped outright (its process gone), one of a live process.
    const gone = spawnSync('true').pid as number;
    const stopped = join(tmp.dir, 'w', `.rebuild-${gone}-deadbeef`);
    const live = `.rebuild-${process.ppid}-0badc0de`;
    mkdirSync(stopped);
    writeFileSync(join(stopped, 'runsync.duckdb'), 'a fresh file, half written');
    mkdirSync(join(tmp.dir, 'w', live));
    await rebuildInPlace(join(tmp.dir, 'w'));
    wh = await openWarehouse(join(tmp.dir, 'w'));
    expect(await dumpAll(wh)).toEqual(before);
    expect(await wh.all(`SELECT value::VARCHAR AS v FROM _sync_state WHERE key = 'runs.watermark'`)).toEqual([
      { v: '"2026-03-01T00:00:00Z"' },
    ]);
    expect(await bookkeeping(wh)).toEqual(kept);
    expect(kept.rejected).toContainEqual({ endpoint: 'runs-list', reason: 'page 3: bad cursor' });
    expect(readdirSync(wh.dir).filter((f) => f.startsWith('.rebuild'))).toEqual([live]);
  });
});
