import { randomBytes } from 'node:crypto';

// JSON text as the warehouse stores it. JSON.stringify throws on a bigint (what a lossless parser
// hands over for an integer beyond 2^53): integers are written with all their digits. Text reaches
// here well-formed: the client mends lone UTF-16 surrogates as a response is read
// (api/well-formed.ts), the one normalisation of the API's text.

export function toJsonText(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError) || !/bigint/i.test(e.message)) throw e;
    text = stringifyWithBigInts(value);
  }
  if (text === undefined) throw new TypeError(`not representable as JSON: ${typeof value}`);
  return text;
}

function stringifyWithBigInts(value: unknown): string {
  const tag = `\u0000${randomBytes(6).toString('hex')}:`;
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${tag}${v.toString()}` : v));
  // JSON.stringify writes the NUL of the tag as \u0000; the tag's random part cannot occur by chance.
  const escapedTag = JSON.stringify(tag)
    .slice(1, -1)
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`"${escapedTag}(-?\\d+)"`, 'g'), '$1');
}

/** JSON text with object keys sorted at every level: equal content gives equal text. */
export function canonicalJsonText(value: unknown): string {
  return toJsonText(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
  return out;
}

/** JSON text of a payload kept as evidence (a refused record): never throws. */
export function safeJsonText(value: unknown): string {
  try {
    return toJsonText(value);
  } catch (e) {
    return JSON.stringify({ unserializable: String((e as Error).message) });
  }
}

/** A string member of a payload that may not be an object at all (a refused one), or null. */
export function stringMember(payload: unknown, key: string): string | null {
  const v = payload !== null && typeof payload === 'object' ? (payload as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' ? v : null;
}
