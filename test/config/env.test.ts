import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { apiBaseUrl, ConfigError, configuredLogger, isLoopbackHost, loadConfig } from '../../src/config/index.ts';
import { parseDuration } from '../../src/util/timestamp.ts';

// Settings from the environment: defaults, every refusal as one line naming the setting, and the
// key kept out of messages, logs and anything serialised.

const KEY = 'svc_live_config_test_key_abcdef123456';
const base = { RUNSYNC_API_URL: 'https://support.example.com', RUNSYNC_API_KEY: KEY };

function refusal(env: Record<string, string>, options = {}): ConfigError {
  try {
    loadConfig(env, options);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    const err = e as ConfigError;
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toContain(KEY);
    return err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('reads every setting, with the documented defaults', () => {
    const c = loadConfig(base, { cwd: '/srv/runsync' });
    expect(c.api?.baseUrl).toBe('https://support.example.com/api/v1');
    expect(c.api?.key).toBe(KEY);
    expect(c.warehouseDir).toBe('/srv/runsync/warehouse');
    expect(c.lookback).toBe(parseDuration('15m'));
    expect(c.openRunHorizon).toBe(parseDuration('30d'));
    expect(c).toMatchObject({ startDate: null, rateLimit: null, rateReserve: 0.05, redisUrl: null, logLevel: 'info' });
    expect(c).toMatchObject({ reconcileEvery: parseDuration('1h'), reconcileBudget: 0.1 });

    const full = loadConfig({
      ...base,
      RUNSYNC_WAREHOUSE_DIR: '/data/wh',
      RUNSYNC_START_DATE: '2026-01-15T08:30:00.123456Z',
      RUNSYNC_LOOKBACK: '5m',
      RUNSYNC_OPEN_RUN_HORIZON: '7d',
      RUNSYNC_RATE_LIMIT: '12.5',
      RUNSYNC_RATE_RESERVE: '20%',
      RUNSYNC_RECONCILE_EVERY: '30m',
      RUNSYNC_RECONCILE_BUDGET: '0.25',
      REDIS_URL: 'redis://127.0.0.1:6379/0',
      LOG_LEVEL: 'DEBUG',
    });
    expect(full).toMatchObject({
      warehouseDir: '/data/wh',
      startDate: Date.UTC(2026, 0, 15, 8, 30) * 1000 + 123456,
      lookback: parseDuration('5m'),
      openRunHorizon: parseDuration('7d'),
      rateLimit: 12.5,
      rateReserve: 0.2,
      reconcileEvery: parseDuration('30m'),
      reconcileBudget: 0.25,
      redisUrl: 'redis://127.0.0.1:6379/0',
      logLevel: 'debug',
    });
    expect(loadConfig({ ...base, RUNSYNC_RECONCILE_EVERY: 'off' }).reconcileEvery).toBeNull();
    expect(loadConfig({ ...base, RUNSYNC_RECONCILE_BUDGET: '100%' }).reconcileBudget).toBe(1);
    expect(loadConfig({ ...base, RUNSYNC_START_DATE: '2026-01-15' }).startDate).toBe(Date.UTC(2026, 0, 15) * 1000);
  });

  it('is frozen', () => {
    const c = loadConfig(base);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.api)).toBe(true);
    expect(() => {
      (c as { logLevel: string }).logLevel = 'trace';
    }).toThrow();
  });

  it('needs the API settings only when asked to', () => {
    expect(refusal({}).setting).toBe('RUNSYNC_API_URL');
    expect(refusal({ RUNSYNC_API_URL: 'https://a.example' }).setting).toBe('RUNSYNC_API_KEY');
    expect(loadConfig({}, { needApi: false }).api).toBeNull();
    expect(refusal({ RUNSYNC_API_KEY: KEY }, { needApi: false }).setting).toBe('RUNSYNC_API_URL');
  });

  it.each([
    ['RUNSYNC_API_URL', { RUNSYNC_API_URL: 'http://support.example.com' }, /must use https/],
    ['RUNSYNC_API_URL', { RUNSYNC_API_URL: 'ftp://support.example.com' }, /https/],
    ['RUNSYNC_API_URL', { RUNSYNC_API_URL: 'support.example.com' }, /not a URL/],
    ['RUNSYNC_API_URL', { RUNSYNC_API_URL: 'https://user:pw@support.example.com' }, /user name or password/],
    ['RUNSYNC_API_URL', { RUNSYNC_API_URL: 'https://support.example.com/?x=1' }, /query/],
    ['RUNSYNC_API_KEY', { RUNSYNC_API_KEY: 'sk_test_abcdefgh' }, /must start with svc_live_/],
    ['RUNSYNC_API_KEY', { RUNSYNC_API_KEY: 'svc_live_' }, /must start with svc_live_/],
    ['RUNSYNC_API_KEY', { RUNSYNC_API_KEY: `${KEY} extra` }, /whitespace/],
    ['RUNSYNC_API_KEY', { RUNSYNC_API_KEY_FILE: '/nowhere' }, /set only one/],
    ['RUNSYNC_START_DATE', { RUNSYNC_START_DATE: 'last tuesday' }, /ISO date-time/],
    ['RUNSYNC_LOOKBACK', { RUNSYNC_LOOKBACK: 'fifteen minutes' }, /duration/],
    ['RUNSYNC_OPEN_RUN_HORIZON', { RUNSYNC_OPEN_RUN_HORIZON: '0d' }, /positive duration/],
    ['RUNSYNC_RATE_LIMIT', { RUNSYNC_RATE_LIMIT: '-3' }, /positive number/],
    ['RUNSYNC_RATE_LIMIT', { RUNSYNC_RATE_LIMIT: '0' }, /positive number/],
    ['RUNSYNC_RATE_RESERVE', { RUNSYNC_RATE_RESERVE: '100%' }, /share from 0/],
    ['RUNSYNC_RECONCILE_EVERY', { RUNSYNC_RECONCILE_EVERY: 'hourly' }, /positive duration/],
    // The word for "none" is named, so `never` or `none` is put right at once.
    [
      'RUNSYNC_RECONCILE_EVERY',
      { RUNSYNC_RECONCILE_EVERY: 'never' },
      /, or off for no rolling reconciliation; got "never"/,
    ],
    ['RUNSYNC_SCHEMA_EVOLUTION', { RUNSYNC_SCHEMA_EVOLUTION: 'maybe' }, /must be on or off/],
    ['RUNSYNC_RECONCILE_BUDGET', { RUNSYNC_RECONCILE_BUDGET: '0%' }, /share above 0 up to 1/],
    ['RUNSYNC_RECONCILE_BUDGET', { RUNSYNC_RECONCILE_BUDGET: '150%' }, /share above 0 up to 1/],
    ['REDIS_URL', { REDIS_URL: 'http://cache:6379' }, /redis:\/\//],
    ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }, /one of fatal, error/],
  ])('refuses a bad %s with one line naming it', (setting, env, message) => {
    const e = refusal({ ...base, ...env });
    expect(e.setting).toBe(setting);
    expect(e.message.startsWith(`${setting}: `)).toBe(true);
    expect(e.message).toMatch(message);
  });

  it('reads the key from a file, trimming the newline editors add', () => {
    const dir = mkdtempSync(join(tmpdir(), 'runsync-config-'));
    const file = join(dir, 'key');
    writeFileSync(file, `  ${KEY}\n\n`);
    const c = loadConfig({ RUNSYNC_API_URL: base.RUNSYNC_API_URL, RUNSYNC_API_KEY_FILE: file });
    expect(c.api?.key).toBe(KEY);
    const missing = refusal({ RUNSYNC_API_URL: base.RUNSYNC_API_URL, RUNSYNC_API_KEY_FILE: join(dir, 'absent') });
    expect(missing.setting).toBe('RUNSYNC_API_KEY_FILE');
    expect(missing.message).toMatch(/cannot read .*absent \(ENOENT\)/);
    writeFileSync(file, 'not-a-key\n');
    expect(refusal({ RUNSYNC_API_URL: base.RUNSYNC_API_URL, RUNSYNC_API_KEY_FILE: file }).message).toMatch(
      /^RUNSYNC_API_KEY_FILE: the key must start with svc_live_/,
    );
  });

  it('keeps the key and the Redis password out of anything written out', () => {
    const c = loadConfig({ ...base, REDIS_URL: 'redis://:s3cret-redis-pass@cache:6379' });
    expect(JSON.stringify(c)).not.toContain(KEY);
    expect(inspect(c, { depth: 5 })).not.toContain(KEY);
    expect(c.secrets).toEqual([KEY, 's3cret-redis-pass']);
    const lines: string[] = [];
    const log = configuredLogger(c, { destination: { write: (l: string) => lines.push(l) } });
    log.info({ key: c.api?.key, header: `Bearer ${c.api?.key}` }, `using ${c.api?.key}`);
    log.info({ redis: c.redisUrl }, 'redis');
    expect(lines).toHaveLength(2);
    expect(lines.join('')).not.toContain(KEY);
    expect(lines.join('')).not.toContain('s3cret-redis-pass');
    expect(lines[0]).toContain('[REDACTED]');
  });
});

