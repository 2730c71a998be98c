// What every command receives: where to write, the environment, and a signal that fires on
// SIGINT/SIGTERM. Commands return an exit code: 0 success, 1 the sync failed, 2 bad usage or config.

export interface CliContext {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  /** Whether stdout is a terminal (progress bars, pretty logs). */
  isTty: boolean;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Thrown for bad usage or configuration; printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
