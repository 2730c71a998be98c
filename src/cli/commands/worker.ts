import { Command } from 'commander';
import { JOBS } from '../../../jobs/index.ts';
import { configuredLogger, ensureWritableDir, loadConfig, prepareWarehouseDir } from '../../config/index.ts';
import { workerSettings } from '../../worker/config.ts';
import { startWorker, WorkerStartAbortedError } from '../../worker/main.ts';
import { type CliContext, EXIT_OK, UsageError } from '../context.ts';
import { checkBucket } from './store-check.ts';

// `runsync worker`: runs until SIGTERM or SIGINT, then stops within the grace period, finishing
// or handing back what it was doing. Stopped while it starts (Redis unreachable), it gives up at
// once.

export function workerCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('worker')
    .description(
      'long-running BullMQ workers plus the job schedulers (needs REDIS_URL); several may run, on several machines',
    )
    .option('--dashboard <port>', 'serve Bull Board (the queue dashboard) and Prometheus /metrics on this port')
    .option(
      '--dashboard-host <host>',
      'address the dashboard binds to (it can retry and remove jobs: keep it private)',
      '127.0.0.1',
    )
    .action(async (o: { dashboard?: string; dashboardHost: string }) => {
      let dashboard: { port: number; host: string } | undefined;
      if (o.dashboard !== undefined) {
        const port = Number(o.dashboard);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          throw new UsageError(`--dashboard takes a port number; got "${o.dashboard}"`);
        dashboard = { port, host: o.dashboardHost };
      }
      const config = loadConfig(ctx.env);
      const settings = workerSettings(ctx.env, config.warehouseDir);
      prepareWarehouseDir(config.warehouseDir, config.share);
      const stagingSetting = ctx.env.RUNSYNC_STAGING_DIR?.trim() ? 'RUNSYNC_STAGING_DIR' : 'RUNSYNC_STAGING_URL';
      if (settings.staging.kind === 'folder') ensureWritableDir(settings.staging.dir, stagingSetting);
      await checkBucket(settings.staging, config.storage.s3, stagingSetting);
      await checkBucket(config.storage.parquet, config.storage.s3, 'RUNSYNC_PARQUET_URL');
      const logger = configuredLogger(config, { pretty: ctx.isTty });
      let worker: Awaited<ReturnType<typeof startWorker>>;
      try {
        worker = await startWorker({
          config,
          jobs: JOBS,
          settings,
          logger,
          signal: ctx.signal,
          ...(dashboard ? { dashboard } : {}),
        });
      } catch (e) {
        if (!(e instanceof WorkerStartAbortedError)) throw e;
        ctx.out('worker stopped before it had started');
        setExit(EXIT_OK);
        return;
      }
      ctx.out(`worker running (queues under "${settings.prefix}" in Redis); stop it with Ctrl-C or SIGTERM`);
      if (worker.dashboardUrl) ctx.out(`dashboard ${worker.dashboardUrl}/  metrics ${worker.dashboardUrl}/metrics`);
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await worker.close();
      ctx.out('worker stopped');
      setExit(EXIT_OK);
    });
}
