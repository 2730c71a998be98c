// How a log line reads on a terminal: one line, the time, the level and the message. The fields
// are for machines (the JSON lines written when stderr is not a terminal); a person at a terminal
// gets them only where the message alone would not do: a warning's or an error's scalar fields
// and its error's message, and every field when asked for with LOG_LEVEL=debug or trace.

const RANK: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
/** Fields every line carries, or that the command's own output already shows. */
const QUIET = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'passId', 'jobId', 'backfill']);
/** Fields that tell an info line apart: which job, which kind of pass, how it ended. */
const TELLING = ['job', 'kind', 'status'];

export function rankOf(level: unknown): number {
  return typeof level === 'number' ? level : (RANK[String(level)] ?? 30);
}

function scalar(v: unknown): string | null {
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v === 'string') return v.length > 120 ? `${v.slice(0, 119)}…` : v;
  return null;
}

/** The message and, where they help, the line's fields, for pino-pretty's messageFormat. */
export function terminalMessage(log: Record<string, unknown>, messageKey: string, verbose: boolean): string {
  const msg = String(log[messageKey] ?? '');
  if (!verbose && rankOf(log.level) < rankOf('warn')) {
    const telling = TELLING.filter((k) => typeof log[k] === 'string').map((k) => `${k}=${log[k]}`);
    return telling.length ? `${msg} (${telling.join(', ')})` : msg;
  }
  const err = log.err as { message?: unknown } | string | undefined;
  const reason = typeof err === 'string' ? err : typeof err?.message === 'string' ? err.message : null;
  const fields: string[] = [];
  for (const [k, v] of Object.entries(log)) {
    if (QUIET.has(k) || k === messageKey || k === 'err') continue;
    const text = scalar(v);
    if (text !== null) fields.push(`${k}=${text}`);
    else if (verbose) fields.push(`${k}=${JSON.stringify(v)}`);
  }
  return `${msg}${reason ? `: ${reason}` : ''}${fields.length ? ` (${fields.join(', ')})` : ''}`;
}
