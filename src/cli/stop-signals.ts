import { readFileSync } from 'node:fs';
import { processAlive } from '../util/process-alive.ts';

// How a command stops. The first SIGTERM or SIGINT aborts the command's signal: the command
// finishes or hands back what it is doing. Whatever it is stuck on (Redis gone, a file held by
// another process, an API that does not answer, a file system that does not return), the process
// exits when RUNSYNC_SHUTDOWN_GRACE runs out. A second signal ends it at once: the handlers are
// gone by then, so the system's default action applies even while JavaScript is blocked (as
// process 1 of a container, where the default action does nothing, a handler exits instead).
//
// One stop often arrives twice: a supervisor or a terminal signals the whole process group
// (systemd's KillMode=control-group, Ctrl-C), so the command gets the signal itself and, as a
// message, from the launcher (bin/runsync.js) that passes signals on. A signal and a message of
// the same kind are paired as one delivery, in whichever order they come and however late (up to
// PAIR_MS); only an unpaired one is a second stop. Once its twin has come (or cannot come: no
// launcher passes that signal on), the first stop's handlers go.
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
/** How far apart a signal and the launcher's message of it may come and still be one delivery. */
export const PAIR_MS = 10_000;

type StopSignal = (typeof SIGNALS)[number];
type Origin = 'signal' | 'launcher';

export function handleStopSignals(o: StopOptions): StopHandling {
  let requested = false;
  let deadline: NodeJS.Timeout | null = null;
  let watch: NodeJS.Timeout | null = null;
  const exitNow = (signal: StopSignal) => () => o.exit(128 + SIGNAL_NUMBER[signal]);
  const afterFirst = SIGNALS.map((s) => [s, exitNow(s)] as const);
  // A second stop ends the process as the signal's own default action would (process 1 of a
  // container has none, so it exits).
  const immediate = (signal: StopSignal) => () => {
    for (const [s, h] of handlers) process.off(s, h);
    if (process.pid === 1) exitNow(signal)();
    else process.kill(process.pid, signal);
  };
  // Deliveries not yet paired with their twin of the other origin.
  let unpaired: { origin: Origin; signal: StopSignal; at: number }[] = [];
  const passedOn = launcherPassesOn(o.env);

  const handOver = () => {
    for (const [s, h] of handlers) process.off(s, h);
    if (process.pid === 1) for (const [s, h] of afterFirst) process.once(s, h);
  };
  const delivered = (origin: Origin, signal: StopSignal) => {
    const now = Date.now();
    unpaired = unpaired.filter((d) => now - d.at < PAIR_MS);
    const twin = unpaired.findIndex((d) => d.origin !== origin && d.signal === signal);
    if (twin >= 0) {
      unpaired.splice(twin, 1);
      if (requested && unpaired.length === 0) handOver();
      return;
    }
    if (requested) return immediate(signal)();
    const waitForTwin = passedOn.has(signal) || origin === 'launcher';
    unpaired.push({ origin, signal, at: now });
    stop(`${signal} received`);
    if (!waitForTwin) handOver();
  };

  const stop = (why: string) => {
    if (requested) return;
    requested = true;
    if (watch) clearInterval(watch);
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

  const handlers = SIGNALS.map((s) => [s, () => delivered('signal', s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  const fromLauncher = (m: unknown) => {
    const signal = (m as { signal?: unknown } | null)?.signal;
    if (signal === 'SIGTERM' || signal === 'SIGINT') delivered('launcher', signal);
  };
  if (process.channel) {
    process.on('message', fromLauncher);
    // Listening must not keep a command alive that has finished.
    process.channel.unref();
  }

  const launcher = npmAncestors(o.env);
  if (launcher) {
    const firstParent = process.ppid;
    watch = setInterval(() => {
      if (process.ppid !== firstParent || launcher.some((pid) => !processAlive(pid))) {
        stop('npm, which started this process, has exited');
        handOver();
      }
    }, WATCH_EVERY_MS);
    watch.unref();
  }

  return {
    get requested() {
      return requested;
    },
    dispose() {
      // A stop's twin may still be on its way: a command that returned at once after a stop must
      // not be killed by it, so the handlers stay until it comes.
      if (!requested || unpaired.length === 0) for (const [s, h] of handlers) process.off(s, h);
      for (const [s, h] of afterFirst) process.off(s, h);
      process.off('message', fromLauncher);
      // The deadline stays: a command that returned after a stop must still be gone in time.
      if (watch) clearInterval(watch);
    },
  };
}

/**
 * The signals bin/runsync.js passes on to the command it started again (as a message): SIGTERM
 * always, SIGINT unless a terminal sends it to both. None when no launcher started this process.
 */
export function launcherPassesOn(env: NodeJS.ProcessEnv): Set<StopSignal> {
  if (env.RUNSYNC_HEAP_SET === undefined || !process.channel) return new Set();
  return new Set(process.stdin.isTTY ? ['SIGTERM'] : ['SIGTERM', 'SIGINT']);
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
