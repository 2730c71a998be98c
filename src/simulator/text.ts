import type { Rng } from './random.ts';

// Text that looks like support conversations, in several scripts, with the characters that break
// naive code: quotes, backslashes, newlines, tabs, U+2028, right-to-left marks, combining accents,
// zero-width joiners and astral-plane emoji.

const WORDS = (
  'order refund shipping delivery package tracking account password login invoice billing charge ' +
  'subscription plan upgrade downgrade cancel return exchange warranty address email phone update ' +
  'status delay damaged missing item size colour color payment card declined coupon discount ' +
  'question help issue problem error please thanks urgent today tomorrow week customer agent ' +
  'ticket reply escalate policy store app website checkout cart product replacement label courier'
).split(' ');

const FOREIGN = [
  'commande',
  'remboursement',
  'livraison',
  'Rückerstattung',
  'Lieferung',
  'Bestellung',
  'pedido',
  'envío',
  'reembolso',
  'заказ',
  'доставка',
  'возврат',
  '注文',
  '配送',
  '返金',
  '订单',
  '退款',
  'طلب',
  'استرداد',
  'הזמנה',
  'החזר',
  '주문',
  '배송',
  'siparişim',
  'zamówienie',
  'ølkasse',
  'façade',
];

const TRICKY = [
  '"quoted"',
  "it's",
  'back\\slash',
  'tab\there',
  'line\nbreak',
  'crlf\r\nend',
  'para\u2028sep',
  '\u200fמימין\u200f',
  'e\u0301te\u0301',
  '👩‍👩‍👧‍👦',
  '🚚📦',
  '🙂',
  'naïve',
  '€42,00',
  '¥5000',
  '50%',
  '<b>bold</b>',
  '&amp;',
  '{"json":true}',
  "'; DROP TABLE runs; --",
  '$(whoami)',
  '../../etc/passwd',
  '%2F%2e%2e',
  '\u0007bell',
  'NULL',
  'null',
  '',
];

const FIRST = [
  'Alice',
  'José',
  'Zoë',
  'Łukasz',
  'Ólafur',
  'Søren',
  'Chloé',
  'Nguyễn',
  'Amara',
  'Yuki',
  'Ahmed',
  'Priya',
  'Mateo',
  'Ingrid',
  'Kwame',
  '王芳',
  'محمد',
  'Дмитрий',
  'Σοφία',
  'Aoife',
  "D'Arcy",
];
const LAST = [
  'Álvarez',
  'Müller',
  'Dubois',
  'Kowalski',
  'Ó Briain',
  "O'Connor",
  'Smith',
  'Tanaka',
  'Okafor',
  'Rossi',
  'Van Dijk',
  'Nakamura',
  'Johansson',
  'Haddad',
  'Ivanova',
  'Papadopoulos',
  'Lê',
  '李',
];

export function word(rng: Rng): string {
  const r = rng.next();
  if (r < 0.06) return rng.pick(FOREIGN);
  if (r < 0.075) return rng.pick(TRICKY);
  return rng.pick(WORDS);
}

export function sentence(rng: Rng, minWords = 4, maxWords = 14): string {
  const n = rng.int(minWords, maxWords);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(word(rng));
  const s = parts.join(' ');
  return s.charAt(0).toUpperCase() + s.slice(1) + rng.pick(['.', '?', '!', '…', '.', '.']);
}

export function paragraph(rng: Rng, minSentences = 1, maxSentences = 4): string {
  const n = rng.int(minSentences, maxSentences);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(sentence(rng));
  return parts.join(' ');
}

export function title(rng: Rng): string {
  const s = sentence(rng, 2, 7);
  return s.slice(0, -1);
}

export function personName(rng: Rng): string {
  return `${rng.pick(FIRST)} ${rng.pick(LAST)}`;
}

export function slug(rng: Rng, parts = 2): string {
  const out: string[] = [];
  for (let i = 0; i < parts; i++) out.push(rng.pick(WORDS));
  return out.join('_');
}

/** Arbitrary JSON of the given depth budget: objects, arrays, strings, numbers, booleans, nulls. */
export function jsonValue(rng: Rng, depth: number): unknown {
  const r = rng.next();
  if (depth <= 0 || r < 0.35) {
    const leaf = rng.next();
    if (leaf < 0.4) return sentence(rng, 1, 6);
    if (leaf < 0.6) return rng.int(-1000, 100000);
    if (leaf < 0.7) return Math.round(rng.next() * 1e6) / 1e3;
    if (leaf < 0.8) return rng.chance(0.5);
    if (leaf < 0.88) return null;
    if (leaf < 0.94) return rng.pick(TRICKY);
    return 2 ** 53 + rng.int(0, 1000) * 2; // beyond safe integers, as real ids sometimes are
  }
  if (r < 0.7) {
    const obj: Record<string, unknown> = {};
    const n = rng.int(1, 5);
    for (let i = 0; i < n; i++)
      obj[rng.chance(0.1) ? rng.pick(TRICKY) || 'empty' : slug(rng, 1)] = jsonValue(rng, depth - 1);
    return obj;
  }
  const arr: unknown[] = [];
  const n = rng.int(0, 4);
  for (let i = 0; i < n; i++) arr.push(jsonValue(rng, depth - 1));
  return arr;
}

/** A JSON value nested `depth` levels deep, the shape that breaks recursive flatteners. */
export function deepJson(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { level: depth - i, next: v } : [v];
  return v;
}
