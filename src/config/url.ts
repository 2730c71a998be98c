import { isIP } from 'node:net';
import { ConfigError } from './error.ts';

// The API's base URL as configured ("https://support.example.com", with or without a trailing slash
// or the /api/v1 prefix) turned into the one runsync calls: ".../api/v1". Plain http is allowed only
// to this machine, where there is no wire to read the key off.

const API_PREFIX = '/api/v1';

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) {
    if (host === '::1') return true;
    // IPv4-mapped loopback, as WHATWG URL writes it: ::ffff:7f00:1 is ::ffff:127.0.0.1.
    const mapped = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(host);
    return mapped !== null && parseInt(mapped[1] as string, 16) >> 8 === 127;
  }
  return false;
}

/**
 * The base URL with `/api/v1` and no trailing slash; throws ConfigError naming `setting`.
 * `httpHosts`: hosts named by the operator (RUNSYNC_ALLOW_HTTP) that may be reached over plain
 * http, such as the simulator's container on a private Docker network.
 */
export function apiBaseUrl(raw: string, setting = 'RUNSYNC_API_URL', httpHosts: readonly string[] = []): string {
  const text = raw.trim();
  if (text === '') throw new ConfigError(setting, 'is empty; give the API address, e.g. https://support.example.com');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(setting, 'is not a URL; give the API address, e.g. https://support.example.com');
  }
  if (url.username || url.password) throw new ConfigError(setting, 'must not carry a user name or password');
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(setting, `must be an https URL; got ${url.protocol.replace(':', '')}`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !httpHosts.includes(url.hostname.toLowerCase())) {
    const allowed = 'plain http is allowed only for localhost, or a host named in RUNSYNC_ALLOW_HTTP';
    throw new ConfigError(setting, `must use https (${allowed}); got http://${url.host}`);
  }
  if (url.search || url.hash) throw new ConfigError(setting, 'must not have a query string or fragment');
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith(API_PREFIX)) path = path.slice(0, -API_PREFIX.length);
  return `${url.origin}${path}${API_PREFIX}`;
}
