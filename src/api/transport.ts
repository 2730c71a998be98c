import type { Dispatcher } from 'undici';
import { header } from '../budget/headers.ts';
import type { BudgetClock, Grant, HeaderMap, RateBudget } from '../budget/types.ts';
import { type Logger, redactText } from '../util/logger.ts';
import type { EndpointName } from './endpoints.ts';
import { encodeQuery, type QueryPair } from './filters.ts';
import { InFlightGauge } from './in-flight.ts';
import { backoffDelay, classify, type Expect, type Outcome, type RetryPolicy, type Verdict } from './retry.ts';

import type { ServerClock } from './server-clock.ts';
import type { RequestTimeouts } from './timeouts.ts';

// Sends one GET through the budget, the pool and the retry policy: the only code that does HTTP.

export interface TransportOptions {
  /** Origin of the API, e.g. https://support.example.com. */
  origin: string;
  /** Path prefix ending in /api/v1. */
  basePath: string;
  apiKey: string;
  dispatcher: Dispatcher;
  budget: RateBudget;
  logger: Logger;
  retry: RetryPolicy;
  /** How long each phase of an attempt may take (timeouts.ts). */
  timeouts: RequestTimeouts;
  /** The API's clock, learned from the Date header of every response. */
  serverClock: ServerClock;
  clock: BudgetClock;
  random: () => number;
  userAgent: string;
}

export interface ApiStats {
  /** Attempts sent, by outcome: HTTP status, or 0 for no response. */
  requests: number;
  byStatus: Record<string, number>;
  retries: number;
  rateLimited: number;
  invalidRecords: number;
}

export interface GetRequest {
  endpoint: EndpointName;
  /** Path below /api/v1, already encoded. */
  path: string;
  query?: readonly QueryPair[];
  expect: Expect;
  signal?: AbortSignal | undefined;
  /** Told each time an attempt goes on the wire (after its budget turn). */
  onSend?: (() => void) | undefined;
  /** Attempts at most, fewer than the retry policy's (a request that only helps, never needed). */
  maxAttempts?: number;
}

export interface GetResult {
  body: Record<string, unknown>;
  requestId: string | null;
}

export class ApiTransport {
  readonly stats: ApiStats = { requests: 0, byStatus: {}, retries: 0, rateLimited: 0, invalidRecords: 0 };
  private readonly secrets: string[];
  /** What detail fetches have seen, for how many to keep in flight. */
  readonly details: InFlightGauge;

  constructor(private readonly o: TransportOptions) {
    this.secrets = [o.apiKey];
    this.details = new InFlightGauge(() => o.clock.now());
  }

  /** How long an answer of `endpoint` nearly always takes once sent (null: not known yet). */
  usualAnswerMs(endpoint: EndpointName): number | null {
    return this.o.timeouts.usualMs(endpoint);
  }

  redact(text: string): string {
    return redactText(text, this.secrets);
  }

  async get(req: GetRequest): Promise<GetResult> {
    const path = `${this.o.basePath}${req.path}`;
    const fullPath = `${path}${encodeQuery(req.query ?? [])}`;
    const { retry, budget, logger } = this.o;
    let attempts = 0;
    let waits = 0;
    for (;;) {
      const grant = await budget.acquire(req.endpoint, req.signal);
      if (grant.probe) {
        await this.probe(grant, req.signal);
        continue;
      }
      attempts++;
      const detail = req.endpoint === 'runs.get';
      if (detail) this.details.granted(grant.paced ?? null);
      const sentAt = this.o.clock.now();
      req.onSend?.();
      const outcome = await this.send(fullPath, req.endpoint, req.signal);
      if (detail && outcome.kind === 'response') this.details.answered(this.o.clock.now() - sentAt);
      const status = outcome.kind === 'response' ? outcome.status : 0;
      this.stats.requests++;
      this.stats.byStatus[status] = (this.stats.byStatus[status] ?? 0) + 1;
      const verdict = classify(outcome, {
        endpoint: req.endpoint,
        path,
        expect: req.expect,
        redact: (t) => this.redact(t),
        nowMs: this.o.clock.now(),
      });
      await this.tell(req.endpoint, outcome, verdict, grant);
      switch (verdict.action) {
        case 'ok':
          return { body: verdict.body, requestId: verdict.requestId };
        case 'fatal':
          throw verdict.error.noteAttempts(attempts);
        case 'wait': {
          // A 429 is the budget's business, not a failed attempt; it only counts against its own bound.
          attempts--;
          waits++;
          this.stats.rateLimited++;
          // A wait longer than we allow fails fast rather than holding every caller that long.
          if (verdict.waitMs > retry.maxRetryAfterMs) throw verdict.error;
          if (waits > retry.maxRateLimitWaits) throw verdict.error;
          logger.info(
            { endpoint: req.endpoint, waitMs: verdict.waitMs, requestId: verdict.error.requestId },
            'rate limited; every request waits for Retry-After',
          );
          break;
        }
        case 'retry': {
          if (attempts >= Math.min(retry.maxAttempts, req.maxAttempts ?? Infinity))
            throw verdict.error.noteAttempts(attempts);
          const delay = Math.max(backoffDelay(attempts, retry, this.o.random), verdict.minDelayMs);
          this.stats.retries++;
          logger.warn(
            { endpoint: req.endpoint, attempt: attempts, delayMs: delay, error: verdict.error.message },
            'retrying after a retriable failure',
          );
          await this.o.clock.sleep(delay, req.signal);
          break;
        }
      }
    }
  }

