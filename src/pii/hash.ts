import { createHmac, createSecretKey } from 'node:crypto';

// Hashed personal data: HMAC-SHA256 of the value under the operator's key (RUNSYNC_PII_KEY), its
// first 128 bits in hex, marked with a prefix. The same value gives the same hash on every run and
// machine with that key, so joins and distinct counts still work; without the key a hash cannot be
// tested against guessed names or emails. A marked value is never hashed again, so applying a
// policy twice changes nothing.

export const HASH_PREFIX = 'pii:hmac:';
const HASHED = /^pii:hmac:[0-9a-f]{32}$/;

export type Hasher = (value: string) => string;

export function isHashed(value: string): boolean {
  return HASHED.test(value);
}

/** Values whose hash a hasher remembers: a customer's name recurs in every message of theirs. */
const REMEMBERED = 4096;

export function createHasher(key: Buffer): Hasher {
  const secret = createSecretKey(key);
  let recent = new Map<string, string>();
  return (value) => {
    const known = recent.get(value);
    if (known !== undefined) return known;
    const out = HASHED.test(value)
      ? value
      : `${HASH_PREFIX}${createHmac('sha256', secret).update(value).digest('hex').slice(0, 32)}`;
    if (recent.size >= REMEMBERED) recent = new Map();
    recent.set(value, out);
    return out;
  };
}

/** A digest that tells keys apart without telling anything of them (for the archive's notes). */
export function keyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('runsync pii key fingerprint').digest('hex').slice(0, 12);
}
