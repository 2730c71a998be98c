import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../src/config/settings.ts';
import { unknownSettingWarnings } from '../../src/config/unknown-settings.ts';
import { runCli } from '../support/cli.ts';

// A misspelled setting is otherwise its default without a word: each RUNSYNC_* name runsync does
// not read is named on one line of stderr, with the setting that was probably meant.

describe('settings runsync does not read', () => {
  it('are named one a line, with the nearest setting', () => {
    const lines = unknownSettingWarnings({
      RUNSYNC_LOOKBAK: '1h',
      RUNSYNC_WAREHOUSE: './elsewhere',
      RUNSYNC_APIKEY: 'x',
      RUNSYNC_API_KEY_FLIE: '/k',
      RUNSYNC_QUEUE_PERFIX: 'x',
      RUNSYNC_ZZZZZZZZZZZZ: '1',
      RUNSYNC_LOOKBACK_FILE: '/x',
    });
    expect(lines).toHaveLength(7);
    for (const l of lines) expect(l).not.toContain('\n');
    const about = (name: string) => lines.find((l) => l.includes(`${name} is not a setting`)) ?? '';
    expect(about('RUNSYNC_LOOKBAK')).toMatch(/did you mean RUNSYNC_LOOKBACK\?$/);
    expect(about('RUNSYNC_WAREHOUSE')).toMatch(/did you mean RUNSYNC_WAREHOUSE_DIR\?$/);
    expect(about('RUNSYNC_APIKEY')).toMatch(/did you mean RUNSYNC_API_KEY\?$/);
    expect(about('RUNSYNC_API_KEY_FLIE')).toMatch(/did you mean RUNSYNC_API_KEY_FILE\?$/);
    expect(about('RUNSYNC_QUEUE_PERFIX')).toMatch(/did you mean RUNSYNC_QUEUE_PREFIX\?$/);
    expect(about('RUNSYNC_ZZZZZZZZZZZZ')).toMatch(/runsync --help` lists the settings$/);
    expect(about('RUNSYNC_LOOKBACK_FILE')).toMatch(
      /only RUNSYNC_API_KEY_FILE and RUNSYNC_PII_KEY_FILE read their value from a file/,
    );
  });

  it('every setting, the key file and names of other tools are left alone', () => {
    const env: Record<string, string> = { PATH: '/bin', REDIS_URL: 'redis://x', AWS_REGION: 'eu-west-1' };
    for (const name of Object.keys(SETTINGS)) env[name] = 'x';
    env.RUNSYNC_API_KEY_FILE = '/k';
    env.RUNSYNC_HEAP_SET = '1';
    expect(unknownSettingWarnings(env)).toEqual([]);
  });

  it('a command warns and goes on: the misspelled settings are named, the command still runs', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'runsync-unknown-'));
    try {
      const r = await runCli(['status'], { RUNSYNC_WAREHOUSE: './elsewhere', RUNSYNC_LOOKBAK: '1h' }, { cwd });
      const warnings = r.stderr.split('\n').filter((l) => l.includes('is not a setting runsync reads'));
      expect(warnings, r.stderr).toEqual([
        'runsync: warning: RUNSYNC_LOOKBAK is not a setting runsync reads, so it is ignored; did you mean RUNSYNC_LOOKBACK?',
        'runsync: warning: RUNSYNC_WAREHOUSE is not a setting runsync reads, so it is ignored; did you mean RUNSYNC_WAREHOUSE_DIR?',
      ]);
      // Not refused: status ran, and found no warehouse where the default puts it.
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(join(cwd, 'warehouse'));
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
