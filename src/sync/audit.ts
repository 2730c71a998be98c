import { randomBytes } from 'node:crypto';
import type { ApiStats } from '../api/index.ts';
import { formatTimestamp, type Micros } from '../util/timestamp.ts';
import { toJsonText } from '../warehouse/json-text.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import type { SyncDeps } from './types.ts';

// Every pass leaves a row in _sync_audit: written when it starts (so a killed pass shows as one
// that never finished), completed when it ends with its counts, its requests per endpoint, 429s,
// retries and errors. Requests are what this pass added to the client's and the budget's totals.

export type PassKind = 'sync' | 'reconcile' | 'snapshot' | 'backfill' | 'pending' | 'verify';
export type PassStatus = 'running' | 'ok' | 'partial' | 'failed' | 'interrupted';

export interface RequestTally {
  requests: number;
  rateLimited: number;
  retries: number;
  byStatus: Record<string, number>;
  byEndpoint: Record<string, number>;
}

export function passId(now: Micros): string {
  return `${formatTimestamp(now).replace(/[-:]/g, '').replace(/\.\d+/, '')}-${randomBytes(3).toString('hex')}`;
}

/** Counts requests from the moment it is made. */
export class RequestMeter {
  private readonly start: ApiStats;
  private startEndpoints: Record<string, number> = {};

  private constructor(private readonly deps: SyncDeps) {
    this.start = deps.api.stats();
  }

  static async begin(deps: SyncDeps): Promise<RequestMeter> {
    const m = new RequestMeter(deps);
    if (deps.budget) m.startEndpoints = { ...(await deps.budget.snapshot()).granted };
    return m;
  }

  async tally(): Promise<RequestTally> {
    const now = this.deps.api.stats();
    const byStatus: Record<string, number> = {};
    for (const [k, v] of Object.entries(now.byStatus)) {
      const d = v - (this.start.byStatus[k] ?? 0);
      if (d) byStatus[k] = d;
    }
    const byEndpoint: Record<string, number> = {};
    if (this.deps.budget) {
      for (const [k, v] of Object.entries((await this.deps.budget.snapshot()).granted)) {
        const d = v - (this.startEndpoints[k] ?? 0);
        if (d) byEndpoint[k] = d;
      }
    }
    return {
      requests: now.requests - this.start.requests,
      rateLimited: now.rateLimited - this.start.rateLimited,
      retries: now.retries - this.start.retries,
      byStatus,
      byEndpoint,
    };
  }
}

export async function startAudit(deps: SyncDeps, id: string, kind: PassKind, startedAt: Micros): Promise<void> {
  await deps.gate.use((wh) =>
    wh.run(`INSERT INTO _sync_audit (id, kind, started_at, status) VALUES ($1, $2, ${US_TO_TSTZ('$3')}, 'running')`, [
      id,
      kind,
      BigInt(startedAt),
    ]),
  );
}

export interface AuditEnd {
  status: PassStatus;
  finishedAt: Micros;
  counts: unknown;
  tally: RequestTally;
  errors: string[];
  window: { from: Micros; to: Micros } | null;
}

export async function finishAudit(deps: SyncDeps, id: string, end: AuditEnd): Promise<void> {
  await deps.gate.use((wh) =>
    wh.run(
      `UPDATE _sync_audit SET finished_at = ${US_TO_TSTZ('$2')}, status = $3, counts = $4::JSON,
         requests = $5, rate_limited = $6, errors = $7::JSON, requests_by_endpoint = $8::JSON, retries = $9,
         window_from = ${US_TO_TSTZ('$10')}, window_to = ${US_TO_TSTZ('$11')}
       WHERE id = $1`,
      [
        id,
        BigInt(end.finishedAt),
        end.status,
        toJsonText(end.counts),
        BigInt(end.tally.requests),
        BigInt(end.tally.rateLimited),
        toJsonText(end.errors),
        toJsonText(end.tally.byEndpoint),
        BigInt(end.tally.retries),
        end.window ? BigInt(end.window.from) : null,
        end.window ? BigInt(end.window.to) : null,
      ],
    ),
  );
}
