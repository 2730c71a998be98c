import { createHash, randomBytes } from 'node:crypto';
import type { Micros } from '../util/timestamp.ts';

// API keys as the spec describes them: `svc_live_` prefix, scopes, stored only as a hash, revocation
// effective at once.

export const ALL_SCOPES = [
  'api:runs:read',
  'api:tools:read',
  'api:agents:read',
  'api:guidelines:read',
  'api:guardrails:read',
  'api:runbooks:read',
  'api:core:read',
  'api:core:write',
] as const;

export const KEY_PREFIX = 'svc_live_';

export interface SimKeySpec {
  key?: string;
  scopes?: readonly string[];
  org?: string;
  /** Simulator-clock time after which the key is refused. */
  expiresAt?: Micros | null;
}

interface StoredKey {
  id: string;
  preview: string;
  scopes: Set<string>;
  org: string;
  expiresAt: Micros | null;
  revoked: boolean;
}

export type AuthResult =
  | { ok: true; keyId: string; org: string; scopes: Set<string> }
  | { ok: false; reason: 'missing' | 'malformed' | 'unknown' | 'expired' | 'revoked' };

/** The organization of a key added without one. */
export const DEFAULT_ORG = 'org_default';

function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export class SimKeys {
  private readonly byHash = new Map<string, StoredKey>();

  /** Adds a key and returns it in full (the only time it is seen, as in the product). */
  add(spec: SimKeySpec = {}): string {
    const key = spec.key ?? `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
    if (!key.startsWith(KEY_PREFIX)) throw new Error(`simulator keys must start with ${KEY_PREFIX}`);
    const hash = hashKey(key);
    this.byHash.set(hash, {
      id: hash.slice(0, 12),
      preview: `${key.slice(0, KEY_PREFIX.length + 4)}…`,
      scopes: new Set(spec.scopes ?? ALL_SCOPES),
      org: spec.org ?? DEFAULT_ORG,
      expiresAt: spec.expiresAt ?? null,
      revoked: false,
    });
    return key;
  }

  revoke(key: string): boolean {
    const stored = this.byHash.get(hashKey(key));
    if (!stored) return false;
    stored.revoked = true;
    return true;
  }

  setScopes(key: string, scopes: readonly string[]): boolean {
    const stored = this.byHash.get(hashKey(key));
    if (!stored) return false;
    stored.scopes = new Set(scopes);
    return true;
  }

  authenticate(header: string | undefined, now: Micros): AuthResult {
    if (!header) return { ok: false, reason: 'missing' };
    const m = /^Bearer ([^\s]+)$/.exec(header);
    if (!m) return { ok: false, reason: 'malformed' };
    const key = m[1] as string;
    if (!key.startsWith(KEY_PREFIX) || key.length <= KEY_PREFIX.length) return { ok: false, reason: 'malformed' };
    const stored = this.byHash.get(hashKey(key));
    if (!stored) return { ok: false, reason: 'unknown' };
    if (stored.revoked) return { ok: false, reason: 'revoked' };
    if (stored.expiresAt !== null && now >= stored.expiresAt) return { ok: false, reason: 'expired' };
    return { ok: true, keyId: stored.id, org: stored.org, scopes: stored.scopes };
  }
}
