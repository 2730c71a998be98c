import { readFileSync } from 'node:fs';
import { processAlive } from '../util/process-alive.ts';

// How a command stops. The first SIGTERM or SIGINT aborts the command's signal: the command
// finishes or hands back what it is doing. Whatever it is stuck on (Redis gone, a file held by
// another process, an API that does not answer, a file system that does not return), the process
// exits when RUNSYNC_SHUTDOWN_GRACE runs out. A second signal ends it at once: the handlers are
// gone by then, so the system's default action applies even while JavaScript is blocked (as
// process 1 of a container, where the default action does nothing, a handler exits instead).
//
// One stop often arrives more than once: a supervisor or a terminal signals the whole process
// group (systemd's KillMode=control-group, Ctrl-C), so the command gets it both directly and from
// the launcher (bin/runsync.js) that passes signals on. Signals within SAME_STOP_MS of the first
// are that same stop; only one sent later, on purpose, is a second.
//
// Started through npm (`npx runsync …`, `npm start -- …`), the signal a supervisor sends reaches
// npm, which passes it to the shell it started, not to node: the shell dies and node would run on
// as an orphan. So a process started by npm also stops, as on SIGTERM, when the npm process above
// it (or its parent) is gone.

export interface StopOptions {
  controller: AbortController;
  graceMs: number;
  env: NodeJS.ProcessEnv;
  /** Where the one-line notices go (stderr). */
  notice: (line: string) => void;
  exit: (code: number) => void;
  /** Exit code when the grace runs out. */
  lateExitCode: number;
}

export interface StopHandling {
  /** Whether a stop was asked for (signal, or the launcher gone). */
  readonly requested: boolean;
  dispose(): void;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
const SIGNAL_NUMBER: Record<(typeof SIGNALS)[number], number> = { SIGTERM: 15, SIGINT: 2 };
const WATCH_EVERY_MS = 1000;
/** How long after the first stop signal another one is taken as the same delivery. */
export const SAME_STOP_MS = 1000;

export function handleStopSignals(o: StopOptions): StopHandling {
  let requested = false;
  let deadline: NodeJS.Timeout | null = null;
  let watch: NodeJS.Timeout | null = null;
  const immediate = (signal: (typeof SIGNALS)[number]) => () => o.exit(128 + SIGNAL_NUMBER[signal]);
  const afterFirst = SIGNALS.map((s) => [s, immediate(s)] as const);

  let echoes: NodeJS.Timeout | null = null;
  const echo = () => undefined;
  const stop = (why: string) => {
    if (requested) return;
    requested = true;
    for (const [s, h] of handlers) process.off(s, h);
    if (watch) clearInterval(watch);
    for (const s of SIGNALS) process.on(s, echo);
    echoes = setTimeout(() => {
      for (const s of SIGNALS) process.off(s, echo);
      if (process.pid === 1) for (const [s, h] of afterFirst) process.once(s, h);
    }, SAME_STOP_MS);
    echoes.unref();
    const seconds = Math.round(o.graceMs / 100) / 10;
    o.notice(`runsync: ${why}; stopping within ${seconds} s (RUNSYNC_SHUTDOWN_GRACE); a second signal stops at once`);
    // Before the grace ends, by enough that a busy machine (the timer late, the exit itself slow)
    // still has the process gone within it.
    const at = Math.max(o.graceMs - Math.min(1500, o.graceMs / 4), 1);
    deadline = setTimeout(() => {
      o.notice(`runsync: still stopping after ${seconds} s; exiting now, unfinished work is taken up by the next run`);
      o.exit(o.lateExitCode);
    }, at);
    // Only a process that would otherwise linger needs it.
    deadline.unref();
    o.controller.abort(new Error(`stopped by ${why}`));
  };

  const handlers = SIGNALS.map((s) => [s, () => stop(`${s} received`)] as const);
  for (const [s, h] of handlers) process.once(s, h);

  const launcher = npmAncestors(o.env);
  if (launcher) {
    const firstParent = process.ppid;
    watch = setInterval(() => {
      if (process.ppid !== firstParent || launcher.some((pid) => !processAlive(pid)))
        stop('npm, which started this process, has exited');
    }, WATCH_EVERY_MS);
    watch.unref();
  }

  return {
    get requested() {
      return requested;
    },
    dispose() {
      for (const [s, h] of handlers) process.off(s, h);
      for (const [s, h] of afterFirst) process.off(s, h);
      if (echoes) clearTimeout(echoes);
      for (const s of SIGNALS) process.off(s, echo);
      // The deadline stays: a command that returned after a stop must still be gone in time.
      if (watch) clearInterval(watch);
    },
  };
}

/**
 * The processes between this one and the npm that started it, npm included; null when npm did not
 * start it. On systems without /proc, the parent alone.
 */
export function npmAncestors(env: NodeJS.ProcessEnv): number[] | null {
  if (!env.npm_lifecycle_event && !env.npm_execpath) return null;
  const chain: number[] = [];
  let pid = process.ppid;
  for (let depth = 0; depth < 6 && pid > 1; depth++) {
    chain.push(pid);
    const stat = readProc(pid, 'stat');
    const cmdline = readProc(pid, 'cmdline');
    if (stat === null || cmdline === null) return chain.slice(0, 1);
    if (/(^|[\s/])(npm|npx)([\s]|-cli\.js|$)/.test(cmdline.replace(/\0/g, ' '))) return chain;
    // The parent's pid is the field after the command name, which may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!Number.isInteger(ppid)) break;
    pid = ppid;
  }
  return chain.slice(0, 1);
}

function readProc(pid: number, file: string): string | null {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return null;
  }
}
