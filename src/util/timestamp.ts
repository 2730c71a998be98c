// Timestamps as integer microseconds since the Unix epoch. The API may send microseconds and a
// JavaScript Date keeps only milliseconds, so comparisons of `updated_at` must not go through Date.
// 2^53 microseconds is about 285 years past 1970, so a plain number holds every date we meet.

export type Micros = number;

export const MICROS_PER_SECOND = 1_000_000;
export const MICROS_PER_MINUTE = 60 * MICROS_PER_SECOND;
export const MICROS_PER_HOUR = 60 * MICROS_PER_MINUTE;
export const MICROS_PER_DAY = 24 * MICROS_PER_HOUR;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 date-time, keeping microseconds. Returns null when the text is not one. */
export function parseTimestamp(text: string): Micros | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m as unknown as string[];
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes = 0;
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59));
  const micros = frac ? Number(`${frac}00000`.slice(0, 6)) : 0;
  return (ms - offsetMinutes * 60_000) * 1000 + micros;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Formats as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`; the fraction is left out when it is zero. */
export function formatTimestamp(us: Micros): string {
  const seconds = Math.floor(us / MICROS_PER_SECOND);
  const frac = us - seconds * MICROS_PER_SECOND;
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  return frac === 0 ? `${base}Z` : `${base}.${String(frac).padStart(6, '0')}Z`;
}

export function microsFromDate(d: Date): Micros {
  return d.getTime() * 1000;
}

export function dateFromMicros(us: Micros): Date {
  return new Date(Math.floor(us / 1000));
}

const DURATION = /^(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d|w)$/;
const UNIT: Record<string, number> = {
  us: 1,
  ms: 1000,
  s: MICROS_PER_SECOND,
  m: MICROS_PER_MINUTE,
  h: MICROS_PER_HOUR,
  d: MICROS_PER_DAY,
  w: 7 * MICROS_PER_DAY,
};

/** Parses `15m`, `30d`, `2h`, `500ms` into microseconds; null when malformed. */
export function parseDuration(text: string): Micros | null {
  const m = DURATION.exec(text.trim());
  if (!m) return null;
  return Math.round(Number(m[1]) * (UNIT[m[2] as string] as number));
}

// RFC 3339 as DuckDB also reads it: upper-case T (or a space), seconds up to 59, a zone. Anything
// DuckDB would refuse is refused here first, with the member named, instead of failing a batch.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):([0-5]\d)(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Microseconds since the epoch (fractions beyond them dropped, as DuckDB does), or null. */
export function parseStrictTimestamp(text: string): Micros | null {
  const m = TIMESTAMP.exec(text);
  if (!m) return null;
  const year = +(m[1] as string);
  const month = +(m[2] as string);
  const day = +(m[3] as string);
  const hour = +(m[4] as string);
  const minute = +(m[5] as string);
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > (MONTH_DAYS[month - 1] as number) + (leap ? 1 : 0) ||
    hour > 23 ||
    minute > 59
  )
    return null;
  let offset = 0;
  if (m[8] === undefined) {
    const oh = +(m[10] as string);
    const om = +(m[11] as string);
    if (oh > 23 || om > 59) return null;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const frac = m[7] === undefined ? 0 : +`${m[7]}00000`.slice(0, 6);
  // Date.UTC reads years 0-99 as 1900-1999: shift by a 400-year Gregorian cycle and back.
  const shift = year < 100 ? 400 : 0;
  const ms =
    Date.UTC(year + shift, month - 1, day, hour, minute, +(m[6] as string)) - (shift ? 146_097 * 86_400_000 : 0);
  return (ms - offset * 60_000) * 1000 + frac;
}
