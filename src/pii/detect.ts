import { isIPv4, isIPv6 } from 'node:net';

// What looks like personal data in free text: email addresses, phone numbers, payment card numbers,
// IBANs and IP addresses, plus the patterns a policy adds. Each is found by a pattern and, where a
// pattern alone would take dates, amounts or ids for one, confirmed by a check (Luhn for cards,
// mod 97 for IBANs, digit counts and shapes for phones). Redaction puts a typed placeholder where
// each was ([email], [phone]…). Placeholders and hashed values are left as they are, so redacting
// twice changes nothing.

export type BuiltinKind = 'email' | 'phone' | 'card' | 'iban' | 'ip';
export const BUILTIN_KINDS: readonly BuiltinKind[] = ['email', 'iban', 'card', 'ip', 'phone'];

/** A pattern of the policy's own, by the placeholder it leaves. */
export interface CustomPattern {
  readonly name: string;
  readonly source: string;
}

/** A hashed value (hash.ts): never redacted, never taken for personal data. */
export const HASHED = 'pii:hmac:[0-9a-f]{32}';

const EMAIL = "[\\p{L}\\p{N}._%+'-]+@[\\p{L}\\p{N}-]+(?:\\.[\\p{L}\\p{N}-]+)*\\.\\p{L}{2,}";
const IBAN = '\\b[A-Z]{2}\\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\\b';
// Not within a word or a hyphenated token (a uuid's groups of digits).
const CARD = '(?<![\\w-])\\d(?:[ -]?\\d){12,18}(?![\\w-])';
const IPV4 = '\\b(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(?:\\.(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}\\b';
const IPV6 = '(?<![\\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\\w:])';
// A run of digits with the separators phone numbers are written with; check() decides.
const PHONE = '(?<![\\w+-])(?:\\+|00)?\\(?\\d[\\d \\u00a0().\\/-]{6,22}\\d(?![\\w-])';

const SOURCES: Record<BuiltinKind, string> = {
  email: EMAIL,
  iban: IBAN,
  card: CARD,
  ip: `${IPV4}|${IPV6}`,
  phone: PHONE,
};

export interface Detectors {
  /** The placeholder names, built-in and the policy's. */
  readonly kinds: readonly string[];
  /** The text with each detected value replaced by its placeholder. */
  redact(text: string): string;
  /** The kinds of personal data the text holds, by how many values of each. */
  find(text: string): Map<string, number>;
}

interface Pass {
  kind: string;
  check: (text: string) => boolean;
}

export function createDetectors(custom: readonly CustomPattern[] = []): Detectors {
  const kinds = [...custom.map((c) => c.name), ...BUILTIN_KINDS];
  const placeholders = kinds.map((k) => `\\[${escapeRegExp(k)}\\]`).join('|');
  const passes: (Pass & { source: string })[] = [
    ...custom.map((c) => ({ kind: c.name, source: c.source, check: (_: string) => true })),
    ...BUILTIN_KINDS.map((k) => ({ kind: k, source: SOURCES[k], check: (t: string) => check(k, t) })),
  ];
  const keep = `(?<keep>${HASHED}|${placeholders})`;
  // One scan of the text, all kinds at once: protected spans first (a hashed value, a
  // placeholder), then the policy's patterns, then the built-in ones; the first to match at a
  // place wins. A match its check refuses (a number that is not a card) is looked at again by the
  // kinds after it, on its own.
  // An email needs an @, every other built-in kind a digit: a text without them is scanned for
  // the rest only.
  const needs = (p: Pass) =>
    p.kind === 'email' ? AT : (BUILTIN_KINDS as readonly string[]).includes(p.kind) ? DIGIT : 0;
  const scans = [0, AT, DIGIT, AT | DIGIT].map((has) => {
    const alternatives = passes.flatMap((p, i) => ((needs(p) & has) === needs(p) ? [`(?<k${i}>${p.source})`] : []));
    return alternatives.length ? new RegExp([keep, ...alternatives].join('|'), 'gu') : null;
  });
  const alone = passes.map((p) => new RegExp(`${keep}|${p.source}`, 'gu'));
  const again = (text: string, from: number, seen: ((kind: string) => void) | null): string => {
    let out = text;
    for (let i = from; i < passes.length; i++) {
      const p = passes[i] as Pass;
      out = out.replace(alone[i] as RegExp, (match: string, ...args: unknown[]) => {
        const groups = args[args.length - 1] as Record<string, string | undefined>;
        if (groups.keep !== undefined || !p.check(match)) return match;
        seen?.(p.kind);
        return `[${p.kind}]`;
      });
    }
    return out;
  };
  const run = (text: string, seen: ((kind: string) => void) | null): string => {
    const scan = scans[(text.includes('@') ? AT : 0) | (ANY_DIGIT.test(text) ? DIGIT : 0)];
    if (!scan) return text;
    return text.replace(scan, (match: string, ...args: unknown[]) => {
      const groups = args[args.length - 1] as Record<string, string | undefined>;
      if (groups.keep !== undefined) return match;
      for (let i = 0; i < passes.length; i++) {
        if (groups[`k${i}`] === undefined) continue;
        const p = passes[i] as Pass;
        if (!p.check(match)) return again(match, i + 1, seen);
        seen?.(p.kind);
        return `[${p.kind}]`;
      }
      return match;
    });
  };
  return {
    kinds,
    redact: (text) => run(text, null),
    find(text) {
      const out = new Map<string, number>();
      run(text, (kind) => out.set(kind, (out.get(kind) ?? 0) + 1));
      return out;
    },
  };
}

const AT = 1;
const DIGIT = 2;
const ANY_DIGIT = /\d/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether a pattern's match is what it looks for. */
function check(kind: BuiltinKind, text: string): boolean {
  switch (kind) {
    case 'email':
      return true;
    case 'card':
      return luhn(text.replace(/[ -]/g, ''));
    case 'iban':
      return ibanValid(text.replace(/ /g, ''));
    case 'ip':
      return isIPv4(text) || (isIPv6(text) && ipv6Shaped(text));
    case 'phone':
      return phoneShaped(text);
  }
}

function luhn(digits: string): boolean {
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function ibanValid(iban: string): boolean {
  if (iban.length < 15 || iban.length > 34) return false;
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : ch;
    for (const d of value) rest = (rest * 10 + (d.charCodeAt(0) - 48)) % 97;
  }
  return rest === 1;
}

/** An IPv6 address written out, not a time (12:30:45) or a word with colons (std::map). */
function ipv6Shaped(text: string): boolean {
  const groups = text.split(':').filter(Boolean);
  return groups.length >= 8 || (text.includes('::') && groups.length >= 3 && groups.some((g) => /\d/.test(g)));
}

const DATE_LIKE = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})(?:[ T]|$)/;
const NANP = /^\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}$/;

/**
 * A phone number as people write them: international (+ or 00), with an area code in brackets, a
 * trunk 0 (06 12 34 56 78, 030 1234567), or the North American 415-555-0134. Nine to fifteen
 * digits. Dates, decimals and bare numbers (ids, epoch seconds) are not phones.
 */
function phoneShaped(text: string): boolean {
  const digits = text.replace(/\D/g, '').length;
  if (digits < 9 || digits > 15) return false;
  if (DATE_LIKE.test(text) || /^0\.\d/.test(text)) return false;
  if (/[()]/.test(text) && !/^(?:\+\d{1,3}[ \u00a0]?)?\(\d{1,5}\)/.test(text)) return false;
  if (text.startsWith('+') || text.startsWith('00') || text.startsWith('(')) return true;
  if (text.startsWith('0')) return true;
  return NANP.test(text);
}
