import { Writable } from 'node:stream';

// What a person would see on a terminal given some output: the text left once the cursor moves,
// lines cleared and redrawn (as a progress bar does) are applied.

/** A terminal as far as the bar needs one, keeping what a person would see. */
export class Screen extends Writable {
  readonly isTTY = true;
  readonly rows = 40;

  constructor(readonly columns = 120) {
    super();
  }
  private lines: string[] = [''];
  private row = 0;
  private col = 0;

  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.feed(String(chunk));
    done();
  }

  /** The screen's lines, trailing spaces trimmed. */
  text(): string[] {
    return this.lines.map((l) => l.trimEnd());
  }

  /** Takes more output, as the terminal would. */
  feed(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const c = s[i] as string;
      if (c === '\x1b') {
        const m = /^\x1b(\[\??[\d;]*[A-Za-z]|[78])/.exec(s.slice(i));
        if (!m) continue;
        this.escape(m[1] as string);
        i += (m[0] as string).length - 1;
      } else if (c === '\r') this.col = 0;
      else if (c === '\n') {
        this.row++;
        this.col = 0;
        if (this.lines.length <= this.row) this.lines.push('');
      } else {
        const line = (this.lines[this.row] as string).padEnd(this.col, ' ');
        this.lines[this.row] = line.slice(0, this.col) + c + line.slice(this.col + 1);
        this.col++;
      }
    }
  }

  private escape(e: string): void {
    const n = Number(/\d+/.exec(e)?.[0] ?? 1);
    const cmd = e[e.length - 1];
    if (cmd === 'G') this.col = n - 1;
    else if (cmd === 'A') this.row = Math.max(0, this.row - n);
    else if (cmd === 'B') this.row += n;
    else if (cmd === 'C') this.col += n;
    else if (cmd === 'D') this.col = Math.max(0, this.col - n);
    else if (cmd === 'K') {
      const line = this.lines[this.row] as string;
      this.lines[this.row] = e.includes('2')
        ? ''
        : e.includes('1')
          ? ' '.repeat(this.col) + line.slice(this.col)
          : line.slice(0, this.col);
    } else if (cmd === 'J')
      this.lines = this.lines.slice(0, this.row + 1).map((l, i) => (i === this.row ? l.slice(0, this.col) : l));
    while (this.lines.length <= this.row) this.lines.push('');
  }
}
