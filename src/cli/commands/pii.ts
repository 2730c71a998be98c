import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { memoryBudgetOf, piiSettingsOf } from '../../config/index.ts';
import { withWarehouse } from '../../warehouse/open.ts';
import { checkWarehouse, type PiiCheckReport } from '../../warehouse/pii-check.ts';
import { DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK } from '../context.ts';
import { unreadable, warehouseDirFrom } from './warehouse-dir.ts';

// `runsync pii check`: samples the warehouse's text and JSON columns and says where values look
// like personal data (emails, phone numbers, cards, IBANs, IP addresses, the policy's patterns),
// which the policy in force (RUNSYNC_PII_POLICY) therefore keeps, and which columns named like
// personal data no rule covers. Counts only, never a value. Exits 1 when it found any.

export function piiCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  const pii = new Command('pii').description('personal data in the warehouse');
  pii
    .command('check')
    .description('sample the warehouse for values that look like personal data where the policy keeps them')
    .option('--sample <n>', 'values read per column at most', sampleSize, 1000)
    .option('--wait <seconds>', 'how long to wait while a writer holds runsync.duckdb', sampleSize, 30)
    .action(async (o: { sample: number; wait: number }) => {
      const settings = piiSettingsOf(ctx.env);
      const dir = warehouseDirFrom(ctx.env);
      const file = join(dir, DB_FILE);
      const problem = unreadable(file);
      if (problem !== null) {
        ctx.err(problem);
        setExit(EXIT_FAILED);
        return;
      }
      const options = { readOnly: true, lockWaitMs: o.wait * 1000, budget: memoryBudgetOf(ctx.env) };
      const report = await withWarehouse(dir, options, (wh) =>
        checkWarehouse(wh, wh.resources, settings.policy, o.sample),
      );
      for (const line of reportLines(file, settings.policy?.source ?? 'off', report)) ctx.out(line);
      setExit(report.findings.length || report.namedLike.length ? EXIT_FAILED : EXIT_OK);
    });
  return pii;
}

function sampleSize(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('must be a whole number above 0');
  return Number(v);
}

export function reportLines(file: string, policy: string, r: PiiCheckReport): string[] {
  const out = [`sampled up to ${r.sample} values of ${r.columns} text and JSON columns of ${file} (policy: ${policy})`];
  const width = Math.max(
    0,
    ...r.findings.map((f) => `${f.table}.${f.column}`.length),
    ...r.namedLike.map((n) => n.length),
  );
  for (const f of r.findings) {
    const kinds = Object.entries(f.kinds)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    out.push(
      `${`${f.table}.${f.column}`.padEnd(width)}  ${f.values} of ${f.sampled} values look like personal data: ${kinds}`,
    );
  }
  for (const n of r.namedLike)
    out.push(`${n.padEnd(width)}  named like personal data, and no rule of the policy covers it`);
  if (!r.findings.length && !r.namedLike.length)
    out.push('nothing that looks like personal data where the policy keeps values');
  else out.push('add rules for these columns to the policy (docs/user-guide.md#personal-data), then `runsync rebuild`');
  return out;
}
