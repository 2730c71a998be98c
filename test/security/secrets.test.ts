import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { runCli } from '../support/cli.ts';
import { startSim, tempDir } from '../sync/kit.ts';
import { cleanRedis, eventually, REDIS_URL, spawnWorker, stopWorker, uniquePrefix, workerEnv } from '../worker/kit.ts';

// The API key and the custom tools' secrets, looked for everywhere runsync writes: its logs (at
// the most talkative level), Redis, the staged files, the raw archive, the warehouse, the Parquet
// tree, analytics.duckdb and the report. And everything it creates is its owner's alone.

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out.push(...walk(p));
  }
  return out;
}

/** Every value of every table and view of a DuckDB file, and of every Parquet file, as text. */
async function duckText(dbFile: string | null, parquet: string[]): Promise<string> {
  const instance = await DuckDBInstance.create(dbFile ?? ':memory:', dbFile ? { access_mode: 'READ_ONLY' } : {});
  const c = await instance.connect();
  const parts: string[] = [];
  try {
    if (dbFile) {
      const tables = (
        await c.runAndReadAll(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'`)
      ).getRowObjectsJS() as { table_name: string }[];
      for (const { table_name } of tables) {
        const r = await c.runAndReadAll(`SELECT to_json(t)::VARCHAR AS j FROM "${table_name}" t`);
        parts.push(...(r.getRowObjectsJS() as { j: string }[]).map((x) => x.j));
      }
    }
    for (const f of parquet) {
      const r = await c.runAndReadAll(
        `SELECT to_json(t)::VARCHAR AS j FROM read_parquet('${f.replace(/'/g, "''")}') t`,
      );
      parts.push(...(r.getRowObjectsJS() as { j: string }[]).map((x) => x.j));
    }
  } finally {
    c.closeSync();
    instance.closeSync();
  }
  return parts.join('\n');
}

async function redisText(prefix: string): Promise<string> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const parts: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      for (const k of keys) {
        const type = await redis.type(k);
        if (type === 'string') parts.push((await redis.get(k)) ?? '');
        else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(k)));
        else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(k, 0, -1)));
        else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(k)));
        else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(k, 0, -1, 'WITHSCORES')));
        else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(k, '-', '+')));
        parts.push(k);
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return parts.join('\n');
}

describe('secrets and permissions', () => {
  let sim: Simulator;
  let tmp: ReturnType<typeof tempDir>;
  const prefix = uniquePrefix();
  afterAll(async () => {
    await sim?.close();
    tmp?.cleanup();
    await cleanRedis(prefix);
  });

  it('the key and custom tool secrets are nowhere runsync writes; its files are owner-only', async () => {
    sim = await startSim({ seed: 94, size: 300, days: 5, now: systemMicros() - MICROS_PER_HOUR });
    tmp = tempDir();
    const s = sim;
    const env = workerEnv(s, tmp.dir, prefix, { LOG_LEVEL: 'trace', RUNSYNC_SCHEDULE_CATALOG: '*/3 * * * * *' });
    // A worker, a pass from the CLI, a report: everything that writes.
    const worker = spawnWorker(env);
    await eventually(
      async () => (await redisText(prefix)).includes('"status":"ok"') && s.counters.count('tools.list') > 0,
      120_000,
      () => worker.output().slice(-2000),
    );
    await stopWorker(worker);
    const sync = await runCli(['sync'], { ...env, REDIS_URL: '' });
    expect(sync.code, sync.stderr).toBe(0);
    const report = await runCli(['report'], { ...env, REDIS_URL: '' });
    expect(report.code, report.stderr).toBe(0);

    const files = walk(tmp.dir);
    const parquet = files.filter((f) => f.endsWith('.parquet'));
    expect(parquet.some((f) => f.includes('/raw/'))).toBe(true);
    expect(parquet.some((f) => f.includes('/parquet/tools/'))).toBe(true);
    const staged = files.filter((f) => f.endsWith('.json.gz')).map((f) => gunzipSync(readFileSync(f)).toString('utf8'));
    const plain = files
      .filter((f) => statSync(f).isFile() && !f.endsWith('.parquet') && !f.endsWith('.duckdb') && !f.endsWith('.gz'))
      .map((f) => readFileSync(f, 'latin1'));
    const everywhere = {
      logs: worker.output() + sync.stdout + sync.stderr + report.stdout + report.stderr,
      redis: await redisText(prefix),
      staged: staged.join('\n'),
      warehouse: await duckText(join(tmp.dir, 'runsync.duckdb'), []),
      parquet: await duckText(null, parquet),
      otherFiles: plain.join('\n'),
    };
    expect(everywhere.logs).toContain('pass finished');
    expect(everywhere.warehouse).toContain('custom_tool');

    const secrets = [s.key];
    for (const t of s.world.catalogObjects('tool')) {
      const custom = t.custom as
        | { headers?: { name: string; value: string }[]; auth?: Record<string, unknown> }
        | undefined;
      for (const h of custom?.headers ?? [])
        if (/authorization|cookie|token|key|secret/i.test(h.name)) secrets.push(h.value);
      for (const [k, v] of Object.entries(custom?.auth ?? {})) {
        if (typeof v === 'string' && /secret|token|password|^value$|^key$|api_key/i.test(k) && !/name|url|uri/i.test(k))
          secrets.push(v);
      }
    }
    expect(secrets.length).toBeGreaterThan(3);
    for (const [where, text] of Object.entries(everywhere)) {
      for (const secret of secrets)
        expect(text.includes(secret), `${secret.slice(0, 12)}… found in ${where}`).toBe(false);
    }
    // Masked, not dropped: a fingerprint stands where a secret was.
    expect(everywhere.warehouse).toMatch(/\*\*\*masked:[0-9a-f]{8}/);

    for (const f of files) {
      const mode = statSync(f).mode & 0o777;
      expect(mode & 0o077, `${f} is ${mode.toString(8)}`).toBe(0);
    }
  });
});
