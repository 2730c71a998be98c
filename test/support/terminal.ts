import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './paths.ts';
import { Screen } from './screen.ts';

// Runs the CLI on a terminal of its own (util-linux `script` gives it a pseudo-terminal), as a
// person at a terminal runs it: stdout and stderr are the terminal, Ctrl-C is a keystroke.

export const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

export interface TerminalRun {
  child: ChildProcess;
  /** What the terminal shows now. */
  screen(): string[];
  /** Presses Ctrl-C: the terminal sends SIGINT to the command's process group. */
  interrupt(): void;
  exited: Promise<number | null>;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function runInTerminal(args: string[], env: Record<string, string>, cwd = ROOT, columns = 160): TerminalRun {
  const command = [process.execPath, join(ROOT, 'bin', 'runsync.js'), ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', `stty cols ${columns} rows 50; exec ${command}`, '/dev/null'], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', TERM: 'xterm', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const screen = new Screen(columns);
  child.stdout?.on('data', (d: Buffer) => screen.feed(d.toString('utf8')));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    screen: () => screen.text(),
    interrupt: () => void child.stdin?.write('\x03'),
    exited,
  };
}
