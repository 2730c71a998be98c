// JSON paths of a personal-data policy: `$` (the whole value), `$.a.b` (members), `$.a[*]` or
// `$.a.*` (every item or member), `$..a` (a member named a at any depth below), and `$['odd name']`
// for a member whose name is not a plain word. Member names match without regard to case, since
// APIs spell the same member Email and email, and arrays are looked through: `$.orders.email`
// reaches the email of every order. Nothing else of JSONPath (filters, slices, unions).

export type Segment =
  | { readonly k: 'member'; readonly name: string }
  | { readonly k: 'any' }
  /** Zero or more levels of any members or items. */
  | { readonly k: 'deep' };

const WORD = /^[A-Za-z0-9_-]+/;

/** The segments of a path, or a reason it is not one. */
export function parsePath(text: string): Segment[] | string {
  if (!text.startsWith('$')) return 'a JSON path starts with $';
  const out: Segment[] = [];
  let i = 1;
  while (i < text.length) {
    const rest = text.slice(i);
    if (rest.startsWith('..')) {
      out.push({ k: 'deep' });
      i += 2;
      const name = WORD.exec(text.slice(i))?.[0];
      if (text[i] === '*') {
        out.push({ k: 'any' });
        i += 1;
      } else if (name) {
        out.push({ k: 'member', name: name.toLowerCase() });
        i += name.length;
      } else if (text[i] !== '[') return `a member name or * must follow .. (at ${i + 1})`;
      continue;
    }
    if (rest.startsWith('.*') || rest.startsWith('[*]')) {
      out.push({ k: 'any' });
      i += rest.startsWith('.*') ? 2 : 3;
      continue;
    }
    if (rest.startsWith('.')) {
      const name = WORD.exec(rest.slice(1))?.[0];
      if (!name) return `a member name must follow . (at ${i + 1}); quote other names as ['name']`;
      out.push({ k: 'member', name: name.toLowerCase() });
      i += 1 + name.length;
      continue;
    }
    const quoted = /^\[(['"])((?:(?!\1).)+)\1\]/.exec(rest);
    if (quoted) {
      out.push({ k: 'member', name: (quoted[2] as string).toLowerCase() });
      i += quoted[0].length;
      continue;
    }
    return `unexpected ${JSON.stringify(text[i])} (at ${i + 1}); paths are made of .name, ['name'], [*], .* and ..name`;
  }
  if (out[out.length - 1]?.k === 'deep') return 'a path cannot end with ..';
  if (out.length > MAX_SEGMENTS) return `a path has at most ${MAX_SEGMENTS} parts`;
  return out;
}

/** Segments a path may have: its states are the bits of a 32-bit number. */
export const MAX_SEGMENTS = 30;

/**
 * Where a path stands while a value is walked: a bit for each position in its segments it may be
 * at (a deep segment lets it be at several); bit `length` set: the path reaches the value. Zero:
 * it can no longer reach anything below.
 */
export type PathState = number;

/** A deep segment's zero-level reach, followed. */
function close(path: readonly Segment[], state: PathState): PathState {
  let out = state;
  for (let p = 0; p < path.length; p++) if (out & (1 << p) && path[p]?.k === 'deep') out |= 1 << (p + 1);
  return out;
}

export function startState(path: readonly Segment[]): PathState {
  return close(path, 1);
}

/** The state after stepping into member `name` (lower case) or an array item (`name` null). */
export function step(path: readonly Segment[], state: PathState, name: string | null): PathState {
  // An array's items stand where the array stands; [*] may also take the step.
  let next = name === null ? state : 0;
  for (let p = 0; p < path.length; p++) {
    if (!(state & (1 << p))) continue;
    const seg = path[p] as Segment;
    if (seg.k === 'deep') next |= 1 << p;
    else if (seg.k === 'any' || (name !== null && seg.name === name)) next |= 1 << (p + 1);
  }
  return next === 0 ? 0 : close(path, next);
}

/** Whether the path reaches the value where it stands. */
export function reached(path: readonly Segment[], state: PathState): boolean {
  return (state & (1 << path.length)) !== 0;
}

/** Whether the path may still reach something below where it stands. */
export function goesOn(path: readonly Segment[], state: PathState): boolean {
  return (state & ((1 << path.length) - 1)) !== 0;
}
