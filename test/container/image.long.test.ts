import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { type CliResult, collect, ROOT } from '../support/cli.ts';
import { startSim } from '../sync/kit.ts';
import { cleanRedis, REDIS_URL, uniquePrefix } from '../worker/kit.ts';
import { envOf, parseDockerfile } from './dockerfile.ts';

// The image without Docker: the Dockerfile's steps replayed in a scratch folder, each stage a
// folder standing for its file system (/app, /data mapped into it), the build's steps as root as
// Docker runs them, then the image's entrypoint run as a user of its own, as USER says, with the
// image's environment: `sync`, `worker` and `demo` write the warehouse on the volume and need
// nothing else writable. npm ci takes a while, so this is one of the long suites; it needs root to
// make the user.

const canMakeUsers = process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v useradd']).status === 0;
const why = !canMakeUsers ? ' (skipped: running as the image user needs root and useradd)' : '';
const USER = `rsimg${Math.random().toString(36).slice(2, 8)}`;

interface Image {
  root: string;
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[];
  user: string;
}

/** Replays every stage; returns the last one as an image: its folder, workdir, env, entrypoint. */
function replay(scratch: string, dockerfile: string, user: string): Image {
  const stages = parseDockerfile(dockerfile);
  const roots = new Map<string, string>();
  let image: Image | null = null;
  stages.forEach((stage, i) => {
    const root = join(scratch, `stage-${i}`);
    mkdirSync(root, { recursive: true, mode: 0o755 });
    chmodSync(root, 0o755);
    if (stage.name) roots.set(stage.name, root);
    const at = (p: string) => join(root, p);
    // A container path in a command or a setting, moved into the stage's folder.
    const mapped = (text: string) => text.replace(/(^|[\s=:])\/(app|data|warehouse)(?=[/\s]|$)/g, `$1${root}/$2`);
    let workdir = '/';
    let env: Record<string, string> = {};
    let runAs = 'root';
    let entrypoint: string[] = [];
    for (const { kind, args } of stage.steps) {
      if (kind === 'WORKDIR') {
        workdir = posix.resolve(workdir, args);
        mkdirSync(at(workdir), { recursive: true, mode: 0o755 });
      } else if (kind === 'ENV') env = { ...env, ...envOf(args) };
      else if (kind === 'USER') runAs = args === 'node' ? user : args;
      else if (kind === 'ENTRYPOINT') entrypoint = JSON.parse(args) as string[];
      else if (kind === 'COPY') {
        const words = args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const paths = words.filter((w) => !w.startsWith('--'));
        const written = paths.pop() as string;
        const dest = posix.resolve(workdir, written);
        // Several sources, or a destination ending in a slash: into that folder.
        const into = paths.length > 1 || written.endsWith('/');
        for (const src of paths) {
          const source = from ? join(roots.get(from) as string, src) : join(ROOT, src);
          const target = into ? join(at(dest), posix.basename(src)) : at(dest);
          cpSync(source, target, {
            recursive: true,
            filter: (p) => !/\/(node_modules|dist|\.git)(\/|$)/.test(p.slice(ROOT.length)) || !!from,
          });
        }
      } else if (kind === 'RUN') {
        const command = mapped(args).replace(/\bnode:node\b/g, `${user}:${user}`);
        const ids = runAs === 'root' ? {} : { uid: uidOf(runAs), gid: uidOf(runAs) };
        const r = spawnSync('sh', ['-c', command], {
          cwd: at(workdir),
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '/root',
            ...env,
            npm_config_prefer_offline: 'true',
          },
          encoding: 'utf8',
          maxBuffer: 64 << 20,
          ...ids,
        });
        expect(r.status, `RUN ${args}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-3000)}`).toBe(0);
      }
    }
    image = {
      root,
      workdir: at(workdir),
      env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, mapped(v)])),
      entrypoint,
      user: runAs,
    };
  });
  return image as unknown as Image;
}

function uidOf(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}

describe(`the image, its Dockerfile replayed without Docker${why}`, () => {
  let scratch = '';
  let image: Image;
  let sim: Simulator;
  let home = '';
  const prefix = uniquePrefix();
  beforeAll(async () => {
    if (why) return;
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', USER]);
    scratch = mkdtempSync(join(tmpdir(), 'runsync-image-'));
    chmodSync(scratch, 0o711);
    home = join(scratch, 'home');
    mkdirSync(home);
    execFileSync('chown', [`${USER}:${USER}`, home]);
    image = replay(scratch, readFileSync(join(ROOT, 'Dockerfile'), 'utf8'), USER);
    sim = await startSim({ seed: 31, size: 150, days: 3 });
  }, 900_000);
  afterAll(async () => {
    await sim?.close();
    if (!why) {
      await cleanRedis(prefix);
      spawnSync('userdel', [USER]);
      spawnSync('groupdel', [USER]);
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** `docker run IMAGE args…` with `-e` settings: the entrypoint as the image's user. */
  const run = (args: string[], extra: Record<string, string> = {}) => {
    const [node, ...rest] = image.entrypoint;
    expect(node).toBe('node');
    const child = spawn(process.execPath, [...rest, ...args], {
      cwd: image.workdir,
      env: { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1', ...image.env, ...extra },
      uid: uidOf(image.user),
      gid: uidOf(image.user),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { child, done: collect(child, 300_000) };
  };

  it.skipIf(Boolean(why))('runs as a user that is not root, over an /app it cannot write', () => {
    expect(image.user).toBe(USER);
    expect(image.env.RUNSYNC_WAREHOUSE_DIR).toBe(join(image.root, 'data', 'warehouse'));
    expect(existsSync(join(image.workdir, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    expect(statSync(image.workdir).uid).toBe(0);
    const w = spawnSync('sh', ['-c', 'test -w .'], { cwd: image.workdir, uid: uidOf(USER), gid: uidOf(USER) });
    expect(w.status).not.toBe(0);
  });

  it.skipIf(Boolean(why))('sync writes the warehouse on the volume', { timeout: 300_000 }, async () => {
    const r: CliResult = await run(['sync'], { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key }).done;
    expect(r.code, r.stderr.slice(-3000)).toBe(0);
    const db = join(image.env.RUNSYNC_WAREHOUSE_DIR as string, 'runsync.duckdb');
    expect(statSync(db).uid).toBe(uidOf(USER));
  });

  it.skipIf(Boolean(why))('worker runs its first pass there and stops cleanly', { timeout: 300_000 }, async () => {
    const w = run(['worker'], {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      REDIS_URL,
      RUNSYNC_QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'info',
    });
    let out = '';
    w.child.stderr?.on('data', (d) => (out += d));
    const deadline = Date.now() + 180_000;
    while (!/"msg":"pass finished"/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(out).toMatch(/"msg":"pass finished"/);
    w.child.kill('SIGTERM');
    const r = await w.done;
    expect(r.code, out.slice(-3000)).toBe(0);
  });

  it.skipIf(Boolean(why))('demo runs in a warehouse of its own on the volume', { timeout: 300_000 }, async () => {
    const dir = join(image.root, 'data', 'demo');
    const r = await run(['demo'], { RUNSYNC_WAREHOUSE_DIR: dir }).done;
    expect(r.code, r.stderr.slice(-3000)).toBe(0);
    expect(r.stdout).toMatch(/first pass : 2000 runs listed/);
    expect(statSync(join(dir, 'runsync.duckdb')).uid).toBe(uidOf(USER));
  });
});
