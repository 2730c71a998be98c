import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, collect, ROOT, runCli, spawnCli, waitForLine } from '../support/cli.ts';

// The CLI's surface: every command of the product contract has --help; bad usage exits 2.

const COMMANDS = ['demo', 'sync', 'backfill', 'snapshot', 'export', 'rebuild', 'worker', 'status', 'simulate'];
const OTHERS = ['query', 'report', 'compact', 'purge'];
const helps = new Map<string, CliResult>();

// Each run starts a fresh Node with the TypeScript loader: start them side by side, once.
beforeAll(async () => {
  const all = [...COMMANDS, ...OTHERS];
  const results = await Promise.all(all.map((c) => runCli([c, '--help'])));
  for (const [i, c] of all.entries()) helps.set(c, results[i] as CliResult);
});

/** The names of the settings the configuration's code reads, from its sources. */
function settingsRead(): Set<string> {
  const files = [
    // Not the table the help is made from (settings.ts): that would prove nothing.
    ...readdirSync(join(ROOT, 'src', 'config'))
      .filter((f) => f !== 'settings.ts')
      .map((f) => join('src', 'config', f)),
    join('src', 'worker', 'config.ts'),
    join('src', 'util', 'memory-budget.ts'),
  ];
  const names = new Set<string>();
  for (const f of files) {
    const text = readFileSync(join(ROOT, f), 'utf8');
    // Quoted names only: the ones the code looks up, not those its comments mention.
    for (const m of text.matchAll(/'(RUNSYNC_[A-Z0-9_]*[A-Z0-9]|REDIS_URL|LOG_LEVEL)'/g)) names.add(m[1] as string);
    for (const m of text.matchAll(/env\.(RUNSYNC_[A-Z0-9_]+|REDIS_URL|LOG_LEVEL)\b/g)) names.add(m[1] as string);
  }
  return names;
}

describe('runsync CLI', () => {
  it('lists every command in --help', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\b`, 'm'));
  });

  it.each(COMMANDS)('%s --help exits 0 and describes the command', (c) => {
    const r = helps.get(c) as CliResult;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: runsync ${c}`);
  });

  it.each(['sync', 'export', 'rebuild', 'worker'])(
    '%s --help names where the Parquet tree goes and how to reach S3',
    (c) => {
      const env = (helps.get(c) as CliResult).stdout.split('Environment:')[1] ?? '';
      for (const s of [
        'RUNSYNC_PARQUET_URL',
        'RUNSYNC_PARQUET_GRACE',
        'RUNSYNC_S3_ENDPOINT',
        'RUNSYNC_S3_CREDENTIALS_FILE',
      ])
        expect(env).toContain(s);
      if (c === 'worker') expect(env).toMatch(/RUNSYNC_STAGING_URL +where fetchers leave details: a folder or s3:\/\//);
    },
  );

  it.each(COMMANDS)('%s: when its help says "not built yet", running it says so and exits 2', async (c) => {
    const help = (helps.get(c) as CliResult).stdout;
    if (!help.includes('(not built yet)')) return;
    const r = await runCli(
      c === 'backfill' ? [c, '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-02T00:00:00Z'] : [c],
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`runsync ${c} is not built yet`);
  });

  it('every setting the code reads is in the --help of a command, and of those it affects', () => {
    const read = settingsRead();
    expect(read.size).toBeGreaterThan(20);
    expect(read).toContain('RUNSYNC_SCHEMA_EVOLUTION');
    const envOf = (c: string) => (helps.get(c) as CliResult).stdout.split('Environment:')[1] ?? '';
    const helped = [...helps.keys()].map(envOf).join('\n');
    for (const name of read) expect(helped, name).toMatch(new RegExp(`\\b${name}\\b`));
    for (const c of ['sync', 'snapshot', 'backfill', 'worker']) expect(envOf(c)).toContain('RUNSYNC_SCHEMA_EVOLUTION');
    for (const c of ['status', 'query', 'report', 'compact']) expect(envOf(c)).toContain('RUNSYNC_WAREHOUSE_DIR');
  });

  it('exits 2 on an unknown command, an unknown option, or a bad value', async () => {
    const cases = [
      ['nosuch'],
      ['simulate', '--nosuch'],
      ['simulate', '--faults', 'boom=2'],
      ['simulate', '--port', 'x'],
      [],
    ];
    const results = await Promise.all(cases.map((args) => runCli(args)));
    for (const [i, r] of results.entries()) expect(r.code, (cases[i] as string[]).join(' ')).toBe(2);
  });

  it('simulate serves the API until it is stopped', async () => {
    const child = spawnCli([
      'simulate',
      '--port',
      '0',
      '--size',
      '50',
      '--key',
      'svc_live_cli_test_key',
      '--now',
      '2026-03-01T00:00:00Z',
    ]);
    const done = collect(child, 30_000);
    const line = await waitForLine(child, /^export RUNSYNC_API_URL=/);
    const url = line.split('=')[1] as string;
    const res = await fetch(`${url}/api/v1/runs?limit=2`, {
      headers: { authorization: 'Bearer svc_live_cli_test_key' },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(2);
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('svc_live_cli_test_key');
  });
});
