import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/table-format.ts';
import { displayWidth, truncateToWidth } from '../../src/util/display-width.ts';

// Tables printed by `runsync query` and the demo stay aligned on a terminal whatever the names
// hold: wide characters and emoji take two columns, combining marks none.

describe('display width', () => {
  it.each([
    ['Support Bot', 11],
    ['サポート', 8],
    ['Helpdesk ✨', 11],
    ['Kundenservice', 13],
    ['e\u0301te\u0301', 3],
    ['👩‍💻', 2],
    ['🇯🇵', 2],
    ['☺\uFE0F', 2],
    ['客服', 4],
    ['ＡＢ', 4],
    ['', 0],
  ])('%s takes %i columns', (text, width) => {
    expect(displayWidth(text)).toBe(width);
  });

  it('cuts by columns, never through a character', () => {
    expect(truncateToWidth('サポートチーム', 7)).toBe('サポー…');
    expect(truncateToWidth('Helpdesk ✨✨', 10)).toBe('Helpdesk …');
    expect(truncateToWidth('short', 10)).toBe('short');
  });
});

describe('formatTable', () => {
  it('aligns columns after names with wide characters, emoji and accents', () => {
    const rows = [
      { agent: 'Returns helper', team: 'returns', runs: 197 },
      { agent: 'Helpdesk ✨', team: 'サポート', runs: 174 },
      { agent: 'サポート', team: 'e\u0301quipe', runs: 9 },
      { agent: '👩‍💻 dev', team: '客服', runs: 1234 },
    ];
    const lines = formatTable(rows);
    expect(lines).toHaveLength(6);
    // The last column holds numbers, right-aligned: every line ends at the same column.
    const widths = lines.map(displayWidth);
    expect(new Set(widths).size, lines.join('\n')).toBe(1);
    // And the middle column starts at the same column on every line.
    const startOfTeam = (line: string, team: string) => displayWidth(line.slice(0, line.indexOf(team)));
    const teams = ['team', 'returns', 'サポート', 'e\u0301quipe', '客服'];
    const starts = [lines[0], ...lines.slice(2)].map((l, i) => startOfTeam(l as string, teams[i] as string));
    expect(new Set(starts).size, lines.join('\n')).toBe(1);
  });
});
