import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import { type DestinationStream, type LogFn, type Logger, pino } from 'pino';
import { rankOf, terminalMessage } from './log-terminal.ts';
import { formatTimestamp } from './timestamp.ts';

export type { Logger } from 'pino';

// Logs are pino JSON, pretty on a terminal. Every secret registered here (the API key above all)
// is replaced in the finished line, whatever field or message it hid in, before it is written.

export interface LoggerOptions {
  level?: string;
  /** Pretty, coloured lines for a person at a terminal. */
  pretty?: boolean;
  /** Colours in pretty lines (default: unless NO_COLOR is set). */
  color?: boolean;
  /** Lines to leave out at the moment (say, progress lines while a progress bar shows them). */
  leaveOut?: (message: string, level: number) => boolean;
  /** Values that must never be written. */
  secrets?: readonly string[];
  /** Where lines go; default stderr (stdout is for command output). */
  destination?: { write(line: string): unknown };
  base?: Record<string, unknown>;
}

export const REDACTED = '[REDACTED]';

/**
 * Fields every line logged inside `withLogFields` carries, whichever logger writes it: a pass's
 * id reaches the lines of the API client, the budget and the warehouse, which were given their
 * logger before the pass began.
 */
const logFields = new AsyncLocalStorage<Record<string, unknown>>();

export function withLogFields<T>(fields: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
  return logFields.run({ ...logFields.getStore(), ...fields }, fn);
}

export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 8) out = out.split(s).join(REDACTED);
  return out;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 8);
  const target = options.destination ?? process.stderr;
  let write: (line: string) => unknown = (line) => target.write(line);
  if (options.pretty) {
    // pino-pretty as a synchronous stream keeps ordering with the process's other output.
    const prettyFactory = loadPretty();
    if (prettyFactory) {
      const verbose = rankOf(options.level ?? 'info') < rankOf('info');
      const prettify = prettyFactory({
        colorize: options.color ?? !process.env.NO_COLOR,
        translateTime: 'HH:MM:ss',
        ignore: 'pid,hostname',
        hideObject: true,
        singleLine: true,
        messageFormat: (log: Record<string, unknown>, key: string) => terminalMessage(log, key, verbose),
      });
      // With the fields hidden, pino-pretty leaves the line without its end.
      write = (line) => {
        const text = prettify(line);
        return target.write(text.endsWith('\n') ? text : `${text}\n`);
      };
    }
  }
  const stream: DestinationStream = {
    write(line: string) {
      write(secrets.length ? redactText(line, secrets) : line);
    },
  };
  return pino(
    {
      level: options.level ?? 'info',
      base: options.base ?? null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: isoTimes },
      hooks: {
        logMethod(this: Logger, args: Parameters<LogFn>, method: LogFn, level: number) {
          if (options.leaveOut?.(messageOf(args), level)) return;
          method.apply(this, args);
        },
      },
      // A copy: pino merges a line's own fields into the object the mixin returns, and the store's
      // object would otherwise keep them for every later line of the same context.
      mixin: () => ({ ...logFields.getStore() }),
    },
    stream,
  );
}

// Times inside runsync are microseconds since 1970; a log line shows them as the API writes
// them, ISO 8601 in UTC (`from`, `to`, `at` and the names ending in `At`). A number too small to be
// such a time (a slice's index, a count) is left as it is.
const TIME_FIELD = /^(from|to|at|.+At)$/;
const MICROS_1973 = 1e14;
const MICROS_5000 = 1e17;

function isoTimes(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v !== 'number' || !TIME_FIELD.test(k) || v < MICROS_1973 || v >= MICROS_5000) continue;
    out ??= { ...fields };
    out[k] = formatTimestamp(v);
  }
  return out ?? fields;
}

function messageOf(args: Parameters<LogFn>): string {
  const [first, second] = args as unknown[];
  return String(typeof first === 'string' ? first : (second ?? ''));
}

type PrettyFactory = (opts: Record<string, unknown>) => (line: string) => string;
let prettyCache: PrettyFactory | null | undefined;

function loadPretty(): PrettyFactory | null {
  if (prettyCache !== undefined) return prettyCache;
  try {
    // pino-pretty is CommonJS; createRequire keeps this module synchronous.
    const mod = createRequire(import.meta.url)('pino-pretty') as { prettyFactory?: PrettyFactory };
    prettyCache = mod.prettyFactory ?? null;
  } catch {
    prettyCache = null;
  }
  return prettyCache;
}

/** A logger that drops everything, for tests and library callers that pass none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
