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

  set(to: Micros): Micros {
    const now = this.now();
    if (to < now) throw new RangeError('the simulator clock only moves forward');
    return this.advance(to - now);
  }
}
