import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { decompress } from 'fzstd';
import parquet from 'parquetjs-lite';
import { PARQUET_COMPRESSION_METHODS } from 'parquetjs-lite/lib/compression.js';
import { PARQUET_LOGICAL_TYPES } from 'parquetjs-lite/lib/types.js';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { exportParquet } from '../../src/export/parquet.ts';
import { exportTables } from '../../src/export/tables.ts';
import { viewNotes } from '../../src/resources/reference.ts';
import { CATALOG_TABLES, RESOURCES } from '../../src/resources/registry.ts';
import { loadCatalogListing } from '../../src/warehouse/load-catalog.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { loadToolOptions } from '../../src/warehouse/load-tool-options.ts';

const ALL_EXPORT_TABLES = exportTables(RESOURCES);
const RUN_EXPORT_TABLES = ALL_EXPORT_TABLES.filter((t) => t.partitioned);

import { defaultMigrationsDir, VIEWS_FILE } from '../../src/warehouse/migrate.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { sqlRunner } from '../../src/warehouse/sql.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { runDetail } from '../warehouse/run-fixture.ts';
import { CATALOG_KIND, clone, count, dumpAll, simWorld, tempDir } from '../warehouse/wh-kit.ts';

beforeAll(() => {
  // parquetjs-lite reads no ZSTD by itself; the export is ZSTD by contract.
  PARQUET_COMPRESSION_METHODS.ZSTD = {
    deflate: () => {
      throw new Error('not needed');
    },
    inflate: (buf: Buffer) => Buffer.from(decompress(new Uint8Array(buf))),
  };
  // Its own conversion to a Date drops the microseconds (and fails on dictionary-encoded
  // values); the raw microseconds are what we compare.
  const micros = PARQUET_LOGICAL_TYPES.TIMESTAMP_MICROS;
  if (micros) micros.fromPrimitive = (v: unknown) => BigInt(v as number | bigint);
  // It also parses the min/max statistics of JSON columns, which writers truncate for long
  // values: keep the text and parse the values here.
  const json = PARQUET_LOGICAL_TYPES.JSON;
  if (json) json.fromPrimitive = (v: unknown) => (v === null || v === undefined ? v : String(v));
});

let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
let now = 1_772_323_200_000_000;
const world = simWorld(51, 150, 6);
const details = [...world.truthRunDetails()];

beforeEach(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => (now += 1_000_000) });
  for (const t of CATALOG_TABLES)
    await loadCatalogListing(wh, t, world.catalogObjects(CATALOG_KIND[t]), { complete: true });
  await loadToolOptions(wh, world.toolOptions());
  await loadRunDetails(wh, details);
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

