import { Command } from 'commander';
import { WATERMARK_KEY } from '../../sync/state-keys.ts';
import { checkVerify, runVerify, type VerifyDiff, VerifyError, type VerifyResult } from '../../sync/verify.ts';
import { formatTimestamp, MICROS_PER_DAY, type Micros, parseTimestamp } from '../../util/timestamp.ts';
import { dayFloor } from '../../warehouse/completeness.ts';
import { getState } from '../../warehouse/sync-state.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK, UsageError } from '../context.ts';
import { type EngineRun, withEngine } from './engine-context.ts';

// `runsync verify [--from DATE] [--to DATE] [--dry-run]`: lists whole UTC days again by their
// summaries, says what the warehouse lacks or holds stale, and (unless --dry-run) fetches exactly
// that and records the days in the completeness ledger. Without a range: every day from the
// oldest stored run to the last one the live window finished.

interface VerifyFlags {
  from?: string;
  to?: string;
  dryRun?: boolean;
}

/** A UTC date, YYYY-MM-DD, as the start of its day. */
export function dayOf(flag: string, text: string): Micros {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(text) ? parseTimestamp(`${text}T00:00:00Z`) : null;
  if (t === null || formatTimestamp(t).slice(0, 10) !== text)
    throw new UsageError(`${flag} must be a date such as 2026-01-31 (a UTC day); got "${text}"`);
  return t;
}

const dateText = (t: Micros) => formatTimestamp(t).slice(0, 10);

/** The range asked for, or by default what the warehouse holds up to the watermark's day. */
async function rangeOf(run: EngineRun, o: VerifyFlags): Promise<{ from: Micros; to: Micros } | null> {
  const asked = {
    from: o.from === undefined ? null : dayOf('--from', o.from),
    to: o.to === undefined ? null : dayOf('--to', o.to),
  };
  const deps = run.engine.deps;
  const today = dayFloor(deps.now());
  const known = await deps.gate.use(async (wh) => {
    const [r] = await wh.all<{ c: bigint | null }>(`SELECT min(epoch_us(created_at)) AS c FROM runs`);
    const watermark = (await getState<number>(wh, WATERMARK_KEY)) ?? null;
    return { oldest: r?.c == null ? null : dayFloor(Number(r.c)), watermark };
  });
  const from = asked.from ?? known.oldest;
  const to = asked.to ?? (known.watermark === null ? null : Math.min(today, dayFloor(known.watermark)));
  if (from === null || to === null) return null;
  if (to > today)
    throw new UsageError(`--to must be ${dateText(today)} or earlier: a day not yet over cannot be listed whole`);
  try {
    checkVerify({ from, to });
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(`${e.message} (from ${dateText(from)}, to ${dateText(to)})`);
    throw e;
  }
  return { from, to };
}

function ids(list: readonly string[], n: number): string {
  return `${list.join(', ')}${n > list.length ? `, … (${n - list.length} more)` : ''}`;
}

function diffLines(d: VerifyDiff): string[] {
  const lines = [`  listed ${d.listed} run(s): ${d.missing} missing, ${d.stale} stale, ${d.unlisted} not listed`];
  if (d.missing) lines.push(`  missing in the warehouse: ${ids(d.examples.missing, d.missing)}`);
  if (d.stale) lines.push(`  stale (an older updated_at than listed): ${ids(d.examples.stale, d.stale)}`);
  if (d.unlisted) lines.push(`  in the warehouse but not listed: ${ids(d.examples.unlisted, d.unlisted)}`);
  return lines;
}

function report(ctx: CliContext, r: VerifyResult): void {
  const days = (r.spec.to - r.spec.from) / MICROS_PER_DAY;
  const span = `${dateText(r.spec.from)} → ${dateText(r.spec.to)} (${days} day${days === 1 ? '' : 's'}, to excluded)`;
  ctx.out(`verify ${span}: ${r.status} in ${(r.durationMs / 1000).toFixed(1)} s${r.spec.dryRun ? ' (dry run)' : ''}`);
  if (r.diff) for (const l of diffLines(r.diff)) ctx.out(l);
  if (r.spec.dryRun) ctx.out('  dry run: nothing fetched, nothing written');
  else ctx.out(`  ${r.runs.fetched} detail(s) loaded; ${r.days} day(s) recorded in the completeness ledger`);
  if (r.diff?.unlisted && !r.spec.dryRun)
    ctx.out('  runs not listed are kept: the API may have deleted them, or they may have moved out of the range');
  const { requests, rateLimited, retries } = r.requests;
  ctx.out(`  requests ${requests} (${rateLimited} answered 429, ${retries} retried)`);
}

export function verifyCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('verify')
    .description('list whole days again by their summaries and fetch what the warehouse lacks or holds stale')
    .option('--from <date>', 'first UTC day (default: the oldest stored run)')
    .option('--to <date>', "the day after the last one, excluded (default: the live window's last finished day)")
    .option('--dry-run', 'only say what differs: fetch nothing, write nothing (exit 1 when something differs)')
    .addHelpText(
      'after',
      ['', 'Examples:', '  runsync verify --dry-run', '  runsync verify --from 2026-11-01 --to 2026-11-08'].join('\n'),
    )
    .action(async (o: VerifyFlags) => {
      if (o.from !== undefined) dayOf('--from', o.from);
      if (o.to !== undefined) dayOf('--to', o.to);
      await withEngine(
        ctx,
        async (run) => {
          const range = await rangeOf(run, o);
          if (range === null) {
            ctx.out('verify: nothing to verify yet (no runs stored, no window finished); give --from and --to');
            setExit(EXIT_OK);
            return;
          }
          try {
            const r = await run.withProgress('verify', (deps) =>
              runVerify(deps, { ...range, dryRun: o.dryRun === true }),
            );
            report(ctx, r);
            const differs = r.diff !== null && r.diff.missing + r.diff.stale + r.diff.unlisted > 0;
            setExit(r.status !== 'ok' || (r.spec.dryRun && differs) ? EXIT_FAILED : EXIT_OK);
          } catch (e) {
            if (!(e instanceof VerifyError)) throw e;
            ctx.err(`runsync: verify stopped: ${e.message}`);
            setExit(EXIT_FAILED);
          }
        },
        { lockAs: 'verify' },
      );
    });
}
