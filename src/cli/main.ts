import { pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError, type CliContext } from './cli-context.ts';
import { exportCommand } from './commands/export.ts';
import { notBuilt } from './commands/not-built.ts';
import { rebuildCommand } from './commands/rebuild.ts';
import { simulateCommand } from './commands/simulate.ts';

function listFilters(c: Command): void {
  c.option('--status <value...>', 'run status (repeatable)')
    .option('--agent-id <uuid...>', 'agent id (repeatable)')
    .option('--ticket-id <id...>', 'ticket id (repeatable)')
    .option('--source <value...>', 'run source (repeatable)')
    .option('--resolution-type <value...>', 'resolution type (repeatable)')
    .option('--tool-name <name...>', 'recorded tool name (repeatable)')
    .option('--search <text>', 'text search over ticket title, ticket id and agent name');
}

export function buildProgram(ctx: CliContext, setExit: (code: number) => void): Command {
  const program = new Command('runsync')
    .description('Keeps a DuckDB + Parquet warehouse in step with the Export API of an AI support-agent platform.')
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (s) => ctx.out(s.trimEnd()), writeErr: (s) => ctx.err(s.trimEnd()) });
  const add = (cmd: Command) => program.addCommand(cmd);

  add(notBuilt('demo', 'start the bundled simulator, sync it into ./warehouse, print what landed', () => {}, ctx, setExit));
  add(notBuilt('sync', 'one incremental pass: catalog snapshot, runs window, open-run refresh, Parquet export',
    (c) => c.option('--reconcile', 're-check every run inside the open-run horizon'), ctx, setExit));
  add(notBuilt('backfill', 'replay a created-at range without moving the live watermark', (c) => {
    c.requiredOption('--from <date-time>', 'start of the range (inclusive)')
      .requiredOption('--to <date-time>', 'end of the range (exclusive)')
      .option('--force', 're-fetch details even when unchanged')
      .option('--enqueue', 'enqueue the slices on the worker queue instead of running them here');
    listFilters(c);
  }, ctx, setExit));
  add(notBuilt('snapshot', 'catalog snapshot only', () => {}, ctx, setExit));
  add(exportCommand(ctx, setExit));
  add(rebuildCommand(ctx, setExit));
  add(notBuilt('worker', 'long-running BullMQ workers plus the job schedulers (needs REDIS_URL)',
    (c) => c.option('--dashboard <port>', 'serve a queue dashboard and /metrics'), ctx, setExit));
  add(notBuilt('status', 'freshness, watermarks, row counts, last errors, queue depths', () => {}, ctx, setExit));
  add(simulateCommand(ctx, setExit));
  return program;
}

export async function main(argv: string[], partial: Partial<CliContext> = {}): Promise<number> {
  const controller = new AbortController();
  const ctx: CliContext = {
    out: (l) => process.stdout.write(`${l}\n`),
    err: (l) => process.stderr.write(`${l}\n`),
    env: process.env,
    signal: controller.signal,
    isTty: Boolean(process.stdout.isTTY),
    ...partial,
  };
  const onSignal = () => controller.abort();
  if (!partial.signal) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  let code = EXIT_OK;
  const program = buildProgram(ctx, (c) => {
    code = c;
  });
  program.exitOverride();
  for (const c of program.commands) c.exitOverride();
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT_USAGE;
    }
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.help' || e.code === 'commander.version') return EXIT_OK;
      return EXIT_USAGE;
    }
    if (e instanceof UsageError || e instanceof InvalidArgumentError) {
      ctx.err(`runsync: ${e.message}`);
      return EXIT_USAGE;
    }
    ctx.err(`runsync: ${(e as Error).message}`);
    return EXIT_FAILED;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
