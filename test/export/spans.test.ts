import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exportParquet } from '../../src/export/parquet.ts';
import { chooseSpan, spanFile, spanStartOf } from '../../src/export/spans.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { clone, simWorld, tempDir } from '../warehouse/wh-kit.ts';

// A busy day's partition is split into files by spans of created time, so an export after a short
// pass rewrites the files of the runs that changed, not the day; a reader listing the files still
// sees every run once.

const world = simWorld(53, 400, 4);
const details = [...world.truthRunDetails()];
let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;

beforeEach(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'));
  await loadRunDetails(wh, details);
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

function files(table: string): string[] {
  const dir = join(wh.dir, 'parquet', table);
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.parquet'))
    .sort();
}

/** What a reader listing the tree sees: every row of the table's files, by hive partitioning. */
async function listed(table: string, key: string): Promise<{ rows: number; keys: number }> {
  const glob = join(wh.dir, 'parquet', table, '*', '*.parquet');
  const [r] = await wh.all<{ rows: bigint; keys: bigint }>(
    `SELECT count(*) AS rows, count(DISTINCT ${key}) AS keys FROM read_parquet('${glob}', hive_partitioning = true)`,
  );
  return { rows: Number(r?.rows), keys: Number(r?.keys) };
}

describe('spans of created time', () => {
  it('choose the widest span whose files hold at most the runs asked, and name files by the first minute', () => {
    expect(chooseSpan(50, 2000)).toBe(1440);
    expect(chooseSpan(100_000, 2000)).toBe(15);
    expect(chooseSpan(10_000_000, 2000)).toBe(5);
    expect(spanFile(1440, 0)).toBe('data.parquet');
    expect(spanFile(15, 13 * 60 + 45)).toBe('part-1345.parquet');
    expect(spanStartOf('part-1345.parquet')).toBe(825);
    expect(spanStartOf('data.parquet')).toBe(0);
    expect(spanStartOf('notes.txt')).toBeNull();
  });

  it('split a busy day into files a reader sees every run once in; rewrite only the changed run’s files', async () => {
    await exportParquet(wh, { runsPerFile: 10 });
    const before = files('runs');
    expect(before.length).toBeGreaterThan(8);
    expect(before.every((f) => /^created_date=\d{4}-\d{2}-\d{2}\/part-\d{4}\.parquet$/.test(f))).toBe(true);
    const [stored] = await wh.all<{ n: bigint; steps: bigint }>(
      `SELECT (SELECT count(*) FROM runs) AS n, (SELECT count(*) FROM run_steps) AS steps`,
    );
    expect(await listed('runs', 'id')).toEqual({ rows: Number(stored?.n), keys: Number(stored?.n) });
    expect((await listed('run_steps', 'run_id')).rows).toBe(Number(stored?.steps));

    const mtimes = new Map(before.map((f) => [f, statSync(join(wh.dir, 'parquet', 'runs', f)).mtimeMs]));
    const changed = clone(details[details.length - 1]) as Record<string, unknown>;
    changed.updated_at = '2099-01-01T00:00:00.000000Z';
    changed.status = 'failed';
    await loadRunDetails(wh, [changed as never]);
    const r = await exportParquet(wh, { runsPerFile: 10 });

    const [home] = await wh.all<{ d: string; m: bigint }>(
      `SELECT CAST(created_date AS VARCHAR) AS d,
              (epoch(created_at)::BIGINT - epoch(created_date)::BIGINT) // 60 AS m
       FROM runs WHERE id = '${changed.id as string}'`,
    );
    const prefix = `${join('parquet', 'runs')}/`;
    const runsFiles = r.written.filter((f) => f.startsWith(prefix));
    expect(runsFiles).toHaveLength(1);
    const file = (runsFiles[0] as string).slice(prefix.length);
    expect(file).toMatch(new RegExp(`^created_date=${home?.d}/part-\\d{4}\\.parquet$`));
    const start = spanStartOf(file.split('/')[1] as string) as number;
    expect(Number(home?.m)).toBeGreaterThanOrEqual(start);
    // Every run table wrote at most that one file; the other files of the tree are untouched.
    expect(r.written.every((f) => f.endsWith(file))).toBe(true);
    for (const f of before) {
      if (f !== file) expect(statSync(join(wh.dir, 'parquet', 'runs', f)).mtimeMs).toBe(mtimes.get(f));
    }
    expect(await listed('runs', 'id')).toEqual({ rows: Number(stored?.n), keys: Number(stored?.n) });
    const [seen] = await wh.all<{ s: string }>(
      `SELECT status AS s FROM read_parquet('${join(wh.dir, 'parquet', 'runs', '*', '*.parquet')}')
       WHERE id = '${changed.id as string}'`,
    );
    expect(seen?.s).toBe('failed');

    // --full keeps each partition's span, so the names a reader knows stay.
    await exportParquet(wh, { full: true, runsPerFile: 1000 });
    expect(files('runs')).toEqual(before);
  });

  it('keep a partition written whole before as one file', async () => {
    await exportParquet(wh);
    const whole = files('runs');
    expect(whole.every((f) => f.endsWith('/data.parquet'))).toBe(true);
    await wh.run(`DELETE FROM _sync_export_layout`);
    await exportParquet(wh, { full: true, runsPerFile: 10 });
    expect(files('runs')).toEqual(whole);
  });
});
