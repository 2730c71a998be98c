import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { runCli } from '../support/cli.ts';
import { hasScript, runInTerminal } from '../support/terminal.ts';
import {
  eventually,
  perWorkerTest,
  REDIS_URL,
  spawnWorker,
  stopWorker,
  uniquePrefix,
  workerEnv,
} from '../worker/kit.ts';

// A deployment's Redis state after its workers stop: status says the schedule is not being run,
// and `runsync purge` lists the queues, schedules and budget it holds, asks (or is told --yes),
// and leaves no key of that prefix and every key of any other.

async function keys(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...found);
  } while (cursor !== '0');
  return out.sort();
}

describe('runsync purge', () => {
  const each = perWorkerTest();
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  });
  afterAll(() => redis?.disconnect());

  it('after a worker ran and stopped: lists, refuses without --yes, then removes its prefix alone', {
    timeout: 180_000,
  }, async () => {
    const sim = await each.sim({ seed: 71, size: 120, days: 3, now: systemMicros() - MICROS_PER_HOUR });
    const dir = each.dir();
    const prefix = each.prefix();
    // Keys of other deployments: a prefix that starts like this one, and one this one's name is in.
    const others = [
      `${prefix}x:write:meta`,
      `${prefix}-b:budget`,
      `other:${prefix}:budget`,
      `${uniquePrefix()}:budget`,
    ];
    each.defer(() => redis.del(...others));
    for (const k of others) await redis.set(k, 'theirs');
    const env = { ...workerEnv(sim, dir, prefix), LOG_LEVEL: 'info' };
    const w = spawnWorker(env);
    each.workers.push(w);
    await eventually(
      async () => /"msg":"pass finished"/.test(w.output()),
      120_000,
      () => w.output().slice(-2000),
    );

    // While the worker runs, purge refuses: it would take the jobs from under it.
    const busy = await runCli(['purge', '--yes'], env);
    expect(busy.code, busy.stderr).toBe(1);
    expect(busy.stderr).toMatch(/worker\(s\) are connected to these queues; stop them first/);
    expect((await keys(redis, `${prefix}:*`)).length).toBeGreaterThan(10);

    expect((await stopWorker(w)).code).toBe(0);
    const before = await keys(redis, `${prefix}:*`);
    expect(before.length).toBeGreaterThan(10);

    // The schedule is no longer run, and status says so.
    await new Promise((r) => setTimeout(r, 7000));
    const status = await runCli(['status'], { ...env, LOG_LEVEL: 'silent' });
    expect(status.stdout).toMatch(
      /^schedule +runs-pass "\*\/3 \* \* \* \* \*" UTC: no worker has run the schedule since \S+Z/m,
    );

    // No terminal and no --yes: the list, then a refusal naming --yes, and nothing removed.
    const asked = await runCli(['purge'], env);
    expect(asked.code).toBe(2);
    expect(asked.stderr).toMatch(/^runsync: .*add --yes$/m);
    expect(asked.stdout).toContain(`under the prefix "${prefix}"`);
    expect(asked.stdout).toMatch(/^ {2}queue write +/m);
    expect(asked.stdout).toMatch(
      /^ {2}schedules +.*runs-pass.*catalog-snapshot|^ {2}schedules +.*catalog-snapshot.*runs-pass/m,
    );
    expect(asked.stdout).toMatch(/^ {2}rate budget +the key's shared budget state$/m);
    // Nothing removed (keys with a time to live, such as the stalled-job check's, may have lapsed).
    const kept = await keys(redis, `${prefix}:*`);
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.filter((k) => !before.includes(k))).toEqual([]);
    for (const k of [`${prefix}:budget`, `${prefix}:write:repeat:runs-pass`]) expect(kept, k).toContain(k);

    const done = await runCli(['purge', '--yes'], env);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/^removed \d{2,} key\(s\); none left under the prefix/m);
    expect(await keys(redis, `${prefix}:*`)).toEqual([]);
    expect(await keys(redis, `${prefix}*`)).toEqual([`${prefix}-b:budget`, `${prefix}x:write:meta`].sort());
    for (const k of others) expect(await redis.get(k), k).toBe('theirs');

    const again = await runCli(['purge'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing under the prefix/);
  });

  it.skipIf(!hasScript)('on a terminal it asks, and removes only on yes', { timeout: 60_000 }, async () => {
    const prefix = each.prefix();
    await redis.set(`${prefix}:budget`, '{}');
    const env = { REDIS_URL, RUNSYNC_QUEUE_PREFIX: prefix, RUNSYNC_WAREHOUSE_DIR: each.dir() };
    const no = runInTerminal(['purge'], env);
    await eventually(
      async () => no.screen().some((l) => /\[y\/N\]/.test(l)),
      30_000,
      () => no.screen().join('\n'),
    );
    no.child.stdin?.write('n\r');
    expect(await no.exited).toBe(0);
    expect(no.screen().join('\n')).toContain('nothing removed');
    expect(await redis.exists(`${prefix}:budget`)).toBe(1);
    const yes = runInTerminal(['purge'], env);
    await eventually(
      async () => yes.screen().some((l) => /\[y\/N\]/.test(l)),
      30_000,
      () => yes.screen().join('\n'),
    );
    yes.child.stdin?.write('y\r');
    expect(await yes.exited).toBe(0);
    expect(await redis.exists(`${prefix}:budget`)).toBe(0);
  });
});
