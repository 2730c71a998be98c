// Deterministic randomness. Every generated fact is a pure function of (seed, keys), so any run of a
// million can be regenerated on demand without being stored.

export type Key = number | string;

/** 32-bit FNV-1a over a string. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's finalizer: a good 32-bit avalanche. */
export function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function hashKeys(seed: number, keys: readonly Key[]): number {
  let h = fmix(seed ^ 0x9e3779b9);
  for (const k of keys) {
    const v = typeof k === 'number' ? fmix(k >>> 0) ^ fmix(Math.floor(k / 0x100000000) + 0x5bd1e995) : hashString(k);
    h = fmix((h ^ v) + 0x6d2b79f5);
  }
  return h;
}

/** sfc32: small, fast, and good enough for synthetic data. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = fmix(seed ^ 0xa3b195);
    this.b = fmix(seed ^ 0x4f1bbcdc);
    this.c = fmix(seed ^ 0x6c8e9cf5);
    this.d = 1;
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 0x100000000;
  }

  int(minInclusive: number, maxInclusive: number): number {
    return minInclusive + Math.floor(this.next() * (maxInclusive - minInclusive + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Picks by weight: `[[value, weight], ...]`. */
  weighted<T>(options: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of options) total += w;
    let x = this.next() * total;
    for (const [v, w] of options) {
      x -= w;
      if (x < 0) return v;
    }
    return (options[options.length - 1] as readonly [T, number])[0];
  }

  /** Log-uniform between min and max: many small values, a few large ones. */
  logUniform(min: number, max: number): number {
    return Math.exp(Math.log(min) + this.next() * (Math.log(max) - Math.log(min)));
  }

  hex(chars: number): string {
    let out = '';
    while (out.length < chars) out += (this.u32() + 0x100000000).toString(16).slice(1);
    return out.length === chars ? out : out.slice(0, chars);
  }

  uuid(): string {
    return formatUuid(this.hex(32));
  }
}

export function rngFor(seed: number, ...keys: Key[]): Rng {
  return new Rng(hashKeys(seed, keys));
}

/** Lays 32 hex digits out as a version-4 uuid. */
export function formatUuid(hex32: string): string {
  const variant = '89ab'[parseInt(hex32.charAt(16), 16) & 3] as string;
  const h = (from: number, to: number) => hex32.slice(from, to);
  return `${h(0, 8)}-${h(8, 12)}-4${h(13, 16)}-${variant}${h(17, 20)}-${h(20, 32)}`;
}

// Run ids encode their index so a detail request finds its run without an index of all ids:
// the first 8 hex digits are an invertible scramble of the index, the rest are hashed.
const MUL = 0x2c1b3c6d;
const MUL_INV = modInverse32(MUL);

function modInverse32(a: number): number {
  let x = a;
  for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(a, x));
  return x >>> 0;
}

export function scramble32(value: number, key: number): number {
  return (Math.imul((value ^ key) >>> 0, MUL) >>> 0) ^ fmix(key);
}

export function unscramble32(value: number, key: number): number {
  return (Math.imul((value ^ fmix(key)) >>> 0, MUL_INV) ^ key) >>> 0;
}

export function indexedUuid(seed: number, kind: string, index: number): string {
  const key = hashKeys(seed, [kind, 'id-key']);
  const head = (scramble32(index, key) >>> 0).toString(16).padStart(8, '0');
  return formatUuid(head + rngFor(seed, kind, 'id', index).hex(24));
}

/** The index an `indexedUuid` was made from, or null if the text is not one of ours. */
export function indexOfUuid(seed: number, kind: string, uuid: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(uuid)) return null;
  const key = hashKeys(seed, [kind, 'id-key']);
  const index = unscramble32(parseInt(uuid.slice(0, 8), 16), key);
  return indexedUuid(seed, kind, index) === uuid ? index : null;
}
