import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { memoryBudgetOf } from '../../config/index.ts';
import {
  cellForJson,
  cellForTable,
  cellText,
  csvField,
  QueryError,
  type QueryStream,
  streamQuery,
} from '../../report/query-stream.ts';
import { NoAnalyticsFileError, openReadSource, type ReadSource } from '../../report/read-source.ts';
import { ANALYTICS_FILE, DB_FILE, WarehouseLockedError } from '../../warehouse/index.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK, UsageError } from '../context.ts';
import { formatTable } from '../table-format.ts';
import { unreadable, warehouseDirFrom } from './warehouse-dir.ts';

// `runsync query "SQL"`: for people without a DuckDB client. Read-only: runsync.duckdb opened
// read-only (refused while a writer holds it, with analytics.duckdb suggested), or with
// --analytics the views over the Parquet tree, readable at any time. Prints an aligned table,
// CSV or JSON; a SQL error exits 1 with DuckDB's message.

type Format = 'table' | 'csv' | 'json';

interface QueryOptions {
  format: Format;
  analytics?: boolean;
  maxRows: number;
  maxWidth: number;
  wait: number;
}

const count = (what: string) => (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${what} must be a whole number`);
  return Number(v);
};

export function queryCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('query')
    .description('run SQL against the warehouse (read-only) and print the result')
    .argument('<sql>', 'the SQL; - reads it from stdin')
    .addOption(new Option('--format <format>', 'table, csv or json').choices(['table', 'csv', 'json']).default('table'))
    .option(
      '--analytics',
      'read analytics.duckdb (views over the Parquet tree, never locked) instead of runsync.duckdb',
    )
    .option('--max-rows <n>', 'table format: rows to print at most (0: all)', count('--max-rows'), 1000)
    .option('--max-width <n>', 'table format: characters per cell at most (0: no limit)', count('--max-width'), 60)
    .option('--wait <seconds>', 'how long to wait while a writer holds runsync.duckdb', count('--wait'), 5)
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  runsync query "SELECT * FROM v_runs_daily_resolution"',
        '  runsync query --format csv "SELECT * FROM v_tool_stats" > tools.csv',
        '  runsync query --analytics "SELECT count(*) FROM runs"   # while a worker writes',
      ].join('\n'),
    )
    .action(async (sqlArg: string, o: QueryOptions) => {
      const sql = sqlArg === '-' ? readFileSync(0, 'utf8') : sqlArg;
      if (!sql.trim()) throw new UsageError('the SQL is empty');
      const dir = warehouseDirFrom(ctx.env);
      const problem = o.analytics
        ? unreadable(join(dir, ANALYTICS_FILE), (f) => `runsync: ${new NoAnalyticsFileError(f).message}`)
        : unreadable(join(dir, DB_FILE));
      if (problem !== null) {
        ctx.err(problem);
        setExit(EXIT_FAILED);
        return;
      }
      let source: ReadSource;
      try {
        const budget = memoryBudgetOf(ctx.env);
        source = await openReadSource(dir, o.analytics ? 'analytics' : 'warehouse', {
          lockWaitMs: o.wait * 1000,
          budget,
        });
      } catch (e) {
        if (!(e instanceof WarehouseLockedError)) throw e;
        ctx.err(`runsync: ${e.message} (runsync query --analytics "…")`);
        setExit(EXIT_FAILED);
        return;
      }
      try {
        const stream = await streamQuery(source.connection, sql);
        if (o.format === 'csv') await printCsv(ctx, stream);
        else if (o.format === 'json') await printJson(ctx, stream);
        else await printTable(ctx, stream, o);
        setExit(EXIT_OK);
      } catch (e) {
        if (!(e instanceof QueryError)) throw e;
        ctx.err(`runsync: ${e.message}`);
        setExit(EXIT_FAILED);
      } finally {
        await source.close();
      }
    });
}

async function printTable(ctx: CliContext, s: QueryStream, o: QueryOptions): Promise<void> {
  const rows: Record<string, unknown>[] = [];
  let more = false;
  for await (const chunk of s.chunks) {
    for (const row of chunk.rows) {
      if (o.maxRows > 0 && rows.length === o.maxRows) {
        more = true;
        break;
      }
      rows.push(
        Object.fromEntries(
          s.columns.map((c, i) => [c, cellForTable(row[i] ?? null, s.kinds[i] ?? 'text', o.maxWidth)]),
        ),
      );
    }
    if (more) break;
  }
  for (const line of formatTable(rows, s.columns)) ctx.out(line);
  if (more)
    ctx.err(`(the first ${o.maxRows} rows; --max-rows 0 prints all, --format csv or json gives every row in full)`);
}

async function printCsv(ctx: CliContext, s: QueryStream): Promise<void> {
  if (s.columns.length) ctx.out(s.columns.map(csvField).join(','));
  for await (const chunk of s.chunks)
    for (const row of chunk.rows) ctx.out(row.map((v, i) => csvField(cellText(v, s.kinds[i]))).join(','));
}

async function printJson(ctx: CliContext, s: QueryStream): Promise<void> {
  // An array with one object per line: valid JSON, printed as the rows arrive, read line by line.
  let held: string | null = null;
  ctx.out('[');
  for await (const chunk of s.chunks) {
    const nested = s.kinds.includes('nested') ? chunk.json() : null;
    chunk.rows.forEach((row, r) => {
      if (held !== null) ctx.out(`${held},`);
      held = JSON.stringify(
        Object.fromEntries(
          s.columns.map((c, i) => [c, cellForJson(row[i] ?? null, s.kinds[i] ?? 'text', nested?.[r]?.[i] ?? null)]),
        ),
      );
    });
  }
  if (held !== null) ctx.out(held);
  ctx.out(']');
}
