import type { ServerResponse } from 'node:http';
import { formatTimestamp, parseDuration, parseTimestamp } from '../util/timestamp.ts';
import type { FaultConfig } from './faults.ts';
import { RATE_MODELS } from './limiters.ts';
import type { RateLimitConfig } from './rate-limit.ts';
import { errorBody, type ServerContext, sendJson } from './server.ts';

// Control endpoints under /_sim/ for a simulator running in another process (docker compose,
// `runsync simulate`): move the clock, switch faults, manage keys, read counters. Not part of the
// Export API; tests in the same process call the Simulator object instead.

export function handleAdmin(
  ctx: ServerContext,
  method: string,
  path: string,
  _query: URLSearchParams,
  rawBody: string,
  res: ServerResponse,
): void {
  let body: Record<string, unknown> = {};
  if (rawBody.trim() !== '') {
    try {
      body = JSON.parse(rawBody) as Record<string, unknown>;
    } catch {
      return sendJson(res, 400, errorBody('invalid_request', 'body must be JSON', 'sim_admin'));
    }
  }
  const route = `${method} ${path}`;
  try {
    switch (route) {
      case 'GET /_sim/health':
        return sendJson(res, 200, { ok: true, now: formatTimestamp(ctx.world.now()) });
      case 'GET /_sim/clock':
        return sendJson(res, 200, { now: formatTimestamp(ctx.world.now()) });
      case 'POST /_sim/clock': {
        if (typeof body.advance === 'string') {
          const us = parseDuration(body.advance);
          if (us === null) throw new Error('advance must be a duration such as 15m or 2h');
          ctx.world.clock.advance(us);
        } else if (typeof body.set === 'string') {
          const t = parseTimestamp(body.set);
          if (t === null) throw new Error('set must be an RFC 3339 date-time');
          ctx.world.clock.set(t);
        } else {
          throw new Error('give {"advance": "1h"} or {"set": "<date-time>"}');
        }
        return sendJson(res, 200, { now: formatTimestamp(ctx.world.now()) });
      }
      case 'POST /_sim/runs/settle': {
        const at = (name: string) => (typeof body[name] === 'string' ? parseTimestamp(body[name] as string) : null);
        const count = Number(body.count);
        if (!Number.isInteger(count) || count < 0)
          throw new Error('give {"count": N} (created_after, created_before optional)');
        const ids = ctx.world.settleOpenRuns(count, at('created_after') ?? 0, at('created_before') ?? ctx.world.now());
        return sendJson(res, 200, { settled: ids });
      }
      case 'POST /_sim/runs/delete':
      case 'POST /_sim/runs/restore': {
        const ids = body.ids;
        if (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string'))
          throw new Error('give {"ids": ["<run id>", …]}');
        if (route.endsWith('delete')) return sendJson(res, 200, { deleted: ctx.world.deleteRuns(ids) });
        return sendJson(res, 200, { restored: ctx.world.restoreRuns(ids) });
      }
      case 'GET /_sim/faults':
        return sendJson(res, 200, ctx.faults.config);
      case 'PUT /_sim/faults':
        if (body.off === true) ctx.faults.off();
        else ctx.faults.set(body as Partial<FaultConfig>);
        return sendJson(res, 200, ctx.faults.config);
      case 'GET /_sim/rate-limit':
        return sendJson(res, 200, ctx.rateLimiter.config);
      case 'PUT /_sim/rate-limit': {
        const next = { ...ctx.rateLimiter.config, ...(body as Partial<RateLimitConfig>) };
        if (!(RATE_MODELS as readonly string[]).includes(next.model))
          return sendJson(
            res,
            400,
            errorBody('invalid_request', `model must be one of ${RATE_MODELS.join(', ')}`, 'sim_admin'),
          );
        ctx.rateLimiter.config = next;
        return sendJson(res, 200, ctx.rateLimiter.config);
      }
      case 'POST /_sim/keys': {
        const expires = typeof body.expires_at === 'string' ? parseTimestamp(body.expires_at) : null;
        const key = ctx.keys.add({
          ...(typeof body.key === 'string' ? { key: body.key } : {}),
          ...(Array.isArray(body.scopes) ? { scopes: body.scopes as string[] } : {}),
          ...(typeof body.org === 'string' ? { org: body.org } : {}),
          expiresAt: expires,
        });
        return sendJson(res, 201, { key });
      }
      case 'POST /_sim/keys/revoke':
        return sendJson(res, 200, { revoked: ctx.keys.revoke(String(body.key)) });
      case 'GET /_sim/counters':
        return sendJson(res, 200, ctx.counters.snapshot());
      case 'DELETE /_sim/counters':
        ctx.counters.reset();
        return sendJson(res, 200, { ok: true });
      default:
        return sendJson(res, 404, errorBody('not_found', `no admin route ${route}`, 'sim_admin'));
    }
  } catch (e) {
    return sendJson(res, 400, errorBody('invalid_request', (e as Error).message, 'sim_admin'));
  }
}
