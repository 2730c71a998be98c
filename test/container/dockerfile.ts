// The Dockerfile's instructions, read as Docker reads the ones it uses: stages (FROM … AS name),
// WORKDIR, ENV, COPY (with --from), RUN, USER, VOLUME, ENTRYPOINT. Line continuations are
// joined and comments dropped.

export interface Step {
  kind: string;
  args: string;
}

export interface Stage {
  name: string | null;
  image: string;
  steps: Step[];
}

export function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const kind = (m[1] as string).toUpperCase();
    const args = (m[2] as string).trim();
    if (kind === 'FROM') {
      const [image, , name] = args.split(/\s+/);
      stages.push({ image: image as string, name: name ?? null, steps: [] });
    } else stages.at(-1)?.steps.push({ kind, args });
  }
  return stages;
}

/** ENV a=b c=d, or the older ENV a b. */
export function envOf(args: string): Record<string, string> {
  if (!args.includes('=')) {
    const [k, ...v] = args.split(/\s+/);
    return { [k as string]: v.join(' ') };
  }
  return Object.fromEntries(
    [...args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map((m) => [m[1], (m[2] as string).replace(/^"|"$/g, '')]),
  );
}
