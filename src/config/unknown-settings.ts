import { FILE_VARIANTS, INTERNAL_NAMES, SETTINGS } from './settings.ts';

// A RUNSYNC_* name runsync does not read is most often a misspelled setting, and a misspelled
// setting is silently its default: RUNSYNC_WAREHOUSE=./elsewhere writes to ./warehouse. Each such
// name gets one line on stderr, with the nearest setting when one is close. A warning, not a
// refusal: the environment of a shell or a container holds names other tools set too.

type Env = Readonly<Record<string, string | undefined>>;

/** Every RUNSYNC_* name runsync knows: its settings, their _FILE variants, its internal marks. */
export function knownNames(): Set<string> {
  return new Set([...Object.keys(SETTINGS), ...FILE_VARIANTS.map((n) => `${n}_FILE`), ...INTERNAL_NAMES]);
}

/** One line for each RUNSYNC_* name in `env` that runsync does not read, sorted by name. */
export function unknownSettingWarnings(env: Env): string[] {
  const known = knownNames();
  const settings = [...known].filter((n) => !INTERNAL_NAMES.includes(n));
  return Object.keys(env)
    .filter((name) => name.startsWith('RUNSYNC_') && !known.has(name))
    .sort()
    .map(
      (name) => `runsync: warning: ${name} is not a setting runsync reads, so it is ignored; ${hint(name, settings)}`,
    );
}

function hint(name: string, settings: readonly string[]): string {
  if (name.endsWith('_FILE') && name.slice(0, -'_FILE'.length) in SETTINGS)
    return `only ${FILE_VARIANTS.map((n) => `${n}_FILE`).join(' and ')} read their value from a file`;
  const near = nearest(name, settings);
  return near ? `did you mean ${near}?` : '`runsync --help` lists the settings';
}

/** The setting closest to `name`, when it is close enough to be what was meant. */
export function nearest(name: string, settings: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const s of settings) {
    const d = distance(name, s);
    if (d < bestDistance) {
      best = s;
      bestDistance = d;
    }
  }
  if (best === null) return null;
  // The part after RUNSYNC_ is what was typed; a third of it may be wrong, or it may be cut short.
  const typed = name.length - 'RUNSYNC_'.length;
  const cutShort = best.startsWith(name) || name.startsWith(best);
  return bestDistance <= Math.max(2, Math.floor(typed / 3)) || cutShort ? best : null;
}

/** Edit distance (insertions, deletions, substitutions, and swaps of neighbours). */
function distance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => (rows[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = d;
    }
  }
  return at(a.length, b.length);
}