function pq(...parts: string[]): string {
  return join(wh.dir, 'parquet', ...parts);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

async function columnList(table: string): Promise<string> {
  const cols = await wh.all<{ name: string }>(
    `SELECT column_name AS name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  return cols.map((c) => `"${c.name}"`).join(', ');
}

function source(table: string, partitioned: boolean): string {
  return partitioned
    ? `read_parquet('${pq(table, '*', '*.parquet')}', hive_partitioning = true)`
    : `read_parquet('${pq(table, 'data.parquet')}')`;
}

/** Rows of the table missing from the files, and rows of the files missing from the table. */
async function differences(table: string, partitioned: boolean): Promise<number> {
  const cols = await columnList(table);
  const files = `SELECT ${cols} FROM ${source(table, partitioned)}`;
  const live = `SELECT ${cols} FROM ${table}`;
  return count(
    wh,
    `SELECT (SELECT count(*) FROM (${live} EXCEPT ALL ${files}))
          + (SELECT count(*) FROM (${files} EXCEPT ALL ${live}))`,
  );
}

async function readWithParquetjs(file: string): Promise<Record<string, unknown>[]> {
  const reader = await parquet.ParquetReader.openFile(file);
  const rows: Record<string, unknown>[] = [];
  const cursor = reader.getCursor();
  for (let r = await cursor.next(); r; r = await cursor.next()) rows.push(r);
  await reader.close();
  return rows;
}

/** A parquetjs-lite value in the shape DuckDB's JSON rendering gives, for comparison. */
function plain(v: unknown, type: string): unknown {
  if (v === undefined || v === null) return null;
  if (type.endsWith('[]')) return ((v as { list?: { element?: unknown }[] }).list ?? []).map((e) => e.element ?? null);
  if (typeof v === 'bigint') return v.toString();
  return v;
}

describe('parquet export', () => {
  it('writes every table in the contract layout, ZSTD; DuckDB reads back exactly the table rows', async () => {
    const r = await exportParquet(wh);
    const dates = (await wh.all<{ d: string }>(`SELECT DISTINCT created_date::VARCHAR AS d FROM runs ORDER BY d`)).map(
      (x) => x.d,
    );
    expect(r.dates).toEqual(dates);
    for (const t of RUN_EXPORT_TABLES) {
      expect(readdirSync(pq(t.name)).sort()).toEqual(
        dates.map((d) => `created_date=${d}`).filter((p) => existsSync(pq(t.name, p))),
      );
      for (const p of readdirSync(pq(t.name))) expect(readdirSync(pq(t.name, p))).toEqual(['data.parquet']);
    }
    expect(readdirSync(pq('runs')).length).toBe(dates.length);
    for (const t of ALL_EXPORT_TABLES) {
      expect(await differences(t.name, t.partitioned), t.name).toBe(0);
      const files = t.partitioned ? pq(t.name, '*', '*.parquet') : pq(t.name, 'data.parquet');
      const codecs = await wh.all<{ c: string }>(`SELECT DISTINCT compression AS c FROM parquet_metadata('${files}')`);
      expect(codecs, t.name).toEqual([{ c: 'ZSTD' }]);
    }
    expect(await count(wh, `SELECT count(*) FROM ${source('runs', true)}`)).toBe(details.length);
    expect(filesUnder(pq()).every((f) => f.endsWith('data.parquet'))).toBe(true);
    expect(readdirSync(pq()).filter((f) => f.startsWith('.'))).toEqual([]);
    // The leftovers of an export killed half way are cleared by the next.
    mkdirSync(pq('.staging-999999-deadbeef'));
    copyFileSync(
      pq('runs', readdirSync(pq('runs'))[0] as string, 'data.parquet'),
      pq('.staging-999999-deadbeef', 'runs-x.parquet'),
    );
    await exportParquet(wh);
    expect(readdirSync(pq()).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('every file is read back the same by parquetjs-lite, a second implementation', async () => {
    // Odd values too: nulls everywhere, empty and null list items, unicode, big and deep JSON.
    let deep: unknown = { leaf: '🙂' };
    for (let i = 0; i < 200; i++) deep = i % 2 ? [deep] : { next: deep };
    await loadRunDetails(wh, [
      runDetail({
        id: 'odd-nulls',
        agent: null,
        category: null,
        resolution: null,
        ticket: { id: '', title: '', url: null },
        trigger: { ticket_tags: [] },
        steps: [],
        conversation: [],
        evaluation_attributes: [],
      }),
      runDetail({
        id: 'odd-値',
        trigger: { ticket_tags: ['vip', null, '', '返品 📦'], message_text: 'line\nbreak \u0000 nul' },
        steps: [
          {
            id: 's',
            order: 1,
            timestamp: '2026-02-11T00:00:00.000001Z',
            type: 'tool_call',
            title: 'Ünïcödé',
            content: 'x'.repeat(200_000),
            status: 'completed',
            duration_seconds: 0,
            tool: {
              name: 'n',
              type: 't',
              input: { big: 12345678901234567891n, deep },
              output: ['a', 1.5, null, false, {}],
              redacted: true,
              truncated: true,
              error: null,
            },
          },
        ],
      }),
    ]);
    await exportParquet(wh);
    let files = 0;
    for (const t of ALL_EXPORT_TABLES) {
      const cols = await wh.all<{ name: string; type: string }>(
        `SELECT column_name AS name, data_type AS type FROM information_schema.columns
         WHERE table_name = $1 AND column_name <> 'created_date' ORDER BY ordinal_position`,
        [t.name],
      );
      const select = cols
        .map((c) => (c.type.startsWith('TIMESTAMP') ? `epoch_us("${c.name}") AS "${c.name}"` : `"${c.name}"`))
        .join(', ');
      const parts = t.partitioned
        ? readdirSync(pq(t.name)).map(
            (p) =>
              [pq(t.name, p, 'data.parquet'), `created_date = '${p.slice('created_date='.length)}'::DATE`] as const,
          )
        : [[pq(t.name, 'data.parquet'), 'true'] as const];
      let rowsRead = 0;
      for (const [file, where] of parts) {
        const expected = (
          await wh.connection.runAndReadAll(`SELECT ${select} FROM ${t.name} WHERE ${where} ORDER BY ${t.orderBy}`)
        ).getRowObjectsJson();
        // Rows are matched by key: a child table's file keeps the order rows were stored in.
        const keys = t.orderBy.split(',').map((k) => k.trim());
        const type = (k: string) => cols.find((c) => c.name === k)?.type ?? '';
        const keyOf = (value: (k: string) => unknown) => JSON.stringify(keys.map(value));
        const byKey = new Map(expected.map((row) => [keyOf((k) => row[k] ?? null), row]));
        const got = await readWithParquetjs(file);
        expect(got.length, file).toBe(expected.length);
        expect(byKey.size, file).toBe(expected.length);
        for (let i = 0; i < got.length; i++) {
          const row = byKey.get(keyOf((k) => plain(got[i]?.[k], type(k))));
          expect(row, `${file} row ${i}`).toBeDefined();
          for (const c of cols) {
            const want = row?.[c.name] ?? null;
            const have = plain(got[i]?.[c.name], c.type);
            if (c.type === 'JSON')
              expect(have === null ? null : JSON.parse(have as string), `${file} ${c.name}`).toEqual(
                want === null ? null : JSON.parse(want as string),
              );
            else expect(have, `${file} ${c.name}`).toEqual(want);
          }
        }
        rowsRead += got.length;
        files++;
      }
      expect(rowsRead, t.name).toBe(await count(wh, `SELECT count(*) FROM ${t.name}`));
    }
    expect(files).toBeGreaterThan(ALL_EXPORT_TABLES.length);
  });

  it('exports under a memory limit below what the export needs, and leaves the limit as it was', async () => {
    const dir = join(tmp.dir, 'small');
    const small = await openWarehouse(dir, { memoryLimit: '16MB' });
    try {
      await loadRunDetails(small, details);
      const before = await small.all<{ m: string }>(`SELECT current_setting('memory_limit') AS m`);
      await exportParquet(small, { full: true });
      expect(await small.all(`SELECT current_setting('memory_limit') AS m`)).toEqual(before);
      const steps = `read_parquet('${join(dir, 'parquet', 'run_steps', '*', '*.parquet')}', hive_partitioning = true)`;
      expect(await count(small, `SELECT count(*) FROM ${steps}`)).toBe(
        await count(small, `SELECT count(*) FROM run_steps`),
      );
    } finally {
      await small.close();
    }
  });

  it('rewrites only the partitions and tables that changed since the last export', async () => {
    await exportParquet(wh);
    const snapshot = () => new Map(filesUnder(pq()).map((f) => [f, statSync(pq(f)).ino]));
    const before = snapshot();
    expect((await exportParquet(wh)).written).toEqual([]);

    const target = details.find((d) => d.created_at && (d.steps as unknown[]).length > 0) as Record<string, unknown>;
    const changed = clone(target);
    changed.updated_at = '2026-03-05T00:00:00.000001Z';
    changed.status = 'cancelled';
    await loadRunDetails(wh, [changed]);
    const guideline = clone(world.catalogObjects('guideline')[0] as Record<string, unknown>);
    guideline.title = 'Edited';
    guideline.updated_at = '2026-03-05T00:00:00Z';
    await loadCatalogListing(wh, 'guidelines', [guideline], { complete: false });

    const r = await exportParquet(wh);
    const day = (
      await wh.all<{ d: string }>(`SELECT created_date::VARCHAR AS d FROM runs WHERE id = $1`, [target.id as string])
    )[0]?.d;
    const part = `created_date=${day}`;
    const expected = [
      ...RUN_EXPORT_TABLES.map((t) => join('parquet', t.name, part, 'data.parquet')).filter((f) =>
        existsSync(join(wh.dir, f)),
      ),
      'parquet/guidelines/data.parquet',
      'parquet/guidelines_history/data.parquet',
    ].sort();
    expect([...r.written].sort()).toEqual(expected);
    const after = snapshot();
    for (const [f, ino] of before) {
      const rewritten = expected.includes(join('parquet', f));
      expect(after.get(f) !== ino, f).toBe(rewritten);
    }
    expect(await differences('runs', true)).toBe(0);
    expect(await differences('guidelines_history', false)).toBe(0);
  });

  it('removes the partition file of a table whose rows for that day are gone', async () => {
    const lone = runDetail({ id: 'lone', created_at: '2025-06-01T00:00:00Z', updated_at: '2025-06-01T00:00:00Z' });
    await loadRunDetails(wh, [lone]);
    await exportParquet(wh);
    expect(existsSync(pq('run_tool_calls', 'created_date=2025-06-01', 'data.parquet'))).toBe(true);
    const noTools = clone(lone);
    noTools.updated_at = '2025-06-02T00:00:00Z';
    noTools.steps = [(lone.steps as unknown[])[0]];
    await loadRunDetails(wh, [noTools]);
    const r = await exportParquet(wh);
    expect(r.removed).toEqual(['parquet/run_tool_calls/created_date=2025-06-01/data.parquet']);
    expect(existsSync(pq('run_tool_calls', 'created_date=2025-06-01'))).toBe(false);
    expect(existsSync(pq('run_steps', 'created_date=2025-06-01', 'data.parquet'))).toBe(true);
  });

  it('--full rewrites everything and drops partitions the tables no longer have', async () => {
    await exportParquet(wh);
    const some = readdirSync(pq('runs'))[0] as string;
    mkdirSync(pq('runs', 'created_date=1999-01-01'));
    copyFileSync(pq('runs', some, 'data.parquet'), pq('runs', 'created_date=1999-01-01', 'data.parquet'));
    const r = await exportParquet(wh, { full: true });
    expect(r.removed).toContain('parquet/runs/created_date=1999-01-01/data.parquet');
    expect(r.tables.length).toBe(ALL_EXPORT_TABLES.length - RUN_EXPORT_TABLES.length);
    expect(await differences('runs', true)).toBe(0);
  });

  it('leaves analytics.duckdb with views of the same names, readable while the warehouse is held', async () => {
    const r = await exportParquet(wh);
    const reader = await DuckDBInstance.create(r.analyticsFile, { access_mode: 'READ_ONLY' });
    const conn = await reader.connect();
    const db = sqlRunner(conn);
    try {
      const views = (
        await db.all<{ v: string }>(`SELECT view_name AS v FROM duckdb_views() WHERE NOT internal ORDER BY 1`)
      ).map((x) => x.v);
      // A view per exported table, under its name, and the ready-made views of views.sql beside them.
      const readyMade = [...viewNotes(readFileSync(join(defaultMigrationsDir(), VIEWS_FILE), 'utf8')).keys()];
      expect(readyMade).toContain('run_transitions');
      expect(views).toEqual([...ALL_EXPORT_TABLES.map((t) => t.name), ...readyMade].sort());
      expect(await db.all(`SELECT count(*) AS n FROM (SELECT table_name FROM duckdb_tables())`)).toEqual([{ n: 0n }]);
      for (const t of ALL_EXPORT_TABLES) {
        expect(await count(db, `SELECT count(*) FROM ${t.name}`), t.name).toBe(
          await count(wh, `SELECT count(*) FROM ${t.name}`),
        );
        const cols = (rows: { name: string }[]) => rows.map((c) => c.name);
        const q = `SELECT column_name AS name FROM information_schema.columns
                   WHERE table_name = '${t.name}' ORDER BY ordinal_position`;
        expect(cols(await db.all(q)), t.name).toEqual(cols(await wh.all(q)));
      }
      expect(
        await db.all(
          `SELECT typeof(updated_at) AS t, typeof(ticket_tags) AS l, typeof(created_date) AS d FROM runs LIMIT 1`,
        ),
      ).toEqual([{ t: 'TIMESTAMP WITH TIME ZONE', l: 'VARCHAR[]', d: 'DATE' }]);
      // An export while a reader holds the old file replaces it without disturbing the reader.
      await loadRunDetails(wh, [runDetail({ id: 'late' })]);
      await exportParquet(wh);
      expect(await count(db, `SELECT count(*) FROM runs WHERE id = 'late'`)).toBe(1);
    } finally {
      conn.closeSync();
      reader.closeSync();
    }
  });

  it('gives empty, typed views for tables with nothing exported yet', async () => {
    const empty = await openWarehouse(join(tmp.dir, 'empty'));
    const r = await exportParquet(empty);
    await empty.close();
    const reader = await DuckDBInstance.create(r.analyticsFile, { access_mode: 'READ_ONLY' });
    const db = sqlRunner(await reader.connect());
    expect(await db.all(`SELECT count(*) AS n FROM run_steps`)).toEqual([{ n: 0n }]);
    expect(
      await db.all(
        `SELECT typeof(tool_input) AS t FROM (SELECT * FROM run_steps UNION ALL
           SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
             '{}'::JSON, NULL, NULL, NULL, NULL, NULL)`,
      ),
    ).toEqual([{ t: 'JSON' }]);
    db.connection.closeSync();
    reader.closeSync();
  });
});

describe('runsync export and rebuild', () => {
  const ctx = (env: Record<string, string>, out: string[], err: string[]) => ({
    out: (l: string) => out.push(l),
    err: (l: string) => err.push(l),
    env: { LOG_LEVEL: 'silent', ...env },
    signal: new AbortController().signal,
    isTty: false,
  });

  it('export writes the tree and says what it did; rebuild re-derives the tables', async () => {
    const dir = wh.dir;
    const runs = await count(wh, `SELECT count(*) FROM runs`);
    const before = await dumpAll(wh);
    await wh.close();
    const out: string[] = [];
    const err: string[] = [];
    expect(await main(['export'], ctx({ RUNSYNC_WAREHOUSE_DIR: dir }, out, err))).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toMatch(
      /^exported \d+ created_date partition\(s\) and 13 table\(s\): \d+ file\(s\) written, 0 removed/,
    );
    expect(existsSync(join(dir, 'parquet', 'runs'))).toBe(true);

    out.length = 0;
    expect(await main(['rebuild'], ctx({ RUNSYNC_WAREHOUSE_DIR: dir }, out, err))).toBe(0);
    expect(out[0]).toMatch(new RegExp(`^rebuilt .*runsync\\.duckdb from \\d+ archive file\\(s\\): ${runs} runs`));
    wh = await openWarehouse(dir);
    expect(await count(wh, `SELECT count(*) FROM runs`)).toBe(runs);
    const after = await dumpAll(wh);
    for (const table of Object.keys(before)) expect(after[table], table).toEqual(before[table]);
    // The Parquet tree was rewritten from the rebuilt tables and matches them.
    expect(out[1]).toMatch(/^rewrote the Parquet tree: \d+ file\(s\)/);
    for (const t of ALL_EXPORT_TABLES) expect(await differences(t.name, t.partitioned), t.name).toBe(0);
  });

  it('rebuild refuses to empty a warehouse whose raw archive is missing', async () => {
    const dir = join(tmp.dir, 'no-archive');
    await (await openWarehouse(dir)).close();
    const out: string[] = [];
    const err: string[] = [];
    expect(await main(['rebuild'], ctx({ RUNSYNC_WAREHOUSE_DIR: dir }, out, err))).toBe(1);
    expect(err).toEqual([
      `runsync: the raw archive ${join(dir, 'raw')} is empty;` +
        ' rebuilding would empty the warehouse, so nothing was done',
    ]);
  });
});
