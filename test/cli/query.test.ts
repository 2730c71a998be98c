import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { formatTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { runCli } from '../support/cli.ts';
import { type ViewsFixture, viewsFixture } from '../views/fixture.ts';
import { holdInAnotherProcess, releaseHolder } from '../warehouse/wh-kit.ts';

// `runsync query` on the shared synced warehouse: the aligned table, CSV and JSON carry what
// DuckDB holds (exact integers, timestamps to the microsecond, JSON as JSON); it never writes;
// SQL errors exit 1 with DuckDB's message and usage errors 2; a held warehouse is named in one
// line that points to analytics.duckdb, which --analytics reads meanwhile.

interface Ran {
  code: number;
  out: string[];
  err: string[];
}

describe('runsync query', () => {
  let fixture: ViewsFixture;
  let env: Record<string, string>;

  /** The CLI in this process (fast); the exit code as main() returns it. */
  async function query(...args: string[]): Promise<Ran> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['query', ...args], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env,
      signal: new AbortController().signal,
      isTty: false,
    });
    return { code, out, err };
  }

  async function direct<T = Record<string, unknown>>(sql: string): Promise<T[]> {
    const wh = await openWarehouse(fixture.dir, { readOnly: true });
    try {
      return await wh.all<T>(sql);
    } finally {
      await wh.close();
    }
  }

  beforeAll(async () => {
    fixture = await viewsFixture();
    env = { RUNSYNC_WAREHOUSE_DIR: fixture.dir };
  }, 180_000);

  it('prints an aligned table: a header, a rule, one line per row, numbers right-aligned', async () => {
    const r = await query(
      'SELECT agent_name, runs, deflection_rate FROM v_resolution_by_agent ORDER BY runs DESC, agent_name',
    );
    expect(r.code, r.err.join('\n')).toBe(0);
    const want = await direct<{ agent_name: string; runs: bigint; deflection_rate: number }>(
      'SELECT agent_name, runs, deflection_rate FROM v_resolution_by_agent ORDER BY runs DESC, agent_name',
    );
    const [header, rule, ...lines] = r.out;
    expect(header?.split(/\s+/).filter(Boolean)).toEqual(['agent_name', 'runs', 'deflection_rate']);
    expect(rule).toMatch(/^-+ {2}-+ {2}-+$/);
    expect(lines.length).toBe(want.length);
    const runsEnd = (rule as string).lastIndexOf('  ');
    lines.forEach((l, i) => {
      const w = want[i] as (typeof want)[number];
      expect(l.startsWith(w.agent_name)).toBe(true);
      // Right-aligned: the count ends where its column's rule ends.
      expect(l.slice(0, runsEnd).trimEnd().endsWith(` ${w.runs}`)).toBe(true);
      expect(Number(l.slice(runsEnd).trim())).toBeCloseTo(w.deflection_rate, 3);
    });
  });

  it("--format csv gives every row with DuckDB's values: exact, to the microsecond, quoted where needed", async () => {
    const sql = `SELECT id, epoch_us(updated_at) AS us, CAST(updated_at AS VARCHAR) AS text_ts, updated_at, ticket_title
                 FROM runs ORDER BY id`;
    const r = await query('--format', 'csv', sql);
    expect(r.code, r.err.join('\n')).toBe(0);
    const want = await direct<{ id: string; us: bigint; text_ts: string; ticket_title: string | null }>(sql);
    const rows = parseCsv(r.out.join('\n'));
    expect(rows[0]).toEqual(['id', 'us', 'text_ts', 'updated_at', 'ticket_title']);
    expect(rows.length - 1).toBe(want.length);
    rows.slice(1).forEach((row, i) => {
      const w = want[i] as (typeof want)[number];
      expect(row[0]).toBe(w.id);
      expect(row[1]).toBe(String(w.us));
      // ISO 8601 in UTC, as status --json writes it: six digits of fraction, or none for a whole second.
      expect(row[3]).toBe(formatTimestamp(Number(w.us)));
      expect(Date.parse(row[3] as string)).toBe(Date.parse(w.text_ts.replace(' ', 'T').replace(/\+00$/, 'Z')));
      // To the microsecond: the digits after the second are the epoch's.
      const fraction = /\.(\d+)Z$/.exec(row[3] as string)?.[1] ?? '';
      expect(Number(fraction.padEnd(6, '0'))).toBe(Number(w.us % 1_000_000n));
      expect(row[4]).toBe(w.ticket_title ?? '');
    });
    // Fields with a comma, a quote, a line break, and a NULL.
    const odd = await query('--format', 'csv', `SELECT 'a,b' AS x, 'say "hi"' AS y, E'two\\nlines' AS z, NULL AS n`);
    expect(parseCsv(odd.out.join('\n'))).toEqual([
      ['x', 'y', 'z', 'n'],
      ['a,b', 'say "hi"', 'two\nlines', ''],
    ]);
  });

  it('--format json: numbers, parsed JSON columns, lists, and integers too large for JavaScript as text', async () => {
    const r = await query(
      '--format',
      'json',
      `SELECT run_id, agent_tool_ids, agent_model_config, agent_resolution_tracking,
              9007199254740993::BIGINT AS big, 1.25::DECIMAL(5,2) AS dec
       FROM v_run_agent_config ORDER BY run_id LIMIT 3`,
    );
    expect(r.code, r.err.join('\n')).toBe(0);
    const rows = JSON.parse(r.out.join('\n')) as Record<string, unknown>[];
    const want = await direct<{ run_id: string; tools: string; config: string }>(
      `SELECT run_id, to_json(agent_tool_ids)::VARCHAR AS tools, agent_model_config::VARCHAR AS config
       FROM v_run_agent_config ORDER BY run_id LIMIT 3`,
    );
    expect(rows.map((x) => x.run_id)).toEqual(want.map((w) => w.run_id));
    rows.forEach((row, i) => {
      expect(row.agent_tool_ids).toEqual(JSON.parse((want[i] as (typeof want)[number]).tools));
      expect(row.agent_model_config).toEqual(JSON.parse((want[i] as (typeof want)[number]).config));
      expect(typeof row.agent_resolution_tracking).toBe('boolean');
      expect(row.big).toBe('9007199254740993');
      expect(row.dec).toBe(1.25);
    });
    const counts = await query('--format', 'json', 'SELECT count(*) AS n FROM runs');
    expect(JSON.parse(counts.out.join('\n'))).toEqual([
      { n: Number((await direct<{ n: bigint }>('SELECT count(*) AS n FROM runs'))[0]?.n) },
    ]);
    const none = await query('--format', 'json', 'SELECT 1 AS x WHERE false');
    expect(JSON.parse(none.out.join('\n'))).toEqual([]);
  });

  it('timestamps for scripts are ISO 8601 in UTC with their fraction: JSON and CSV alike', async () => {
    const sql = `SELECT TIMESTAMPTZ '2026-11-01 23:48:27.870867+01' AS tz, TIMESTAMPTZ '2026-11-02 00:00:00+00' AS whole,
                        TIMESTAMP '2026-11-01 22:48:27.5' AS naive, '2026-11-01 22:48:27.870867+00' AS text`;
    const json = await query('--format', 'json', sql);
    expect(json.code, json.err.join('\n')).toBe(0);
    expect(JSON.parse(json.out.join('\n'))).toEqual([
      {
        tz: '2026-11-01T22:48:27.870867Z',
        whole: '2026-11-02T00:00:00Z',
        naive: '2026-11-01T22:48:27.500000',
        text: '2026-11-01 22:48:27.870867+00',
      },
    ]);
    const csv = await query('--format', 'csv', sql);
    expect(csv.out[1]).toBe(
      '2026-11-01T22:48:27.870867Z,2026-11-02T00:00:00Z,2026-11-01T22:48:27.500000,2026-11-01 22:48:27.870867+00',
    );
    // As runsync.duckdb holds them: the same instant as DuckDB's own epoch, in every row.
    const runs = await query('--format', 'json', 'SELECT updated_at, epoch_us(updated_at) AS us FROM runs LIMIT 50');
    for (const r of JSON.parse(runs.out.join('\n')) as { updated_at: string; us: number }[]) {
      expect(r.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$/);
      expect(Date.parse(r.updated_at) * 1000 + (r.us % 1000)).toBe(r.us);
    }
  });

  it('--analytics reads analytics.duckdb and answers the same; SQL read from stdin with -', async () => {
    const sql =
      'SELECT CAST(day AS VARCHAR) AS day, runs, deflected, escalated FROM v_runs_daily_resolution ORDER BY day';
    const [a, w] = await Promise.all([query('--analytics', '--format', 'csv', sql), query('--format', 'csv', sql)]);
    expect(a.code).toBe(0);
    expect(a.out).toEqual(w.out);
    expect(a.out.length).toBeGreaterThan(10);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url)),
        'query',
        '--format',
        'csv',
        '-',
      ],
      {
        env: { ...process.env, ...env },
        stdio: 'pipe',
      },
    );
    child.stdin.end('SELECT 41 + 1 AS answer;\n');
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(0);
    expect(out).toBe('answer\n42\n');
  });

  it("is read-only, exits 1 with DuckDB's message on a SQL error and 2 on a usage error", async () => {
    const write = await query('CREATE TABLE scratch AS SELECT 1 AS x');
    expect(write.code).toBe(1);
    expect(write.err.join('\n')).toMatch(/read-only/i);
    expect(await direct(`SELECT table_name FROM duckdb_tables() WHERE table_name = 'scratch'`)).toEqual([]);

    const typo = await query('SELEC 1');
    expect(typo.code).toBe(1);
    expect(typo.err[0]).toMatch(/^runsync: Parser Error: syntax error at or near "SELEC"/);
    const missing = await query('SELECT * FROM no_such_table');
    expect(missing.code).toBe(1);
    expect(missing.err.join('\n')).toMatch(/Catalog Error: Table with name no_such_table does not exist/);
    const divide = await query(`SELECT CAST('x' AS INTEGER)`);
    expect(divide.code).toBe(1);
    expect(divide.err.join('\n')).toMatch(/Conversion Error/);

    expect((await query()).code).toBe(2);
    expect((await query('--format', 'xml', 'SELECT 1')).code).toBe(2);
    expect((await query('--max-rows', 'many', 'SELECT 1')).code).toBe(2);
    expect((await query('  ')).code).toBe(2);
  });

  it('--max-rows cuts a long table and says so; long cells are shortened, CSV keeps them whole', async () => {
    const r = await query('--max-rows', '5', 'SELECT id, instructions FROM agents_history ORDER BY id, valid_from');
    expect(r.code).toBe(0);
    expect(r.out.length).toBe(2 + 5);
    expect(r.err.join('\n')).toMatch(/first 5 rows/);
    expect(r.out.slice(2).every((l) => l.endsWith('…'))).toBe(true);
    const full = await query(
      '--format',
      'csv',
      'SELECT instructions FROM agents_history ORDER BY id, valid_from LIMIT 1',
    );
    const [w] = await direct<{ instructions: string }>(
      'SELECT instructions FROM agents_history ORDER BY id, valid_from LIMIT 1',
    );
    expect(parseCsv(full.out.join('\n'))[1]?.[0]).toBe(w?.instructions);
  });

  describe('beside a process that holds the warehouse', () => {
    let dir: string;
    let holder: ChildProcessWithoutNullStreams;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'runsync-query-'));
      copyFileSync(join(fixture.dir, 'runsync.duckdb'), join(dir, 'runsync.duckdb'));
      // Its views still read the fixture's Parquet tree, by absolute path.
      copyFileSync(join(fixture.dir, 'analytics.duckdb'), join(dir, 'analytics.duckdb'));
      holder = await holdInAnotherProcess(dir);
    });
    afterAll(async () => {
      await releaseHolder(holder);
      rmSync(dir, { recursive: true, force: true });
    });

    it('says in one line who holds it and points to analytics.duckdb, which --analytics reads meanwhile', async () => {
      const e = { RUNSYNC_WAREHOUSE_DIR: dir };
      const [locked, analytics] = await Promise.all([
        runCli(['query', '--wait', '0', 'SELECT count(*) FROM runs'], e),
        runCli(['query', '--analytics', '--format', 'csv', 'SELECT count(*) AS n FROM runs'], e),
      ]);
      expect(locked.code).toBe(1);
      const lines = locked.stderr.trim().split('\n');
      expect(lines.length, locked.stderr).toBe(1);
      expect(lines[0]).toContain(`in use by process ${holder.pid}`);
      expect(lines[0]).toContain('analytics.duckdb');
      expect(lines[0]).toContain('--analytics');
      expect(analytics.code, analytics.stderr).toBe(0);
      const [n] = await direct<{ n: bigint }>('SELECT count(*) AS n FROM runs');
      expect(analytics.stdout).toBe(`n\n${n?.n}\n`);
    });
  });

  it('says there is no warehouse yet, and no analytics.duckdb yet', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'runsync-query-empty-'));
    try {
      env = { RUNSYNC_WAREHOUSE_DIR: empty };
      const r = await query('SELECT 1');
      expect(r.code).toBe(1);
      expect(r.err.join('\n')).toMatch(/there is no warehouse at .*runsync\.duckdb yet/);
      const a = await query('--analytics', 'SELECT 1');
      expect(a.code).toBe(1);
      expect(a.err.join('\n')).toMatch(/there is no .*analytics\.duckdb yet/);
    } finally {
      env = { RUNSYNC_WAREHOUSE_DIR: fixture.dir };
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

/** RFC 4180 CSV, as a spreadsheet reads it. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
