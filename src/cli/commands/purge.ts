import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import { Redis } from 'ioredis';
import { loadConfig } from '../../config/index.ts';
import { workerSettings } from '../../worker/config.ts';
import { countKeys, inventory, inventoryLines, removePrefix } from '../../worker/purge.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK, UsageError } from '../context.ts';

// `runsync purge`: removes a deployment's queues, job schedulers and rate budget from Redis (every
// key under RUNSYNC_QUEUE_PREFIX, and no other), after listing them. It asks first; without a
// terminal to ask on, it removes nothing unless --yes says so. It refuses while workers are
// connected: they would go on with the jobs and put the schedules back.

export interface PurgeIo {
  /** Whether a person can be asked (stdin and stdout a terminal). */
  canAsk: boolean;
  ask(question: string): Promise<string>;
}

const terminal = (): PurgeIo => ({
  canAsk: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  async ask(question) {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  },
});

/** host:port/db of a Redis URL, without its password. */
function where(url: string): string {
  const u = new URL(url);
  return `redis://${u.host}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
}

export function purgeCommand(ctx: CliContext, setExit: (code: number) => void, io: PurgeIo = terminal()): Command {
  return new Command('purge')
    .description("remove this deployment's queues, job schedulers and rate budget from Redis (asks first)")
    .option('--yes', 'remove them without asking (for scripts)')
    .action(async (o: { yes?: boolean }) => {
      const config = loadConfig(ctx.env, { needApi: false });
      if (config.redisUrl === null) throw new UsageError('purge needs REDIS_URL, the Redis the workers use');
      const { prefix } = workerSettings(ctx.env, config.warehouseDir);
      const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 5_000, lazyConnect: true });
      try {
        await redis.connect();
        const inv = (await countKeys(redis, prefix)) === 0 ? null : await inventory(redis, prefix);
        if (inv === null || inv.keys === 0) {
          ctx.out(`runsync purge: nothing under the prefix "${prefix}" in ${where(config.redisUrl)}`);
          setExit(EXIT_OK);
          return;
        }
        for (const l of inventoryLines(inv, where(config.redisUrl))) ctx.out(l);
        if (inv.workers !== null && inv.workers > 0) {
          ctx.err(`runsync: ${inv.workers} worker(s) are connected to these queues; stop them first, then purge`);
          setExit(EXIT_FAILED);
          return;
        }
        if (!o.yes) {
          if (!io.canAsk)
            throw new UsageError('purge removes nothing without asking, and there is no terminal to ask on: add --yes');
          const answer = (await io.ask(`Remove these ${inv.keys} key(s)? [y/N] `)).trim().toLowerCase();
          if (answer !== 'y' && answer !== 'yes') {
            ctx.out('nothing removed');
            setExit(EXIT_OK);
            return;
          }
        }
        const removed = await removePrefix(redis, prefix);
        const left = await countKeys(redis, prefix);
        ctx.out(`removed ${removed} key(s); ${left === 0 ? 'none' : left} left under the prefix "${prefix}"`);
        setExit(left === 0 ? EXIT_OK : EXIT_FAILED);
      } finally {
        redis.disconnect();
      }
    });
}
