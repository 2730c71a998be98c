// Errors a person sees as one line: what happened, to which file, and what to do.

/** Another process holds the DuckDB file (DuckDB allows one writer and no reader beside it). */
export class WarehouseLockedError extends Error {
  override readonly name = 'WarehouseLockedError';
  constructor(
    readonly file: string,
    readonly holderPid: number | null,
    readonly holder: string | null,
  ) {
    super(
      `the warehouse ${file} is in use by ${holderName(holderPid, holder)}; try again when it finishes,` +
        ' or read analytics.duckdb beside it, which is never locked',
    );
  }
}

/** Who holds the file, as far as DuckDB's lock error says. */
export function holderName(pid: number | null, holder: string | null): string {
  if (pid === null) return 'another process';
  return `process ${pid}${holder ? ` (${holder})` : ''}`;
}

/** The first line of what DuckDB said: its messages go on with context a log line does not need. */
export function firstLineOf(e: unknown): string {
  return String((e as Error)?.message ?? e).split('\n')[0] as string;
}

/** The file exists but is not a warehouse this version can use. */
export class WarehouseSchemaError extends Error {
  override readonly name = 'WarehouseSchemaError';
}

/**
 * DuckDB refused a commit (out of memory while it wrote the transaction to its log or merged an
 * index, or undoing that): nothing of the transaction is in the file, and the handle has opened
 * the file afresh. The message is DuckDB's.
 */
export class WarehouseCommitError extends Error {
  override readonly name = 'WarehouseCommitError';
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

const LOCK = /Could not set lock on file "([^"]+)"(?:: Conflicting lock is held in (.*?) \(PID (\d+)\))?/;

export function lockErrorOf(e: unknown, file: string): WarehouseLockedError | null {
  const message = e instanceof Error ? e.message : String(e);
  const m = LOCK.exec(message);
  if (!m && !/Conflicting lock/i.test(message)) return null;
  return new WarehouseLockedError(m?.[1] ?? file, m?.[3] ? Number(m[3]) : null, m?.[2] ?? null);
}
