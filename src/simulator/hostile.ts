import type { Json } from './catalog.ts';
import { rngFor } from './random.ts';

// Payloads data generators rarely make, as a real API sends them now and then: NUL characters,
// lone UTF-16 surrogates (valid JSON, not valid UTF-8), emoji and right-to-left text, 10 KB ticket
// titles, tool inputs and outputs of every JSON type, member names with dots and spaces, and runs
// with thousands of messages and steps. A share of runs (`hostileFraction`) carries them.

const ODD_TEXT = [
  'nul\u0000inside',
  'lone \ud800 high and \udfff low surrogates',
  'emoji ✨🚀👩‍💻 and flags 🇯🇵',
  'مرحبا بالعالم — right to left',
  'サポートチーム「返金」',
  'combining e\u0301 and zero\u200bwidth',
  'quotes \' " ` and \\ backslash, tab\tnewline\n',
];

const EVERY_JSON_TYPE: Json[] = [
  { value: 'a bare string' },
  { value: 42.5 },
  { value: null },
  { value: true },
  { value: [1, 'two', null, { three: 3 }, [4], false] },
  { value: { 'a.b': 1, 'with space': 'x', '': 'empty name', ключ: ['значение'], 'emoji ✨': { nested: null } } },
  { value: 'x'.repeat(3000) },
];

export function isHostile(seed: number, index: number, fraction: number): boolean {
  return fraction > 0 && rngFor(seed, 'hostile', index).chance(fraction);
}

/** A ticket title with odd characters; one run in four has one of 10 KB. */
export function hostileTitle(seed: number, index: number, plain: string): string {
  const r = rngFor(seed, 'hostile-title', index);
  const odd = `${plain} ${r.pick(ODD_TEXT)}`;
  return r.chance(0.25) ? `${odd} ${'long title '.repeat(1000)}`.slice(0, 10_240) : odd;
}

/** The detail with odd text in its messages and tool calls of every JSON type; some huge. */
export function hostileDetail(seed: number, index: number, detail: Json): Json {
  const r = rngFor(seed, 'hostile-detail', index);
  let conversation: Json[] = (detail.conversation as Json[]).map((m, k) => ({
    ...m,
    message: `${m.message as string} ${ODD_TEXT[k % ODD_TEXT.length]}`,
    user_name: k === 0 ? `${m.user_name as string} ${r.pick(ODD_TEXT)}` : m.user_name,
  }));
  let steps: Json[] = (detail.steps as Json[]).map((s, j) => {
    const tool = s.tool as Json | null;
    if (!tool || s.type !== 'tool_call') return s;
    const kind = EVERY_JSON_TYPE[(index + j) % EVERY_JSON_TYPE.length] as Json;
    const other = EVERY_JSON_TYPE[(index + j + 3) % EVERY_JSON_TYPE.length] as Json;
    return { ...s, tool: { ...tool, input: kind.value, output: other.value } };
  });
  // One hostile run in twenty is huge: thousands of messages and steps.
  if (r.chance(0.05)) {
    const m0 = conversation[0] as Json;
    const s0 = steps[0] as Json;
    conversation = Array.from({ length: 3000 }, (_, k) => ({
      ...m0,
      id: uuidLike(seed, index, 'm', k),
      order: k + 1,
      message: `message ${k} ${ODD_TEXT[k % ODD_TEXT.length]}`,
    }));
    steps = Array.from({ length: 2000 }, (_, j) => ({
      ...s0,
      id: uuidLike(seed, index, 's', j),
      order: j + 1,
      title: `step ${j}`,
    }));
  }
  return { ...detail, conversation, steps };
}

function uuidLike(seed: number, index: number, kind: string, k: number): string {
  return rngFor(seed, `hostile-${kind}`, index, k).uuid();
}
