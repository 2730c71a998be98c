import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, collect, runCli, spawnCli, waitForLine } from '../support/cli.ts';

// The CLI's surface: every command of the product contract has --help; bad usage exits 2.

const COMMANDS = ['demo', 'sync', 'backfill', 'snapshot', 'export', 'rebuild', 'worker', 'status', 'simulate'];
const helps = new Map<string, CliResult>();

// Each run starts a fresh Node with the TypeScript loader: start them side by side, once.
beforeAll(async () => {
  const results = await Promise.all(COMMANDS.map((c) => runCli([c, '--help'])));
  for (const [i, c] of COMMANDS.entries()) helps.set(c, results[i] as CliResult);
});

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
