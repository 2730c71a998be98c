import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/util/display-width.ts';
import { type CliResult, runCli } from '../support/cli.ts';

// The demo as a newcomer meets it: what it prints last are commands that work at once on what it
// left, with nothing else installed, and each of them is run here as printed.

/** A command line as printed: optional VAR=value, `npx runsync`, words and "quoted" arguments. */
function parse(line: string): { env: Record<string, string>; args: string[] } {
  const words = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? (m[2] as string));
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0] ?? '')) {
    const [k, v] = (words.shift() as string).split('=') as [string, string];
    env[k] = v;
  }
  expect(words.slice(0, 2)).toEqual(['npx', 'runsync']);
  return { env, args: words.slice(2) };
}

describe('runsync demo', () => {
  let cwd = '';
  let demo: CliResult;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'runsync-demo-'));
    demo = await runCli(['demo'], {}, { cwd, timeoutMs: 150_000 });
  }, 180_000);
  afterAll(() => {
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('ends with commands that work at once: query and report, no DuckDB client', async () => {
    expect(demo.code, demo.stderr).toBe(0);
    const lines = demo.stdout.trimEnd().split('\n');
    const next = lines.slice(lines.indexOf('Next:') + 1);
    expect(next.length).toBeGreaterThanOrEqual(3);
    expect(demo.stdout).not.toMatch(/^\s*(Open it:\s*)?duckdb /m);
    const commands = next.map((l) => l.replace(/\s+# .*$/, '').trim());
    expect(commands.some((c) => /^npx runsync query "/.test(c))).toBe(true);
    expect(commands).toContain('npx runsync report');
    for (const c of commands) {
      const { env, args } = parse(c);
      const r = await runCli(args, env, { cwd });
      expect(r.code, `${c}: ${r.stderr}`).toBe(0);
      if (args[0] === 'query') expect(r.stdout.split('\n').length, c).toBeGreaterThan(2);
    }
    expect(existsSync(join(cwd, 'warehouse', 'report.html'))).toBe(true);
  });

  it('prints its tables aligned, names with an emoji or in Japanese included', () => {
    const lines = demo.stdout.split('\n');
    let tables = 0;
    lines.forEach((rule, i) => {
      if (!/^ {2}-+( {2}-+)+$/.test(rule)) return;
      tables++;
      const rows: string[] = [];
      for (let k = i + 1; k < lines.length && (lines[k] as string).trim() !== ''; k++) rows.push(lines[k] as string);
      // Each table's last column holds numbers, right-aligned: every row ends where the rule does.
      for (const r of [lines[i - 1] as string, ...rows]) expect(displayWidth(r), `${r}\n${rule}`).toBe(rule.length);
    });
    expect(tables).toBe(4);
    expect(demo.stdout).toMatch(/Helpdesk ✨|サポート/);
  });
});
