import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import { FilterError, type RunListFilter } from '../../api/index.ts';
import { loadConfig } from '../../config/index.ts';
import { BackfillError, type BackfillSpec, checkBackfill, runBackfill } from '../../sync/backfill.ts';
import { formatTimestamp, type Micros, parseDuration, parseTimestamp } from '../../util/timestamp.ts';
import { backfillProgress, enqueueBackfill } from '../../worker/backfill-flow.ts';
import { openQueueClient } from '../../worker/client.ts';
import { workerSettings } from '../../worker/config.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK, UsageError } from '../context.ts';
import { withEngine } from './engine-context.ts';

// `runsync backfill --from T --to T [filters] [--force]`: replays a created-time range in this
// process, resumable by running the same command again, with a progress bar on a terminal and
// progress lines in the logs.

interface BackfillFlags {
  from: string;
  to: string;
  force?: boolean;
  slice: string;
  enqueue?: boolean;
  wait?: boolean;
  status?: string[];
  agentId?: string[];
  ticketId?: string[];
  source?: string[];
  resolutionType?: string[];
  toolName?: string[];
  search?: string;
  duration?: string[];
  metadata?: string[];
}

function when(flag: string, text: string): Micros {
  const t = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (t === null)
    throw new UsageError(`${flag} must be an ISO date-time such as 2026-01-01T00:00:00Z, or a date; got "${text}"`);
  return t;
}

const DURATION = /^(eq|gt|gte|lt|lte)=(\d+)$/;

export function backfillSpec(o: BackfillFlags): BackfillSpec {
  const filter: RunListFilter = {};
  if (o.status) filter.status = o.status;
  if (o.agentId) filter.agentId = o.agentId;
  if (o.ticketId) filter.ticketId = o.ticketId;
  if (o.source) filter.source = o.source;
  if (o.resolutionType) filter.resolutionType = o.resolutionType;
  if (o.toolName) filter.toolName = o.toolName;
  if (o.search !== undefined) filter.search = o.search;
  if (o.duration) {
    const d: NonNullable<RunListFilter['duration']> = {};
    for (const x of o.duration) {
      const m = DURATION.exec(x);
      if (!m) throw new UsageError(`--duration takes op=seconds with op eq, gt, gte, lt or lte; got "${x}"`);
      d[m[1] as keyof typeof d] = Number(m[2]);
    }
    filter.duration = d;
  }
  if (o.metadata) {
    const meta: Record<string, string> = {};
    for (const x of o.metadata) {
      const i = x.indexOf('=');
      if (i <= 0) throw new UsageError(`--metadata takes key=value; got "${x}"`);
      meta[x.slice(0, i)] = x.slice(i + 1);
    }
    filter.metadata = meta;
  }
  const slice = parseDuration(o.slice);
  if (slice === null || slice <= 0)
    throw new UsageError(`--slice must be a duration such as 1d or 6h; got "${o.slice}"`);
  const spec: BackfillSpec = {
    from: when('--from', o.from),
    to: when('--to', o.to),
    filter,
    force: o.force === true,
    sliceMicros: slice,
  };
  try {
    checkBackfill(spec);
  } catch (e) {
    if (e instanceof FilterError || e instanceof RangeError) throw new UsageError(e.message);
    throw e;
  }
  return spec;
}

