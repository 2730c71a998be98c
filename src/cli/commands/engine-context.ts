import { configuredLogger, loadConfig, prepareWarehouseDir, type RunsyncConfig } from '../../config/index.ts';
import { createEngine, type Engine, type EngineOptions, type SyncDeps } from '../../sync/index.ts';
import { logProgress, ProgressTracker } from '../../sync/progress.ts';
import type { Logger } from '../../util/logger.ts';
import { type LockWait, waitForPassLock } from '../../warehouse/pass-lock.ts';
import type { CliContext } from '../context.ts';
import { TerminalProgress } from '../progress-bar.ts';

// What the commands that talk to the API share: the configuration read once (a bad setting stops
// here, exit 2), a logger that never writes the key, an engine closed when the command ends, and
// progress for long work: a bar on a terminal, a line in the logs every RUNSYNC_PROGRESS_EVERY.

export interface EngineRun {
  config: RunsyncConfig;
  logger: Logger;
  engine: Engine;
  /** The engine's dependencies counting into a tracker shown while `fn` runs. */
  withProgress<T>(what: string, fn: (deps: SyncDeps, tracker: ProgressTracker) => Promise<T>): Promise<T>;
}

export async function withEngine<T>(
  ctx: CliContext,
  fn: (run: EngineRun) => Promise<T>,
  options: Partial<EngineOptions> & { lockAs?: string } = {},
): Promise<T> {
  const { lockAs = 'sync', ...engineOptions } = options;
  const config = loadConfig(ctx.env);
  prepareWarehouseDir(config.warehouseDir, config.share);
  // One pass at a time on a warehouse: another one running, this command waits its turn.
  const lock = await waitForPassLock(config.warehouseDir, lockAs, lockWait(ctx));
  try {
    return await withLockedEngine(ctx, config, fn, engineOptions);
  } finally {
    lock.release();
  }
}

async function withLockedEngine<T>(
  ctx: CliContext,
  config: RunsyncConfig,
  fn: (run: EngineRun) => Promise<T>,
  options: Partial<EngineOptions>,
): Promise<T> {
  const terminal = terminalFor(ctx);
  const logger = configuredLogger(config, {
    pretty: ctx.isTty,
    ...(terminal ? { destination: terminal.logSink, leaveOut: terminal.leaveOut } : {}),
  });
  const engine = createEngine(config, { logger, signal: ctx.signal, ...options });
  const withProgress: EngineRun['withProgress'] = async (what, run) => {
    const tracker = new ProgressTracker(what);
    // On a terminal the bar shows what the progress lines would say; they would only push it around.
    const stopBar = terminal?.show(tracker);
    const stopLog = stopBar ? () => undefined : logProgress(tracker, logger, config.progressEveryMs);
    try {
      return await run(tracker.track(engine.deps), tracker);
    } finally {
      stopBar?.();
      stopLog();
    }
  };
  try {
    return await fn({ config, logger, engine, withProgress });
  } finally {
    await engine.close();
  }
}

/** A progress bar when a person watches: stdout and stderr both a terminal. */
export function terminalFor(ctx: CliContext): TerminalProgress | null {
  return ctx.isTty && process.stderr.isTTY ? new TerminalProgress(process.stderr) : null;
}

/** How a command waits for the warehouse's pass lock: saying so once, stopped by a signal. */
export function lockWait(ctx: CliContext): LockWait {
  return {
    signal: ctx.signal,
    onHeld: (e) => ctx.err(`runsync: ${e.message}; this one waits for it to finish`),
  };
}
