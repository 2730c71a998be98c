import type { Micros } from '../util/timestamp.ts';

/**
 * The simulator's notion of "now". Manual clocks move only when told (tests); wall clocks follow
 * real time from an anchor, optionally faster (demos, long-running simulators).
 */
export class SimClock {
  private anchor: Micros;
  private readonly wallAnchor: number;

  constructor(
    start: Micros,
    readonly mode: 'manual' | 'wall' = 'manual',
    private readonly speed = 1,
  ) {
    this.anchor = start;
    this.wallAnchor = Date.now() * 1000;
  }

  now(): Micros {
    if (this.mode === 'manual') return this.anchor;
    return this.anchor + Math.floor((Date.now() * 1000 - this.wallAnchor) * this.speed);
  }

  advance(by: Micros): Micros {
    if (by < 0) throw new RangeError('the simulator clock only moves forward');
    this.anchor += by;
    return this.now();
  }

  /**
   * The simulated clock minus the real one, in milliseconds, for the API's Date header and rate-limit
   * times: a wall clock at speed 1 keeps a fixed offset, and a client must work on it. A manual
   * clock, or a faster one, moves data only; those headers then keep real time.
   */
  offsetFromRealMs(): number {
    if (this.mode !== 'wall' || this.speed !== 1) return 0;
    return Math.round((this.anchor - this.wallAnchor) / 1000);
  }

  set(to: Micros): Micros {
    const now = this.now();
    if (to < now) throw new RangeError('the simulator clock only moves forward');
    return this.advance(to - now);
  }
}