describe('the API base URL', () => {
  it('adds /api/v1 and tolerates a trailing slash, the prefix already there, or a path prefix', () => {
    for (const raw of [
      'https://h.example',
      'https://h.example/',
      'https://h.example/api/v1',
      'https://h.example/api/v1/',
      ' https://h.example ',
    ]) {
      expect(apiBaseUrl(raw)).toBe('https://h.example/api/v1');
    }
    expect(apiBaseUrl('https://h.example/support/')).toBe('https://h.example/support/api/v1');
    expect(apiBaseUrl('https://h.example:8443')).toBe('https://h.example:8443/api/v1');
  });

  it('allows plain http to loopback addresses only', () => {
    for (const raw of [
      'http://localhost:8080',
      'http://127.0.0.1:9',
      'http://127.8.9.10',
      'http://[::1]:8080',
      'http://[::ffff:127.0.0.1]/',
      'http://api.localhost',
    ]) {
      expect(apiBaseUrl(raw)).toMatch(/^http:\/\//);
    }
    for (const raw of [
      'http://10.0.0.1',
      'http://128.0.0.1',
      'http://[::2]',
      'http://localhost.example.com',
      'http://[::ffff:10.0.0.1]',
    ]) {
      expect(() => apiBaseUrl(raw)).toThrow(ConfigError);
    }
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('192.168.0.1')).toBe(false);
  });

  it('allows plain http to a host the operator names in RUNSYNC_ALLOW_HTTP, and to no other', () => {
    const env = { RUNSYNC_API_URL: 'http://simulator:8080', RUNSYNC_API_KEY: 'svc_live_abcdefgh12345' };
    expect(() => loadConfig(env)).toThrow(/RUNSYNC_API_URL: must use https .*RUNSYNC_ALLOW_HTTP/);
    expect(loadConfig({ ...env, RUNSYNC_ALLOW_HTTP: 'Simulator' }).api?.baseUrl).toBe('http://simulator:8080/api/v1');
    expect(() => loadConfig({ ...env, RUNSYNC_ALLOW_HTTP: 'other' })).toThrow(ConfigError);
  });
});
