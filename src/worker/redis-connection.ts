import { Redis } from 'ioredis';
import type { Logger } from '../util/logger.ts';

// The worker's connections to Redis: made to wait through a reconnect, waited for at start in a
// way a stop can end, and their losses told once rather than at every retry.

export function redisConnection(url: string): Redis {
  // BullMQ's workers need commands to wait through a reconnect rather than fail.
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

/** Resolves once the connection is ready; rejects when `signal` aborts first. */
export function untilReady(connection: Redis, signal: AbortSignal | undefined): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      connection.off('ready', ready);
      signal?.removeEventListener('abort', stopped);
    };
    const ready = () => {
      done();
      resolve();
    };
    const stopped = () => {
      done();
      reject(signal?.reason ?? new Error('stopped'));
    };
    if (signal?.aborted) return stopped();
    connection.on('ready', ready);
    signal?.addEventListener('abort', stopped, { once: true });
  });
}

const CONNECTION_ERROR = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection is closed/;

/**
 * One warning when Redis goes away (and a reminder a minute), one line when it is back: a
 * reconnect every few hundred milliseconds, from each of the connections BullMQ holds, is not news
 * each time. Returns the handler for every other emitter of Redis errors; what is not a lost
 * connection is logged as it comes.
 */
export function watchRedis(connections: Redis[], logger: Logger): (e: Error) => void {
  let down: number | null = null;
  let lastNote = 0;
  const onError = (e: Error) => {
    if (!CONNECTION_ERROR.test(e.message)) {
      logger.warn({ err: e.message }, 'worker error');
      return;
    }
    const now = Date.now();
    if (down === null) down = now;
    if (now - lastNote < 60_000) return;
    lastNote = now;
    logger.warn(
      { err: e.message, downForS: Math.round((now - down) / 1000) },
      'redis is unreachable; reconnecting (stop with SIGTERM or Ctrl-C at any time)',
    );
  };
  for (const c of connections) {
    c.on('error', onError);
    c.on('ready', () => {
      if (down === null) return;
      logger.info({ downForS: Math.round((Date.now() - down) / 1000) }, 'redis is reachable again');
      down = null;
      lastNote = 0;
    });
  }
  return onError;
}
