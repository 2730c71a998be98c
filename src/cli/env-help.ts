import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETTINGS, type SettingGroup } from '../config/settings.ts';

// The environment settings each command reads, for its --help (src/config/settings.ts).
const inGroup = (group: SettingGroup) => Object.keys(SETTINGS).filter((n) => SETTINGS[n]?.[0] === group);
const API = inGroup('api');
const PASS = inGroup('pass');
const LOAD = inGroup('load');
const WRITE = inGroup('write');
const PARQUET = inGroup('parquet');
const RUNNING = inGroup('running');
const QUEUE = inGroup('queue');

export const COMMAND_SETTINGS: Record<string, readonly string[]> = {
  demo: [...WRITE, ...RUNNING],
  sync: [...API, ...WRITE, ...PARQUET, ...PASS, ...LOAD, ...RUNNING],
  snapshot: [...API, ...WRITE, ...LOAD, ...RUNNING],
  backfill: [...API, ...WRITE, ...PARQUET, ...LOAD, ...RUNNING, ...QUEUE],
  verify: [...API, ...WRITE, ...PARQUET, ...LOAD, ...RUNNING],
  export: [...WRITE, ...PARQUET, ...RUNNING],
  rebuild: [...WRITE, ...PARQUET, 'RUNSYNC_PII_POLICY', 'RUNSYNC_PII_KEY', 'RUNSYNC_SCHEMA_CONTRACT', ...RUNNING],
  worker: [...API, ...WRITE, ...PARQUET, ...PASS, ...LOAD, ...QUEUE, ...inGroup('worker'), ...RUNNING],
  status: ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_MEMORY_LIMIT', ...QUEUE],
  query: ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_MEMORY_LIMIT'],
  report: ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_MEMORY_LIMIT'],
  compact: ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_MEMORY_LIMIT'],
  simulate: ['RUNSYNC_SHUTDOWN_GRACE'],
  purge: QUEUE,
  pii: ['RUNSYNC_WAREHOUSE_DIR', 'RUNSYNC_PII_POLICY', 'RUNSYNC_PII_KEY', 'RUNSYNC_MEMORY_LIMIT'],
  quarantine: [
    'RUNSYNC_WAREHOUSE_DIR',
    'RUNSYNC_SCHEMA_CONTRACT',
    'RUNSYNC_PII_POLICY',
    'RUNSYNC_PII_KEY',
    ...PARQUET,
    'RUNSYNC_MEMORY_LIMIT',
  ],
};

/** The help section listing `names`, one a line. */
export function envHelp(names: readonly string[]): string {
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.map((n) => `  ${n.padEnd(width)}  ${SETTINGS[n]?.[1] ?? ''}`);
  return `\nEnvironment:\n${lines.join('\n')}`;
}

/** Every setting, for the top-level help. */
export function allSettingsHelp(): string {
  const exits = 'Exit codes: 0 success, 1 the sync failed (the message says why), 2 bad usage or configuration.';
  return `${envHelp(Object.keys(SETTINGS))}\n\n${exits}`;
}

/** runsync's version, from its package.json (found from the sources or from dist/). */
export function packageVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(fileURLToPath(new URL(up, import.meta.url)), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'runsync' && pkg.version) return pkg.version;
    } catch {
      // Not at this level.
    }
  }
  return 'unknown';
}
