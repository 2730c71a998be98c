import { describe, expect, it } from 'vitest';
import { wellFormedJson, wellFormedText } from '../../src/api/well-formed.ts';

// The one normalisation of the API's text: a lone UTF-16 surrogate, which UTF-8 cannot hold,
// becomes U+FFFD; pairs, escaped backslashes and everything else stay as sent.

describe('well-formed text from the API', () => {
  it('replaces lone high and low surrogates, in values and member names, and keeps pairs', () => {
    const body = '{"a":"x\\ud800y","b":"\\\\ud800 stays text","c":"\\ud83d\\ude42","\\udfffkey":["\\udc00",1]}';
    expect(wellFormedJson(JSON.parse(body), body)).toEqual({
      a: 'x\ufffdy',
      b: '\\ud800 stays text',
      c: '🙂',
      '\ufffdkey': ['\ufffd', 1],
    });
    expect(wellFormedText('🙂\ud800')).toBe('🙂\ufffd');
  });

  it('leaves a body without surrogate escapes untouched, the same object', () => {
    const value = { a: 'plain ✨ text' };
    expect(wellFormedJson(value, JSON.stringify(value))).toBe(value);
  });
});
