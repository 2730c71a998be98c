#!/usr/bin/env node
// The CLI is compiled to dist/ by `npm install` (the prepare script); `npm start -- …` runs the sources.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('runsync: dist/ is missing; run `npm install` (or `npm run build`) first\n');
  process.exit(2);
}

// V8 fixes its heap ceiling when the process starts, so the share of RUNSYNC_MEMORY_LIMIT that goes
// to V8 is given by starting the command again with --max-old-space-size and --max-semi-space-size
// (unless they were given), and with the allocator's settings (allocatorEnv). This process only
// waits for that one and passes stop signals on.
const { allocatorEnv, heapFlagsFromEnv } = await import(
  new URL('../dist/src/util/memory-budget.js', import.meta.url).href
);
const flags =
  process.env.RUNSYNC_HEAP_SET === undefined
    ? heapFlagsFromEnv(process.env, [...process.execArgv, process.env.NODE_OPTIONS ?? ''])
    : [];
if (flags.length === 0) {
  // Started again by the launcher below: a launcher killed outright (SIGKILL, which it cannot pass
  // on) closes the channel, and the command goes with it rather than running on unseen.
  if (process.env.RUNSYNC_HEAP_SET !== undefined && process.channel) {
    process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
    process.channel.unref();
  }
  const { main } = await import(entry.href);
  process.exitCode = await main(process.argv.slice(2));
} else {
  const child = spawn(
    process.execPath,
    [...process.execArgv, ...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...allocatorEnv(process.env), RUNSYNC_HEAP_SET: '1' },
    },
  );
  // Stop signals go on as a message, which the command pairs with the signal itself when a whole
  // process group was signalled (src/cli/stop-signals.ts); others as they are. Ctrl-C at a terminal
  // reaches both processes already.
  const forwarded = process.stdin.isTTY ? ['SIGTERM', 'SIGHUP'] : ['SIGTERM', 'SIGHUP', 'SIGINT'];
  // A command whose channel is closed is exiting already: nothing to pass on.
  const passOn = (s) => {
    if (s === 'SIGHUP') child.kill(s);
    else if (child.connected) child.send({ signal: s }, () => undefined);
  };
  for (const s of forwarded) process.on(s, () => passOn(s));
  if (process.stdin.isTTY) process.on('SIGINT', () => undefined);
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const s of forwarded) process.removeAllListeners(s);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
