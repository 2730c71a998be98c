import { Command, InvalidArgumentError } from 'commander';
import type { FaultConfig } from '../../simulator/faults.ts';
import { RATE_MODELS, startSimulator } from '../../simulator/index.ts';
import { parseDuration } from '../../util/timestamp.ts';
import { type CliContext, EXIT_OK } from '../context.ts';
import { endpointLimits, nonNegative, type RateFlags, rateLimitConfig, rateModel } from './simulate-rate.ts';

const FAULT_NAMES: Record<string, keyof FaultConfig> = {
  '5xx': 'serverErrorRate',
  '429': 'burst429Rate',
  reset: 'resetRate',
  latency: 'latencyRate',
  malformed: 'malformedRate',
  truncated: 'truncatedRate',
  hang: 'hangRate',
  stall: 'stallRate',
  spurious429: 'spurious429Rate',
};

export function parseFaults(text: string): Partial<FaultConfig> {
  const out: Partial<Record<keyof FaultConfig, number>> = {};
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = part.split('=');
    const key = FAULT_NAMES[name ?? ''];
    const rate = Number(value);
    if (!key || value === undefined || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      const names = Object.keys(FAULT_NAMES).join(', ');
      throw new InvalidArgumentError(
        `expected name=rate pairs with names ${names} and rates from 0 to 1; got "${part}"`,
      );
    }
    out[key] = rate;
  }
  return out as Partial<FaultConfig>;
}

function int(min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return n;
  };
}

function share(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a share from 0 to 1');
  return n;
}

/** A duration with an optional sign, in microseconds. */
function signedDuration(v: string): number {
  const negative = v.trim().startsWith('-');
  const us = parseDuration(v.trim().replace(/^[-+]/, ''));
  if (us === null) throw new InvalidArgumentError('expected a duration such as 20m or -20m');
  return negative ? -us : us;
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number');
  return n;
}

export function simulateCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('simulate')
    .description('run the Export API simulator alone (synthetic data, rate limits, faults)')
    .option('--port <n>', 'port to listen on (0: any free port)', int(0), 8080)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--seed <n>', 'data seed: the same seed and size give the same data', int(0), 42)
    .option('--size <n>', 'runs created during the --days before the clock starts', int(0), 10_000)
    .option('--days <n>', 'days of history', positive, 30)
    .option('--now <date-time>', "the clock's start (default: now for a wall clock, the current hour for a manual one)")
    .option(
      '--clock-offset <duration>',
      "a wall clock's distance from this machine's, e.g. 20m or -20m: its Date and X-RateLimit-Reset headers follow it",
      signedDuration,
    )
    .option('--clock <mode>', 'wall (follows real time) or manual (moves only through /_sim/clock)', 'wall')
    .option('--speed <x>', 'wall clock: simulated seconds per real second', positive, 1)
    .option('--key <key>', 'accept this API key (svc_live_…); default: a new key, printed once')
    .option('--rate-limit <n>', 'requests per window per key (0: no limit)', int(0), 50)
    .option('--rate-window <seconds>', 'rate-limit window in seconds', int(1), 1)
    .option('--rate-model <model>', `limiter algorithm: ${RATE_MODELS.join(', ')}`, rateModel, 'fixed')
    .option('--rate-burst <n>', 'bucket models: capacity (X-RateLimit-Limit); default --rate-limit', int(1))
    .option('--rate-org <n>', 'requests per window for the whole organization (0: no such bucket)', int(0), 0)
    .option('--rate-endpoint <list>', 'buckets of single endpoints, e.g. runs.get=10,runs.list=5', endpointLimits)
    .option('--rate-neighbour <n>', 'requests per second another consumer takes from the organization', nonNegative, 0)
    .option(
      '--rate-neighbour-burst <n>',
      "mean size of the neighbour's bursts, which arrive at random (0: evenly paced)",
      nonNegative,
      0,
    )
    .option('--rate-neighbour-seed <n>', "seed of the neighbour's bursts", int(0), 1)
    .option(
      '--faults <list>',
      'fault rates, e.g. 5xx=0.05,429=0.01,reset=0.01,latency=0.1,malformed=0.01,truncated=0.01, hang=0.01 (never answered), stall=0.005 (a body that stops half-way, the connection left open), spurious429=0.03 (a gateway shedding load: 429 with Retry-After 1-2 s, unrelated to the rate)',
      parseFaults,
    )
    .option('--spurious-429-figures', "spurious 429s carry X-RateLimit-* of the key's bucket as it stands")
    .option('--fault-seed <n>', 'seed of the fault generator', int(0), 1)
    .option('--cursor-ttl <seconds>', 'cursors older than this are refused', int(1), 3600)
    .option('--post-settle <share>', 'share of settled runs that change once more later (0 to 1)', share, 0.05)
    .option(
      '--hostile <share>',
      'share of runs with hostile payloads: NUL, lone surrogates, emoji, right-to-left text, 10 KB titles, tool input and output of every JSON type, thousands of messages (0 to 1)',
      share,
      0,
    )
    .option('--no-admin', 'do not serve the /_sim control endpoints')
    .action(
      async (
        o: RateFlags & {
          port: number;
          host: string;
          seed: number;
          size: number;
          days: number;
          now?: string;
          clockOffset?: number;
          clock: string;
          speed: number;
          key?: string;
          faults?: Partial<FaultConfig>;
          faultSeed: number;
          spurious429Figures?: boolean;
          cursorTtl: number;
          admin: boolean;
          postSettle: number;
          hostile: number;
        },
      ) => {
        if (o.clock !== 'wall' && o.clock !== 'manual')
          throw new InvalidArgumentError('--clock must be wall or manual');
        const sim = await startSimulator({
          port: o.port,
          host: o.host,
          seed: o.seed,
          size: o.size,
          days: o.days,
          // A wall clock starts at the real time (or --clock-offset from it: an API whose clock
          // differs from this machine's); a manual clock starts at the hour, for repeatable data.
          ...(o.now ? { now: o.now } : o.clock === 'wall' ? { now: Date.now() * 1000 + (o.clockOffset ?? 0) } : {}),
          clock: o.clock,
          speed: o.speed,
          keys: [o.key ? { key: o.key } : {}],
          rateLimit: rateLimitConfig(o),
          faults: { ...o.faults, seed: o.faultSeed, spurious429Figures: o.spurious429Figures === true },
          cursorTtlMs: o.cursorTtl * 1000,
          runs: { postSettleFraction: o.postSettle, hostileFraction: o.hostile },
          admin: o.admin,
        });
        ctx.out(
          `simulator listening on ${sim.url} (seed ${o.seed}, ${o.size} runs over ${o.days} days, ${o.clock} clock)`,
        );
        ctx.out(`export RUNSYNC_API_URL=${sim.url}`);
        if (!o.key) ctx.out(`export RUNSYNC_API_KEY=${sim.key}   # shown once; pass --key to choose it`);
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        await sim.close();
        setExit(EXIT_OK);
      },
    );
}
