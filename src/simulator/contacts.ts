import { type Rng, rngFor } from './random.ts';
import { personName } from './text.ts';

// The customer behind a ticket, as support conversations show them: a name, an email address and
// a phone number, written the ways people write them, and now and then a card number, an IBAN or
// the address they wrote from. Every fact is a function of the seed and the ticket, so the
// customer of a ticket's follow-up runs is the same person.

export interface Contact {
  name: string;
  email: string;
  phone: string;
  /** A payment card number (test numbers, Luhn-valid), an IBAN, an IP address. */
  card: string;
  iban: string;
  ip: string;
}

const DOMAINS = ['example.com', 'mail.example.org', 'example.net', 'kunden.example.de', 'correo.example.es'];
const CARDS = ['4111 1111 1111 1111', '5500-0000-0000-0004', '4012888888881881', '3782 822463 10005'];
const IBANS = [
  'DE89 3704 0044 0532 0130 00',
  'GB82WEST12345698765432',
  'FR1420041010050500013M02606',
  'NL91ABNA0417164300',
];

export function contactOf(seed: number, ticketNo: number): Contact {
  const r = rngFor(seed, 'contact', ticketNo);
  const name = personName(r);
  return {
    name,
    email: emailOf(r, name, ticketNo),
    phone: phoneOf(r),
    card: r.pick(CARDS),
    iban: r.pick(IBANS),
    ip: `${r.int(11, 223)}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`,
  };
}

function emailOf(r: Rng, name: string, ticketNo: number): string {
  const ascii = name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z' ]/g, '')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
  const local = ascii.length >= 2 ? r.pick([ascii.join('.'), `${ascii[0]?.[0]}${ascii[1]}`, ascii.join('_')]) : '';
  return `${local || `customer${ticketNo}`}${r.chance(0.3) ? r.int(1, 99) : ''}@${r.pick(DOMAINS)}`;
}

const digits = (r: Rng, n: number) => Array.from({ length: n }, () => r.int(0, 9)).join('');

function phoneOf(r: Rng): string {
  switch (r.int(0, 5)) {
    case 0:
      return `+1 415-555-${digits(r, 4)}`;
    case 1:
      return `(212) 555-${digits(r, 4)}`;
    case 2:
      return `+44 20 7946 ${digits(r, 4)}`;
    case 3:
      return `+49 30 ${digits(r, 8)}`;
    case 4:
      return `06 ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)}`;
    default:
      return `+33 6 ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)}`;
  }
}

/** A sentence of a customer's message that gives some of their details away, or '' (most don't). */
export function contactLine(r: Rng, c: Contact): string {
  const x = r.next();
  if (x < 0.2) return ` You can reach me at ${c.email} or ${c.phone}.`;
  if (x < 0.3) return ` My email is ${c.email}.`;
  if (x < 0.4) return ` Call me back on ${c.phone} please.`;
  if (x < 0.45) return ` The card ${c.card} was charged twice.`;
  if (x < 0.5) return ` Please refund to ${c.iban}.`;
  if (x < 0.53) return ` (sent from ${c.ip})`;
  return '';
}

/** A tool's output that echoes the customer's record, as an order or CRM lookup does. */
export function customerRecord(r: Rng, c: Contact): Record<string, unknown> {
  return {
    customer: { name: c.name, email: c.email, phone: c.phone, tier: r.pick(['free', 'gold', 'platinum']) },
    orders: Array.from({ length: r.int(0, 3) }, () => ({
      id: `ord_${r.hex(8)}`,
      total: Math.round(r.logUniform(5, 900) * 100) / 100,
      shipping_note: r.chance(0.3) ? `Leave with neighbour, call ${c.phone}` : 'none',
    })),
  };
}
