import { pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError } from '../config/index.ts';
import { unknownSettingWarnings } from '../config/unknown-settings.ts';
import { limitHeapGrowth } from '../util/heap-growth.ts';
import { DEFAULT_GRACE_MS, shutdownGraceMs } from '../worker/config.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from './context.ts';
import { allSettingsHelp, COMMAND_SETTINGS, envHelp, packageVersion } from './env-help.ts';
import { handleStopSignals, type StopHandling } from './stop-signals.ts';

type CommandOf = (ctx: CliContext, setExit: (code: number) => void) => Command;

// Each command's module is loaded only when that command runs (or the whole list is asked for):
// the modules behind the queue, the dashboard, S3 and the API client take longer to load on a
// busy machine than `status` or `report` take to answer.
const COMMANDS: ReadonlyArray<readonly [string, () => Promise<CommandOf>]> = [
  ['demo', async () => (await import('./commands/demo.ts')).demoCommand],
  ['sync', async () => (await import('./commands/sync.ts')).syncCommand],
  ['backfill', async () => (await import('./commands/backfill.ts')).backfillCommand],
  ['verify', async () => (await import('./commands/verify.ts')).verifyCommand],
  ['snapshot', async () => (await import('./commands/sync.ts')).snapshotCommand],
  ['export', async () => (await import('./commands/export.ts')).exportCommand],
  ['rebuild', async () => (await import('./commands/rebuild.ts')).rebuildCommand],
  ['worker', async () => (await import('./commands/worker.ts')).workerCommand],
  ['status', async () => (await import('./commands/status.ts')).statusCommand],
  ['simulate', async () => (await import('./commands/simulate.ts')).simulateCommand],
  ['query', async () => (await import('./commands/query.ts')).queryCommand],
  ['report', async () => (await import('./commands/report.ts')).reportCommand],
  ['compact', async () => (await import('./commands/compact.ts')).compactCommand],
  ['purge', async () => (await import('./commands/purge.ts')).purgeCommand],
  ['pii', async () => (await import('./commands/pii.ts')).piiCommand],
  ['quarantine', async () => (await import('./commands/quarantine.ts')).quarantineCommand],
];

/** The program with every command, or with only `only` when it names one. */
export async function buildProgram(ctx: CliContext, setExit: (code: number) => void, only?: string): Promise<Command> {
  const program = new Command('runsync')
    .description('Keeps a DuckDB + Parquet warehouse in step with the Export API of an AI support-agent platform.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (s) => ctx.out(s.trimEnd()), writeErr: (s) => ctx.err(s.trimEnd()) });
  const add = (cmd: Command) => {
    const settings = COMMAND_SETTINGS[cmd.name()];
    if (settings?.length) cmd.addHelpText('after', envHelp(settings));
    // addCommand, unlike command(), does not pass the output settings on.
    cmd.configureOutput(program.configureOutput());
    program.addCommand(cmd);
  };
  const chosen = COMMANDS.filter(([name]) => name === only);
  const factories = await Promise.all((chosen.length ? chosen : COMMANDS).map(([, load]) => load()));
  for (const make of factories) add(make(ctx, setExit));
  program.addHelpText('after', allSettingsHelp());
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
  // The warehouse, the raw archive, Parquet files, staged details and reports hold an
  // organization's conversations: everything runsync creates is for its owner alone, but for the
  // Parquet tree, analytics.duckdb and the report, which RUNSYNC_SHARE_GROUP may open to a group.
  process.umask(0o077);
  for (const line of unknownSettingWarnings(ctx.env)) ctx.err(line);
  if (!partial.out) {
    limitHeapGrowth();
    // Output piped into `head` and the like: a closed pipe ends the command quietly.
    process.stdout.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    });
  }
  let stops: StopHandling | null = null;
  if (!partial.signal) {
    stops = handleStopSignals({
      controller,
      graceMs: graceOf(ctx.env),
      env: ctx.env,
      notice: ctx.err,
      exit: (c) => process.exit(c),
      lateExitCode: EXIT_FAILED,
    });
  }
  let code = EXIT_OK;
  const program = await buildProgram(
    ctx,
    (c) => {
      code = c;
    },
    argv[0],
  );
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
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.help' || e.code === 'commander.version')
        return EXIT_OK;
      return EXIT_USAGE;
    }
    if (e instanceof UsageError || e instanceof InvalidArgumentError || e instanceof ConfigError) {
      ctx.err(`runsync: ${e.message}`);
      return EXIT_USAGE;
    }
    ctx.err(`runsync: ${(e as Error).message}`);
    return EXIT_FAILED;
  } finally {
    stops?.dispose();
    // Stopped on a signal: what the command had open is closed; whatever else still holds the
    // event loop (a socket to an unreachable Redis, a timer in a library) must not keep it alive.
    if (stops?.requested) setTimeout(() => process.exit(), 200).unref();
  }
}

/** RUNSYNC_SHUTDOWN_GRACE, or its default when it is unreadable (the command itself says so). */
function graceOf(env: NodeJS.ProcessEnv): number {
  try {
    return shutdownGraceMs(env);
  } catch {
    return DEFAULT_GRACE_MS;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
