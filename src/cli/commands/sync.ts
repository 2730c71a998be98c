import { Command } from 'commander';
import { PassError, type PassOptions, runPass } from '../../sync/index.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK } from '../context.ts';
import { withEngine } from './engine-context.ts';
import { passLines } from './pass-report.ts';

// `runsync sync` and `runsync snapshot`: one pass in this process, no Redis. Exit 1 when the pass
// failed or a resource could not be read; everything it committed stays either way.

async function pass(ctx: CliContext, setExit: (code: number) => void, options: PassOptions): Promise<void> {
  await withEngine(
    ctx,
    async ({ withProgress }) => {
      try {
        const r = await withProgress(options.kind ?? 'sync', (deps) => runPass(deps, options));
        for (const l of passLines(r)) ctx.out(l);
        for (const e of r.errors) ctx.err(`runsync: ${e}`);
        setExit(r.status === 'ok' ? EXIT_OK : EXIT_FAILED);
      } catch (e) {
        if (!(e instanceof PassError)) throw e;
        // The summary once, then each problem once; a stop that was asked for is one plain line.
        const p = e.pass;
        for (const l of passLines(p)) ctx.err(l);
        const stopped = p.status === 'interrupted';
        for (const m of stopped ? p.errors.slice(0, -1) : p.errors) ctx.err(`runsync: ${m}`);
        if (stopped) ctx.err('runsync: stopped; the next pass resumes where this one stopped');
        setExit(EXIT_FAILED);
      }
    },
    { lockAs: options.kind ?? 'sync' },
  );
}

export function syncCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('sync')
    .description('one incremental pass: catalog snapshot, runs window, open-run refresh, Parquet export')
    .option('--reconcile', 're-check every run inside the open-run horizon (RUNSYNC_OPEN_RUN_HORIZON)')
    .option(
      '--all-open',
      "check every open run, even when there are more than their share of the key's rate allows (they are then checked as they come due)",
    )
    .option('--no-export', 'leave the Parquet tree as it is')
    .action((o: { reconcile?: boolean; allOpen?: boolean; export: boolean }) =>
      pass(ctx, setExit, { reconcile: o.reconcile === true, allOpen: o.allOpen === true, export: o.export }),
    );
}

export function snapshotCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('snapshot')
    .description('catalog snapshot only: tools, agents, guidelines, guardrails, runbooks, run tool options')
    .option('--no-export', 'leave the Parquet tree as it is')
    .action((o: { export: boolean }) => pass(ctx, setExit, { kind: 'snapshot', export: o.export }));
}
