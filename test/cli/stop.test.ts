import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { ROOT } from '../support/cli.ts';
import { startSim } from '../sync/kit.ts';
import { cleanRedis, freePort, REDIS_URL, startRedisServer, uniquePrefix } from '../worker/kit.ts';

// A stop that always stops: one SIGTERM ends the worker within RUNSYNC_SHUTDOWN_GRACE whatever it
// is stuck on (Redis stopped, the warehouse held by another process, an API that never answers),
// started as the README starts it (`npx runsync worker`) or as a supervisor should (the installed
// bin, run by node itself), and no process of it is left behind.

const GRACE_MS = 6000;
const BIN = join(ROOT, 'bin', 'runsync.js');
const HOLD = join(ROOT, 'test', 'warehouse', 'hold-warehouse.ts');
const TSX = import.meta.resolve('tsx');

type Start = 'npx' | 'node';

interface Started {
  child: ChildProcess;
  output: () => string;
  prefix: string;
}

function startWorker(how: Start, env: Record<string, string>): Started {
  const prefix = env.RUNSYNC_QUEUE_PREFIX as string;
  const args = how === 'npx' ? ['npx', ['runsync', 'worker']] : [process.execPath, [BIN, 'worker']];
  const child = spawn(args[0] as string, args[1] as string[], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  return { child, output: () => out, prefix };
}

/** Processes whose environment carries this queue prefix: npm, the shell it starts, node. */
function processesOf(prefix: string): number[] {
  const marker = `RUNSYNC_QUEUE_PREFIX=${prefix}`;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, 'utf8');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // A zombie has exited; only its parent has yet to read its status.
      if (env.split('\0').includes(marker) && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z')
        out.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return out;
}

async function until(check: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends SIGTERM to what was started; resolves with the milliseconds until none of its processes is left. */
async function stopAndTime(w: Started): Promise<number> {
  const t0 = Date.now();
  w.child.kill('SIGTERM');
  await until(
    () => processesOf(w.prefix).length === 0,
    GRACE_MS + 10_000,
    () => w.output().slice(-3000),
  );
  const ms = Date.now() - t0;
  // Gone from /proc, but its exit may not have reached this process's event loop yet.
  if (w.child.exitCode === null && w.child.signalCode === null) await once(w.child, 'exit');
  return ms;
}

function baseEnv(url: string, key: string, dir: string, redisUrl = REDIS_URL): Record<string, string> {
  return {
    RUNSYNC_API_URL: url,
    RUNSYNC_API_KEY: key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    REDIS_URL: redisUrl,
    RUNSYNC_QUEUE_PREFIX: uniquePrefix(),
    RUNSYNC_SHUTDOWN_GRACE: `${GRACE_MS / 1000}s`,
    RUNSYNC_SCHEDULE_RECONCILE: 'off',
  };
}

describe('a stop that always stops', () => {
  const dirs: string[] = [];
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  const prefixes: string[] = [];
  let sim: Simulator;
  let hung: Server;
  let hungUrl = '';
  const sockets: Socket[] = [];

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('dist/ is missing: npm run build');
    sim = await startSim({ seed: 91, size: 300, days: 5 });
    // Takes every connection and never answers.
    hung = createServer((s) => {
      sockets.push(s);
      s.on('data', () => undefined);
    });
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    hungUrl = `http://127.0.0.1:${(hung.address() as { port: number }).port}`;
    // The first `npx runsync` of a checkout links it into npm's cache (and builds it): not part
    // of any stop timed below.
    const first = spawn('npx', ['runsync', '--version'], { cwd: ROOT, stdio: 'ignore' });
    await new Promise((r) => first.once('exit', r));
  }, 240_000);

  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => hung?.close(r));
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const p of prefixes) await cleanRedis(p).catch(() => undefined);
  });

  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'runsync-stop-'));
    dirs.push(d);
    return d;
  };

  const started = (how: Start, env: Record<string, string>): Started => {
    const w = startWorker(how, env);
    prefixes.push(w.prefix);
    // Whatever happens, nothing of it outlives the test.
    cleanup.push(() => {
      for (const pid of processesOf(w.prefix)) process.kill(pid, 'SIGKILL');
    });
    return w;
  };

  it.each<Start>(['node', 'npx'])('%s: with Redis stopped under it', { timeout: 120_000 }, async (how) => {
    const port = await freePort();
    const redisDir = tempDir();
    const redis = await startRedisServer(port, redisDir);
    cleanup.push(() => redis.kill('SIGKILL'));
    const w = started(how, baseEnv(sim.url, sim.key, tempDir(), `redis://127.0.0.1:${port}`));
    await until(() => /worker running/.test(w.output()), 60_000, w.output);
    redis.kill('SIGTERM');
    await until(() => /redis is unreachable/.test(w.output()), 30_000, w.output);
    const ms = await stopAndTime(w);
    expect(ms, w.output().slice(-2000)).toBeLessThan(GRACE_MS);
    expect(w.output()).not.toMatch(/Unhandled|TCPConnectWrap/);
  });

  it('node: SIGKILL, which cannot be passed on, takes the command started again with it', async () => {
    // Not under npm, whose exit the command watches for on its own.
    const env = { ...baseEnv(hungUrl, sim.key, tempDir()), npm_lifecycle_event: '', npm_execpath: '' };
    const w = started('node', env);
    await until(() => /pass started/.test(w.output()), 60_000, w.output);
    expect(processesOf(w.prefix)).toHaveLength(2);
    w.child.kill('SIGKILL');
    await until(
      () => processesOf(w.prefix).length === 0,
      10_000,
      () => `left: ${processesOf(w.prefix).join(' ')}`,
    );
  });

  it('node: with Redis unreachable from the start', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const w = started('node', baseEnv(sim.url, sim.key, tempDir(), `redis://127.0.0.1:${port}`));
    await until(() => /redis is unreachable/.test(w.output()), 30_000, w.output);
    const ms = await stopAndTime(w);
    expect(ms, w.output()).toBeLessThan(GRACE_MS);
    expect(w.child.exitCode).toBe(0);
    expect(w.output()).toMatch(/stopped before it had started/);
  });

  it.each<Start>(['node', 'npx'])(
    '%s: while another process holds the warehouse',
    { timeout: 120_000 },
    async (how) => {
      const dir = tempDir();
      const holder = spawn(process.execPath, ['--import', TSX, HOLD, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
      cleanup.push(() => holder.kill('SIGKILL'));
      await new Promise<void>((r) => holder.stdout?.once('data', () => r()));
      const w = started(how, baseEnv(sim.url, sim.key, dir));
      await until(() => /held by another process/.test(w.output()), 60_000, w.output);
      const ms = await stopAndTime(w);
      expect(ms, w.output().slice(-2000)).toBeLessThan(GRACE_MS);
      // The pass was handed back to the queue, not lost.
      expect(w.output()).toMatch(/handed the job back to the queue/);
    },
  );

  it.each<Start>(['node', 'npx'])('%s: while the API never answers', { timeout: 120_000 }, async (how) => {
    const w = started(how, baseEnv(hungUrl, sim.key, tempDir()));
    await until(() => /pass started/.test(w.output()), 60_000, w.output);
    const ms = await stopAndTime(w);
    expect(ms, w.output().slice(-2000)).toBeLessThan(GRACE_MS);
    expect(w.output()).toMatch(/worker stopped/);
  });

  it('node: a second SIGTERM ends it at once, while the first waits to hand a pass back', {
    timeout: 120_000,
  }, async () => {
    const port = await freePort();
    const redis = await startRedisServer(port, tempDir());
    cleanup.push(() => redis.kill('SIGKILL'));
    const env = { ...baseEnv(hungUrl, sim.key, tempDir(), `redis://127.0.0.1:${port}`), RUNSYNC_SHUTDOWN_GRACE: '60s' };
    const w = started('node', env);
    await until(() => /pass started/.test(w.output()), 60_000, w.output);
    // The pass cannot be handed back while Redis is away: the first stop waits for it.
    redis.kill('SIGTERM');
    await until(() => /redis is unreachable/.test(w.output()), 30_000, w.output);
    w.child.kill('SIGTERM');
    await until(() => /worker stopping/.test(w.output()), 10_000, w.output);
    await new Promise((r) => setTimeout(r, 1000));
    // bin/runsync.js, waiting, and the command it started again with V8's heap ceiling: both alive.
    const both = processesOf(w.prefix);
    expect(both).toHaveLength(2);
    // The command runs with glibc's malloc held to two arenas; the launcher, which holds little, without.
    const tunables = both.map((pid) =>
      readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes('GLIBC_TUNABLES=glibc.malloc.arena_max=2'),
    );
    expect(tunables.sort()).toEqual([false, true]);
    const exited = new Promise((r) => w.child.once('exit', (_code, signal) => r(signal)));
    const t0 = Date.now();
    w.child.kill('SIGTERM');
    expect(await exited).toBe('SIGTERM');
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

// Two workers under one parent, as a supervisor runs them, and one signal to the whole process
// group (systemd's KillMode=control-group, a terminal's Ctrl-C): each worker gets it directly and
// from its launcher too, and must take the two as one graceful stop.
const PARENT = `
const { spawn } = require('node:child_process');
const [bin, n] = process.argv.slice(1);
process.on('SIGTERM', () => undefined);
process.on('SIGINT', () => undefined);
let left = Number(n);
for (let i = 0; i < left; i++) {
  const w = spawn(process.execPath, [bin, 'worker'], { stdio: ['ignore', 'inherit', 'inherit'] });
  w.on('exit', (code, signal) => {
    process.stdout.write('worker exited code=' + code + ' signal=' + signal + '\\n');
    if (--left === 0) process.exit(0);
  });
}`;

describe('one signal to the process group of two workers', () => {
  const dirs: string[] = [];
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSim({ seed: 92, size: 300, days: 5 });
  });
  afterAll(async () => {
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s: both stop gracefully and exit 0 within the grace',
    {
      timeout: 120_000,
    },
    async (signal) => {
      const dir = mkdtempSync(join(tmpdir(), 'runsync-group-'));
      dirs.push(dir);
      const env: Record<string, string> = {
        ...baseEnv(sim.url, sim.key, dir),
        npm_lifecycle_event: '',
        npm_execpath: '',
      };
      const parent = spawn(process.execPath, ['-e', PARENT, BIN, '2'], {
        cwd: ROOT,
        env: { ...process.env, NO_COLOR: '1', LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      parent.stdout?.on('data', (d) => (out += d));
      parent.stderr?.on('data', (d) => (out += d));
      try {
        await until(
          () => (out.match(/worker running/g) ?? []).length >= 2,
          60_000,
          () => out,
        );
        await until(
          () => processesOf(env.RUNSYNC_QUEUE_PREFIX as string).length === 5,
          10_000,
          () => out,
        );
        const t0 = Date.now();
        process.kill(-(parent.pid as number), signal);
        await until(
          () => (out.match(/worker exited/g) ?? []).length >= 2,
          GRACE_MS + 5000,
          () => out.slice(-3000),
        );
        expect(Date.now() - t0).toBeLessThan(GRACE_MS);
        expect(out.match(/worker exited code=0 signal=null/g), out.slice(-3000)).toHaveLength(2);
        expect(out.match(new RegExp(`${signal} received`, 'g')), out.slice(-3000)).toHaveLength(2);
        expect(out).not.toMatch(/stopping at once|Terminated/);
      } finally {
        for (const pid of processesOf(env.RUNSYNC_QUEUE_PREFIX as string)) process.kill(pid, 'SIGKILL');
        await cleanRedis(env.RUNSYNC_QUEUE_PREFIX as string).catch(() => undefined);
      }
    },
  );
});
