// How many columns text takes on a terminal (and, roughly, how wide it is in a proportional font):
// East Asian wide and fullwidth characters and emoji take two, combining marks and other
// zero-width characters none. Counted per grapheme (what a person sees as one character), so an
// emoji made of several code points, a flag or a letter with its accents counts once.

const WIDE =
  /[\u1100-\u115F\u231A\u231B\u2329\u232A\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uA960-\uA97F\uAC00-\uD7A3\uF900-\uFAFF\uFE10-\uFE19\uFE30-\uFE6F\uFF00-\uFF60\uFFE0-\uFFE6]|[\u{16FE0}-\u{16FE4}\u{17000}-\u{18CFF}\u{1B000}-\u{1B2FF}\u{1F200}-\u{1F2FF}\u{20000}-\u{2FFFD}\u{30000}-\u{3FFFD}]/u;
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F/u;
const ZERO = /^[\p{M}\p{Cf}\p{Cc}\u200B]*$/u;

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

function graphemeWidth(g: string): number {
  if (ZERO.test(g)) return 0;
  if (EMOJI.test(g) || WIDE.test(g)) return 2;
  return 1;
}

export function displayWidth(text: string): number {
  // Plain ASCII is by far the most common: one column a character.
  if (/^[\x20-\x7e]*$/.test(text)) return text.length;
  let width = 0;
  for (const { segment } of graphemes.segment(text)) width += graphemeWidth(segment);
  return width;
}

/** `text` cut to at most `max` columns, an ellipsis in the last when it was cut. */
export function truncateToWidth(text: string, max: number): string {
  if (max <= 0 || displayWidth(text) <= max) return text;
  let out = '';
  let width = 0;
  for (const { segment } of graphemes.segment(text)) {
    const w = graphemeWidth(segment);
    if (width + w > max - 1) break;
    out += segment;
    width += w;
  }
  return `${out}…`;
}

/** `text` padded with spaces to `width` columns, on the right (or on the left, for numbers). */
export function padToWidth(text: string, width: number, left = false): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(text)));
  return left ? fill + text : text + fill;
}
