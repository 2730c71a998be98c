// JSON may carry what UTF-8 cannot: a lone UTF-16 surrogate, written as an escape (`"\ud800"`) that
// JSON.parse turns into half a character. DuckDB's JSON and text refuse it, Parquet and the raw
// archive store UTF-8, and a pass would lose the whole run for one character. So every string of a
// response, member names included, has its lone surrogates replaced by U+FFFD (the replacement
// character), as the UTF-8 encoder of the raw archive does anyway. This is the one normalisation
// of the API's text: everything else is kept exactly as sent.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** A surrogate escape in the body's text: only then can a parsed value hold a lone one. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

export function wellFormedText(s: string): string {
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(s) ? s.replace(LONE_SURROGATE, '\uFFFD') : s;
}

/** `value` with every lone surrogate replaced; the same object when `text` escapes none. */
export function wellFormedJson(value: unknown, text: string): unknown {
  return SURROGATE_ESCAPE.test(text) ? mend(value) : value;
}

function mend(v: unknown): unknown {
  if (typeof v === 'string') return wellFormedText(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = mend(v[i]);
    return v;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      const mended = wellFormedText(key);
      const value = mend(o[key]);
      if (mended !== key) {
        delete o[key];
        o[mended] = value;
      } else o[key] = value;
    }
  }
  return v;
}
