import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { QueryError } from './query.ts';

// Opaque, signed cursors. The position inside is meaningless to clients and a changed byte is
// refused; a cursor only works for the endpoint and filters that produced it, and expires: each
// cursor `ttlMs` after it was handed out (0: at once), whichever page of a listing it leads to.
// A refused cursor is a 400 `invalid_request`, the spec's answer to a request that is not valid.

interface CursorBody<P> {
  /** endpoint */
  e: string;
  /** filters' fingerprint */
  f: string;
  /** issued at, wall-clock ms */
  t: number;
  p: P;
}

export class CursorCodec {
  private readonly secret: Buffer;

  constructor(
    seed: number,
    private readonly ttlMs: number | null,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.secret = createHash('sha256').update(`runsync-simulator-cursor:${seed}`).digest();
  }

  encode<P>(endpoint: string, fingerprint: string, position: P): string {
    const body: CursorBody<P> = { e: endpoint, f: digest(fingerprint), t: this.nowMs(), p: position };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  decode<P>(endpoint: string, fingerprint: string, cursor: string): P {
    const [payload, sig, extra] = cursor.split('.');
    if (!payload || !sig || extra !== undefined) throw new QueryError('cursor is not valid');
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw new QueryError('cursor is not valid');
    }
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as CursorBody<P>;
    if (body.e !== endpoint) throw new QueryError('cursor belongs to another endpoint');
    if (body.f !== digest(fingerprint)) throw new QueryError('cursor was issued for different filters');
    if (this.ttlMs !== null && this.nowMs() - body.t >= this.ttlMs) {
      throw new QueryError('cursor has expired; restart paging from the first page');
    }
    return body.p;
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url').slice(0, 22);
  }
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