  /**
   * Tells the budget of an answer. A 429's pause comes first, so no turn is handed out between it
   * and the wait for a figure the 429 starts; the bucket that refused holds every caller drawing on
   * it, even when this one gives up. A wait longer than we allow holds no one. No answer at all is
   * told as status 0, so a probe that got none hands its place to the next turn.
   */
  private async tell(endpoint: EndpointName, outcome: Outcome, verdict: Verdict, grant: Grant): Promise<void> {
    const { budget, retry } = this.o;
    if (outcome.kind !== 'response') return budget.observe(endpoint, 0, {}, grant);
    if (verdict.action === 'wait' && verdict.waitMs <= retry.maxRetryAfterMs)
      await budget.pause(verdict.waitMs, endpoint, outcome.headers);
    await budget.observe(endpoint, outcome.status, outcome.headers, grant);
  }

  /**
   * A one-item runs-list page sent on a turn the budget gave for it, for its X-RateLimit-* headers,
   * which only runs-list pages carry (docs/rate-budget.md: after a 429's pause, and when the
   * figures grow old). Its answer is told to the budget; its failures are not anyone's to report.
   */
  private async probe(grant: Grant, signal: AbortSignal | undefined): Promise<void> {
    const path = `${this.o.basePath}/runs${encodeQuery([['limit', '1']])}`;
    const outcome = await this.send(path, 'runs.list', signal);
    this.stats.requests++;
    const status = outcome.kind === 'response' ? outcome.status : 0;
    this.stats.byStatus[status] = (this.stats.byStatus[status] ?? 0) + 1;
    if (outcome.kind !== 'response') {
      this.o.logger.debug({ error: this.redact(String(outcome.error)) }, 'a rate probe failed');
    } else if (outcome.status === 429) this.stats.rateLimited++;
    const verdict = classify(outcome, {
      endpoint: 'runs.list',
      path,
      expect: 'list',
      redact: (t) => this.redact(t),
      nowMs: this.o.clock.now(),
    });
    await this.tell('runs.list', outcome, verdict, grant);
  }

  private async send(path: string, endpoint: EndpointName, signal: AbortSignal | undefined): Promise<Outcome> {
    // The caller's signal and the timeout joined by hand: AbortSignal.any leaves a reference on the
    // caller's signal for every request that outlives it in Node 20, which a first sync of a large
    // account makes by the hundred thousand, and the timer is cleared as soon as the answer is in.
    const combined = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      combined.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, this.o.timeouts.settings.requestMs);
    const waits = this.o.timeouts.forAttempt(endpoint);
    const sentAt = Date.now();
    const onAbort = () => combined.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    // Known once the headers are in, so a body cut short still names the request the server logged.
    let status: number | null = null;
    let requestId: string | null = null;
    try {
      const res = await this.o.dispatcher.request({
        origin: this.o.origin,
        path,
        method: 'GET',
        headers: {
          authorization: `Bearer ${this.o.apiKey}`,
          accept: 'application/json',
          'user-agent': this.o.userAgent,
        },
        signal: combined.signal,
        headersTimeout: waits.headersMs,
        bodyTimeout: waits.bodyMs,
      });
      const headersAt = Date.now();
      status = res.statusCode;
      const headers = res.headers as HeaderMap;
      requestId = header(headers, 'x-request-id');
      this.o.serverClock.observe(header(headers, 'date'), sentAt, headersAt);
      const body = await res.body.text();
      this.o.timeouts.answered(endpoint, headersAt - sentAt, Date.now() - headersAt);
      return { kind: 'response', status: res.statusCode, headers: this.o.serverClock.toLocal(headers), body };
    } catch (error) {
      // The caller's own cancellation is not a failure to classify or retry.
      if (signal?.aborted) throw signal.reason;
      return { kind: 'exception', error, timedOut, status, requestId };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
