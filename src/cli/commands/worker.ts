import { Command } from 'commander';
import { configuredLogger, loadConfig } from '../../config/index.ts';
import { workerSettings } from '../../worker/worker-config.ts';
import { startWorker } from '../../worker/worker-main.ts';
import { EXIT_OK, UsageError, type CliContext } from '../cli-context.ts';

// `runsync worker`: runs until SIGTERM or SIGINT, then stops within the grace period, finishing
// or handing back what it was doing.

export function workerCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('worker')
    .description('long-running BullMQ workers plus the job schedulers (needs REDIS_URL); several may run, on several machines')
    .option('--dashboard <port>', 'serve a queue dashboard and /metrics on this port')
    .action(async (o: { dashboard?: string }) => {
      if (o.dashboard !== undefined) throw new UsageError('--dashboard is not built yet; run the worker without it');
      const config = loadConfig(ctx.env);
      const settings = workerSettings(ctx.env, config.warehouseDir);
      const logger = configuredLogger(config, { pretty: ctx.isTty });
      const worker = await startWorker({ config, settings, logger });
      ctx.out(`worker running (queues under "${settings.prefix}" in Redis); stop it with Ctrl-C or SIGTERM`);
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await worker.close();
      ctx.out('worker stopped');
      setExit(EXIT_OK);
    });
}
