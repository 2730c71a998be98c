import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { ROOT, runCli } from '../support/cli.ts';
import { eventually, perWorkerTest, spawnWorker, stopWorker, workerEnv } from '../worker/kit.ts';

// Python readers of the warehouse, as docs/python.md shows them (docs/examples/read_parquet.py,
// run as it is): the Parquet tree with pyarrow, created_date typed as a date, and with polars, and
// analytics.duckdb with Python's DuckDB, read while a worker writes, and at the end finding the
// same runs, values and counts as runsync.duckdb. .ci/run makes the virtual environment; anywhere
// else without it the test says why it does not run, and in CI it fails instead.

const PYTHON = join(ROOT, '.venv', 'bin', 'python');
const EXAMPLE = join(ROOT, 'docs', 'examples', 'read_parquet.py');
const CHECK = join(ROOT, 'test', 'python', 'read_check.py');
const inCi = process.env.CI === 'true';
const missing = existsSync(PYTHON)
  ? spawnSync(PYTHON, ['-c', 'import duckdb, polars, pyarrow, pandas'], { encoding: 'utf8' }).stderr.trim() || null
  : `${PYTHON} is not there`;
const why =
  missing && !inCi
    ? ` (skipped: ${missing}; python3 -m venv .venv && .venv/bin/pip install duckdb pyarrow polars pandas)`
    : '';
if (why) console.log(`test/python/readers.test.ts${why}`);

interface Seen {
  pyarrow: { created_date_type: string; runs: [string, string, number][] };
  polars: { created_date_type: string; steps_per_day: Record<string, number> };
  duckdb: { created_date_type: string | null; runs_per_day: Record<string, number> };
}

function read(dir: string): Seen {
  const r = spawnSync(PYTHON, [CHECK, EXAMPLE, dir], { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Seen;
}

describe(`Python readers${why}`, () => {
  const each = perWorkerTest();

  it('the Python environment is there in CI', () => {
    if (inCi) expect(missing, 'CI must make .venv with duckdb, pyarrow, polars and pandas (.ci/run)').toBeNull();
  });

  it('docs/python.md shows the examples the test runs, verbatim', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'python.md'), 'utf8');
    expect(doc).toContain(readFileSync(EXAMPLE, 'utf8').trimEnd());
  });

  it.skipIf(Boolean(why))(
    'pyarrow, polars and DuckDB read while a worker writes, and find what runsync.duckdb holds',
    {
      timeout: 240_000,
    },
    async () => {
      const sim = await each.sim({
        seed: 88,
        size: 500,
        days: 6,
        now: systemMicros() - MICROS_PER_HOUR,
        rateLimit: { perKey: { limit: 60, windowSeconds: 1 } },
      });
      const dir = each.dir();
      const env = { ...workerEnv(sim, dir, each.prefix()), LOG_LEVEL: 'info' };
      const w = spawnWorker(env);
      each.workers.push(w);
      // Readers at any moment once the first export is there: each read whole, dates typed as dates.
      await eventually(
        async () => existsSync(join(dir, 'analytics.duckdb')),
        150_000,
        () => w.output().slice(-2000),
      );
      let during = 0;
      for (const until = Date.now() + 15_000; Date.now() < until || during < 3; during++) {
        expect(w.child.exitCode, w.output().slice(-2000)).toBeNull();
        const seen = read(dir);
        expect(seen.pyarrow.created_date_type).toBe('date32[day]');
        expect(seen.polars.created_date_type).toBe('Date');
        expect(seen.duckdb.created_date_type).toBe('date');
        expect(seen.pyarrow.runs.length).toBeGreaterThan(0);
      }
      expect(during).toBeGreaterThanOrEqual(3);
      expect((await stopWorker(w)).code).toBe(0);
      // The tree in step with the tables, then the same runs, values and counts.
      const exported = await runCli(['export'], env);
      expect(exported.code, exported.stderr).toBe(0);
      const seen = read(dir);
      const wh = await openWarehouse(dir, { readOnly: true });
      try {
        const runs = await wh.all<{ id: string; d: string; u: bigint }>(
          `SELECT id, CAST(created_date AS VARCHAR) AS d, epoch_us(updated_at) AS u FROM runs ORDER BY id`,
        );
        expect(seen.pyarrow.runs).toEqual(runs.map((r) => [r.id, r.d, Number(r.u)]));
        const perDay = (rows: { d: string; n: bigint }[]) => Object.fromEntries(rows.map((r) => [r.d, Number(r.n)]));
        const steps = await wh.all<{ d: string; n: bigint }>(
          `SELECT CAST(r.created_date AS VARCHAR) AS d, count(*) AS n
           FROM run_steps s JOIN runs r ON r.id = s.run_id GROUP BY 1`,
        );
        expect(seen.polars.steps_per_day).toEqual(perDay(steps));
        const days = await wh.all<{ d: string; n: bigint }>(
          'SELECT CAST(created_date AS VARCHAR) AS d, count(*) AS n FROM runs GROUP BY 1',
        );
        expect(seen.duckdb.runs_per_day).toEqual(perDay(days));
        expect(runs.length).toBeGreaterThan(400);
      } finally {
        await wh.close();
      }
    },
  );
});
