import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import { ROOT } from './paths.ts';

// Runs the CLI in a child process as a user runs `runsync`: the installed bin, on the build in dist/
// (test/support/global-setup.ts builds it when a source is newer).

export { ROOT };

const BIN = join(ROOT, 'bin', 'runsync.js');

export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  opts: { cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawnCli(args, env, opts.cwd);
  return collect(child, opts.timeoutMs ?? 150_000);
}

export function collect(child: ChildProcess, timeoutMs: number): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out after ${timeoutMs} ms; stdout: ${stdout}; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Resolves with the first stdout line matching `pattern`. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${pattern} in ${timeoutMs} ms: ${buf}`)),
      timeoutMs,
    );
    child.stdout?.on('data', (d) => {
      buf += d;
      const line = buf.split('\n').find((l) => pattern.test(l));
      if (line) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.on('exit', () => reject(new Error(`exited before printing ${pattern}: ${buf}`)));
  });
}

/** Runs the CLI in this process, logging silenced; its output lines joined, each ending in \n. */
export async function runMain(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    env: { LOG_LEVEL: 'silent', ...env },
    out: (l) => (out += `${l}\n`),
    err: (l) => (err += `${l}\n`),
    isTty: false,
    signal: new AbortController().signal,
  });
  return { code, out, err };
}
