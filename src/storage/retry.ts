import { setTimeout as sleep } from 'node:timers/promises';
import { retryAction } from './errors.ts';

// Retries a store operation as retryAction() says: throttling and outages with exponential
// backoff and full jitter (many workers throttled together do not come back together), expired
// credentials once, after reading them again. Anything else fails at once.

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseMs: 200, maxMs: 15_000 };

export interface RetryHooks {
  /** Reads the credentials again (after an ExpiredToken). */
  refresh(): Promise<void> | void;
  /** Told of each retry, before its wait. */
  onRetry?(e: unknown, attempt: number, waitMs: number): void;
  signal?: AbortSignal;
}

export async function withRetry<T>(fn: () => Promise<T>, policy: RetryPolicy, hooks: RetryHooks): Promise<T> {
  let refreshed = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const action = retryAction(e);
      if (action === 'fatal' || attempt >= policy.attempts || hooks.signal?.aborted) throw e;
      if (action === 'refresh-credentials') {
        // Credentials read again and refused again are not going to get better by waiting.
        if (refreshed) throw e;
        refreshed = true;
        hooks.onRetry?.(e, attempt, 0);
        await hooks.refresh();
        continue;
      }
      const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
      const wait = Math.round(Math.random() * cap);
      hooks.onRetry?.(e, attempt, wait);
      await sleep(wait, undefined, hooks.signal ? { signal: hooks.signal } : undefined);
    }
  }
}
