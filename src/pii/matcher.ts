import { goesOn, type PathState, reached, startState, step } from './paths.ts';
import type { PiiRule } from './types.ts';

// Where a policy's rules stand at one place of a payload being walked: which may still reach
// something below, and at which positions of their paths. A place of a payload is reached by a
// member path, so the same state recurs at every item of an array and every payload of a kind;
// each state keeps the states one step on from it (by member name), and the walk of a payload is
// mostly look-ups.

/** Member names a state remembers the next state of: JSON keyed by data (ids as keys) would grow it without end. */
const REMEMBERED = 256;

export class Live {
  private readonly nexts = new Map<string | null, Live>();
  private readonly ons = new Map<PiiRule | null, Live>();
  /** The earliest rule that reaches the place itself, if any. */
  readonly reachedBy: PiiRule | null;

  private constructor(
    readonly rules: readonly PiiRule[],
    readonly states: readonly PathState[],
  ) {
    let by: PiiRule | null = null;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i] as PiiRule;
      if (reached(r.path, states[i] as PathState) && (by === null || r.order < by.order)) by = r;
    }
    this.reachedBy = by;
  }

  static start(rules: readonly PiiRule[]): Live {
    return new Live(
      rules,
      rules.map((r) => startState(r.path)),
    );
  }

  get empty(): boolean {
    return this.rules.length === 0;
  }

  /** The rule deciding here: the earliest of the one deciding the place around and those reaching this one. */
  decider(around: PiiRule | null): PiiRule | null {
    const by = this.reachedBy;
    return by !== null && (around === null || by.order < around.order) ? by : around;
  }

  /** The rules that can still decide something below: earlier than the one deciding, not at their end. */
  on(decider: PiiRule | null): Live {
    let out = this.ons.get(decider);
    if (out) return out;
    const keep = (i: number) => {
      const r = this.rules[i] as PiiRule;
      return (decider === null || r.order < decider.order) && goesOn(r.path, this.states[i] as PathState);
    };
    out = this.rules.every((_, i) => keep(i)) ? this : this.filtered(keep);
    this.ons.set(decider, out);
    return out;
  }

  /** The state one step on: into member `name` (lower case), or into an array's items (null). */
  next(name: string | null): Live {
    const known = this.nexts.get(name);
    if (known) return known;
    const states = this.states.map((s, i) => step((this.rules[i] as PiiRule).path, s, name));
    const out = states.every((s, i) => s === this.states[i])
      ? this
      : new Live(
          this.rules.filter((_, i) => states[i] !== 0),
          states.filter((s) => s !== 0),
        );
    if (this.nexts.size < REMEMBERED) this.nexts.set(name, out);
    return out;
  }

  private filtered(keep: (i: number) => boolean): Live {
    const idx = this.rules.map((_, i) => i).filter(keep);
    return new Live(
      idx.map((i) => this.rules[i] as PiiRule),
      idx.map((i) => this.states[i] as PathState),
    );
  }
}
