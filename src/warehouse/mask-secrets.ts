import { createHash } from 'node:crypto';

// The API shows custom tools' HTTP headers and auth settings. Before a tool reaches the raw
// archive, the warehouse or Parquet, secret values are replaced by a short fingerprint of the
// value, so a rotated secret still shows up as a change. Masking is idempotent: a masked value is
// left alone, so masking what the archive holds again (rebuild) gives the same tables.
//
// What counts as secret: the value of a header named like authorization, cookie, key, token,
// secret, password, credential, session or signature (headers given as an array of {name, value}
// or as an object); every scalar under such a member of an `auth` object (and members named
// `value` or `…_value`, which hold the key of api-key auth; not urls, types or names); an `auth`
// that is a bare string; the password of a URL and query parameters named like a secret in an
// `endpoint`. The walk covers the whole object, not
// only `custom`, since which sub-object a tool type carries is not specified.

export const MASK_PREFIX = '***masked:';
const MASKED = /^\*\*\*masked:[0-9a-f]{8}$/;
const SECRET_NAME = new RegExp(
  'authorization|cookie|key|token|secret|passw|passphrase|^pass$|' +
    'credential|session|signature|private|bearer|jwt|assertion',
  'i',
);
// In an auth object a bare `value` (or `header_value`, `key_value`...) holds the secret itself.
const AUTH_SECRET_NAME = new RegExp(`${SECRET_NAME.source}|value$`, 'i');
const NOT_SECRET = /(?:url|uri|endpoint|name)$|^type$|^header$|^scheme$/i;

export function isMasked(value: string): boolean {
  return MASKED.test(value);
}

/** `***masked:` and the first 8 hex digits of the value's SHA-256; a masked value is kept. */
export function maskValue(value: string): string {
  if (MASKED.test(value)) return value;
  return `${MASK_PREFIX}${createHash('sha256').update(value).digest('hex').slice(0, 8)}`;
}

/** A copy of the tool with its secrets masked; the argument is not modified. */
export function maskToolSecrets<T>(tool: T): T {
  if (tool === null || typeof tool !== 'object') return tool;
  const copy = structuredClone(tool);
  walk(copy as unknown as Record<string, unknown> | unknown[]);
  return copy;
}

function walk(node: Record<string, unknown> | unknown[]): void {
  if (Array.isArray(node)) {
    for (const item of node) if (item !== null && typeof item === 'object') walk(item as Record<string, unknown>);
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'headers' && Array.isArray(value)) maskHeaders(value);
    else if (key === 'headers' && value !== null && typeof value === 'object')
      maskHeaderMap(value as Record<string, unknown>);
    else if (key === 'auth' && value !== null && typeof value === 'object') maskAuth(value as Record<string, unknown>);
    // An auth given as one string ("Bearer …") is the secret itself.
    else if (key === 'auth' && (typeof value === 'string' || typeof value === 'number')) node[key] = maskScalar(value);
    else if (key === 'endpoint' && typeof value === 'string') node[key] = maskUrl(value);
    if (value !== null && typeof value === 'object') walk(value as Record<string, unknown>);
  }
}

function maskHeaders(headers: unknown[]): void {
  for (const h of headers) {
    if (h === null || typeof h !== 'object') continue;
    const header = h as Record<string, unknown>;
    if (
      typeof header.name === 'string' &&
      SECRET_NAME.test(header.name) &&
      header.value !== undefined &&
      header.value !== null
    ) {
      header.value = maskScalar(header.value);
    }
  }
}

/** Headers as an object of name to value, rather than the spec's array of {name, value}. */
function maskHeaderMap(headers: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (SECRET_NAME.test(name) && value !== null && typeof value !== 'object') headers[name] = maskScalar(value);
  }
}

function maskAuth(auth: Record<string, unknown> | unknown[]): void {
  if (Array.isArray(auth)) {
    for (const item of auth) if (item !== null && typeof item === 'object') maskAuth(item as Record<string, unknown>);
    return;
  }
  for (const [key, value] of Object.entries(auth)) {
    if (AUTH_SECRET_NAME.test(key) && !NOT_SECRET.test(key)) auth[key] = maskAll(value);
    else if (value !== null && typeof value === 'object') maskAuth(value as Record<string, unknown>);
  }
}

/** Every string or number below a secret member. */
function maskAll(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskAll);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskAll(v);
    return out;
  }
  return maskScalar(value);
}

function maskScalar(value: unknown): unknown {
  if (typeof value === 'string') return maskValue(value);
  if (typeof value === 'number' || typeof value === 'bigint') return maskValue(String(value));
  return value;
}

function maskUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  let changed = false;
  if (url.password && !isMasked(decodeURIComponent(url.password))) {
    url.password = maskValue(decodeURIComponent(url.password));
    changed = true;
  }
  for (const [name, value] of [...url.searchParams]) {
    if (SECRET_NAME.test(name) && value !== '' && !isMasked(value)) {
      url.searchParams.set(name, maskValue(value));
      changed = true;
    }
  }
  // Rewritten only when something was masked, so an endpoint without secrets stays byte for byte.
  return changed ? url.toString() : text;
}
