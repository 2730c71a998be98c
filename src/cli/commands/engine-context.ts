import { configuredLogger, loadConfig, type RunsyncConfig } from '../../config/index.ts';
import { createEngine, type Engine, type EngineOptions } from '../../sync/index.ts';
import type { Logger } from '../../util/logger.ts';
import type { CliContext } from '../cli-context.ts';

// What the commands that talk to the API share: the configuration read once (a bad setting stops
// here, exit 2), a logger that never writes the key, and an engine closed when the command ends.

export interface EngineRun {
  config: RunsyncConfig;
  logger: Logger;
  engine: Engine;
}

export async function withEngine<T>(ctx: CliContext, fn: (run: EngineRun) => Promise<T>, options: Partial<EngineOptions> = {}): Promise<T> {
  const config = loadConfig(ctx.env);
  const logger = configuredLogger(config, { pretty: ctx.isTty });
  const engine = createEngine(config, { logger, signal: ctx.signal, ...options });
  try {
    return await fn({ config, logger, engine });
  } finally {
    await engine.close();
  }
}