export function backfillCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  const c = new Command('backfill')
    .description('replay a created-at range without moving the live watermark (the same command resumes it)')
    .requiredOption('--from <date-time>', 'start of the range (inclusive)')
    .requiredOption('--to <date-time>', 'end of the range (exclusive)')
    .option('--force', 're-fetch details even when unchanged')
    .option('--slice <duration>', 'length of one slice of the range', '1d')
    .option('--enqueue', 'enqueue the slices on the worker queue instead of running them here (needs REDIS_URL)')
    .option('--wait', 'with --enqueue: wait for the workers to finish it, with a progress bar')
    .option('--status <value...>', 'run status (repeatable)')
    .option('--agent-id <uuid...>', 'agent id (repeatable)')
    .option('--ticket-id <id...>', 'ticket id (repeatable)')
    .option('--source <value...>', 'run source (repeatable)')
    .option('--resolution-type <value...>', 'resolution type (repeatable)')
    .option('--tool-name <name...>', 'recorded tool name (repeatable)')
    .option('--search <text>', 'text search over ticket title, ticket id and agent name')
    .option('--duration <op=seconds...>', 'duration filter, e.g. gte=60 (ops eq, gt, gte, lt, lte)')
    .option('--metadata <key=value...>', 'metadata filter (repeatable)');
  return c.action(async (o: BackfillFlags) => {
    const spec = backfillSpec(o);
    if (o.enqueue) {
      await enqueue(ctx, spec, o.wait === true);
      setExit(EXIT_OK);
      return;
    }
    await withEngine(
      ctx,
      async ({ withProgress }) => {
        try {
          const r = await withProgress('backfill', (deps, tracker) =>
            runBackfill(deps, spec, { onProgress: (state, n) => tracker.setSlices(state.position.slice, n) }),
          );
          const range = `${formatTimestamp(spec.from)} → ${formatTimestamp(spec.to)}`;
          const took = `${(r.durationMs / 1000).toFixed(1)} s`;
          ctx.out(`backfill ${r.key} ${range}: ${r.status}${r.resumed ? ' (resumed)' : ''} in ${took}`);
          const { listed, changed, unchanged, fetched } = r.runs;
          ctx.out(
            `  ${r.slices} slice(s): listed ${listed}, ${r.runs.new} new, ${changed} changed, ${unchanged} unchanged; ` +
              `${fetched} details loaded`,
          );
          const { requests, rateLimited, retries } = r.requests;
          const dates = r.export?.dates.length ?? 0;
          ctx.out(
            `  requests ${requests} (${rateLimited} answered 429, ${retries} retried); ` +
              `${dates} Parquet partition(s) rewritten`,
          );
          setExit(EXIT_OK);
        } catch (e) {
          if (!(e instanceof BackfillError)) throw e;
          const b = e.backfill;
          const kept = `${b.runs.fetched} details loaded before it stopped; the same command resumes it`;
          if (b.status === 'interrupted') ctx.err(`runsync: stopped; backfill ${b.key} keeps its place: ${kept}`);
          else ctx.err(`runsync: backfill ${b.key} stopped: ${e.message}\n  ${kept}`);
          setExit(EXIT_FAILED);
        }
      },
      { lockAs: 'backfill' },
    );
  });
}

async function enqueue(ctx: CliContext, spec: BackfillSpec, wait: boolean): Promise<void> {
  const config = loadConfig(ctx.env);
  if (config.redisUrl === null) throw new UsageError("backfill --enqueue needs REDIS_URL (the workers' Redis)");
  const settings = workerSettings(ctx.env, config.warehouseDir);
  const client = openQueueClient(config.redisUrl, settings.prefix);
  try {
    const q = await enqueueBackfill({ write: client.write, flows: client.flows }, spec);
    const span = `${formatTimestamp(spec.from)} → ${formatTimestamp(spec.to)}`;
    ctx.out(
      q.existing
        ? `backfill ${q.key} is already queued (${q.slices} slices); nothing added`
        : `queued backfill ${q.key}: ${q.slices} slice(s) of ${span}; \`runsync status\` shows its progress`,
    );
    if (!wait) return;
    const bar = ctx.isTty
      ? new SingleBar({ format: 'backfill [{bar}] {value}/{total} slices', hideCursor: true })
      : null;
    for (;;) {
      const p = await backfillProgress(client.write, q.key);
      if (!p) throw new Error(`backfill ${q.key} is no longer in the queue`);
      if (bar) {
        if (!bar.isActive) bar.start(p.total, 0);
        bar.update(p.done);
      }
      if (p.state === 'completed') {
        bar?.stop();
        ctx.out(`backfill ${q.key} finished: ${JSON.stringify(p.result)}`);
        return;
      }
      if (p.state === 'failed') {
        bar?.stop();
        throw new Error(`backfill ${q.key} failed: ${p.failedReason ?? 'a slice failed'}`);
      }
      if (ctx.signal.aborted) {
        bar?.stop();
        ctx.out(`stopped waiting; backfill ${q.key} goes on in the workers`);
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await client.close();
  }
}
