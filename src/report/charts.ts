import { displayWidth } from '../util/display-width.ts';

// Charts for the HTML report as inline SVG strings: no script, no library, no network, so the
// page shows the same in any browser, offline, and in an e-mail attachment. Every drawn mark is a
// <rect class="mark"> with a <title> giving its exact figure.

export interface Series {
  name: string;
  color: string;
  values: readonly number[];
}

export interface ColumnChart {
  id: string;
  title: string;
  categories: readonly string[];
  series: readonly Series[];
  width?: number;
  height?: number;
}

export interface Bar {
  label: string;
  value: number;
  /** What the bar's end says, e.g. "7.2 % of 2 780". */
  text: string;
  color?: string;
}

export interface BarChart {
  id: string;
  title: string;
  bars: readonly Bar[];
  /** Where the scale ends (default: the largest value). */
  max?: number;
  /** Bar length from a value: linear (default) or log10(1 + value). */
  scale?: 'linear' | 'log';
  /** Gridlines: values and their labels. */
  ticks?: readonly { value: number; label: string }[];
  width?: number;
  color?: string;
}

export function esc(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

const n1 = (x: number) => (Math.round(x * 10) / 10).toString();

/**
 * The step of a readable axis: 1, 2 or 5 times a power of ten, the smallest that reaches past
 * `max` in at most `count` steps, so that the axis ends close above the largest value (101 runs:
 * 0 to 120 by 20, not to 150 by 50).
 */
export function niceStep(max: number, count = 6): number {
  if (max <= 0) return 1;
  let p = 10 ** Math.floor(Math.log10(max / count));
  for (;;) {
    for (const m of [1, 2, 5]) if (Math.ceil(max / (m * p) - 1e-9) <= count) return m * p;
    p *= 10;
  }
}

/** The opening tag every chart shares; `attrs` adds the font for charts with text. */
function svgTag(id: string, label: string, width: number, height: number, attrs = ''): string {
  return (
    `<svg class="chart" data-chart="${esc(id)}" role="img" aria-label="${esc(label)}"` +
    ` width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"${attrs}>`
  );
}

/**
 * The page's fonts, then ones that hold Chinese, Japanese and Korean glyphs and colour emoji, on
 * each system, so that names in any script and emoji render rather than as empty boxes.
 */
export const FONT_STACK =
  'system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", "DejaVu Sans", ' +
  '"Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK KR", "Source Han Sans SC", "PingFang SC", ' +
  '"Hiragino Sans", "Microsoft YaHei", "Yu Gothic", "Malgun Gothic", ' +
  '"Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji", "Twemoji Mozilla", sans-serif';

const font = (size: number) => ` font-family="${esc(FONT_STACK)}" font-size="${size}"`;

function empty(id: string, title: string, width: number, height: number): string {
  return `${svgTag(id, `${title}: no data yet`, width, height)}
<rect x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" fill="none" stroke="#ddd"/>
<text x="${width / 2}" y="${height / 2}" text-anchor="middle" fill="#888"${font(14)}>no data yet</text></svg>`;
}

/** Colour swatches with their names in a row from `left`, the swatches from `y` down 12 pixels. */
function legend(
  out: string[],
  series: readonly { name: string; color: string }[],
  left: number,
  y: number,
  textAttrs = '',
): void {
  let x = left;
  for (const s of series) {
    out.push(
      `<rect x="${x}" y="${y}" width="12" height="12" fill="${s.color}"/>` +
        `<text x="${x + 16}" y="${y + 10}" fill="#333"${textAttrs}>${esc(s.name)}</text>`,
    );
    x += 24 + displayWidth(s.name) * 7;
  }
}

/** A drawn mark: a rectangle whose <title> gives its exact figure. */
function mark(x: number, y: number, width: number, height: number, fill: string, title: string): string {
  return (
    `<rect class="mark" x="${n1(x)}" y="${n1(y)}" width="${n1(width)}" height="${n1(height)}" fill="${fill}">` +
    `<title>${esc(title)}</title></rect>`
  );
}

/** Stacked columns, one per category (a day), the series stacked bottom up, with a legend. */
export function stackedColumns(c: ColumnChart): string {
  const width = c.width ?? 960;
  const height = c.height ?? 320;
  const totals = c.categories.map((_, i) => c.series.reduce((a, s) => a + (s.values[i] ?? 0), 0));
  const top = Math.max(0, ...totals);
  if (c.categories.length === 0 || top === 0) return empty(c.id, c.title, width, height);
  const left = 48;
  const right = 12;
  const plotTop = 34;
  const bottom = 46;
  const plotH = height - plotTop - bottom;
  const plotW = width - left - right;
  const step = niceStep(top);
  const yMax = Math.ceil(top / step) * step;
  const y = (v: number) => plotTop + plotH - (v / yMax) * plotH;
  const slot = plotW / c.categories.length;
  const barW = Math.max(1, Math.min(40, slot * 0.8));
  const out: string[] = [];
  out.push(svgTag(c.id, c.title, width, height, font(11)));
  legend(out, c.series, left, 8);
  for (let v = 0; v <= yMax + 1e-9; v += step) {
    const stroke = v === 0 ? '#999' : '#e6e6e6';
    out.push(`<line x1="${left}" x2="${width - right}" y1="${n1(y(v))}" y2="${n1(y(v))}" stroke="${stroke}"/>`);
    out.push(`<text x="${left - 6}" y="${n1(y(v) + 4)}" text-anchor="end" fill="#666">${n1(v)}</text>`);
  }
  // Label about ten categories, evenly spread, so dates never overlap.
  const every = Math.max(1, Math.ceil(c.categories.length / 10));
  c.categories.forEach((cat, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let base = 0;
    for (const s of c.series) {
      const v = s.values[i] ?? 0;
      if (v > 0) out.push(mark(x, y(base + v), barW, y(base) - y(base + v), s.color, `${cat}: ${s.name} ${v}`));
      base += v;
    }
    if (i % every === 0) {
      const at = `x="${n1(x + barW / 2)}" y="${height - bottom + 16}"`;
      out.push(`<text ${at} text-anchor="middle" fill="#666">${esc(cat)}</text>`);
    }
  });
  out.push('</svg>');
  return out.join('\n');
}

/** Horizontal bars, one per row: the label on the left, the bar, its text at the bar's end. */
export function horizontalBars(c: BarChart): string {
  const width = c.width ?? 960;
  const rowH = 22;
  const top = c.ticks?.length ? 22 : 6;
  const height = top + c.bars.length * rowH + 8;
  if (c.bars.length === 0) return empty(c.id, c.title, width, 80);
  const labelW = Math.min(280, 16 + Math.max(...c.bars.map((b) => displayWidth(b.label))) * 7);
  const textW = 170;
  const plotW = width - labelW - textW;
  const f = (v: number) => (c.scale === 'log' ? Math.log10(1 + Math.max(0, v)) : Math.max(0, v));
  const max = f(c.max ?? Math.max(...c.bars.map((b) => b.value))) || 1;
  const x = (v: number) => labelW + (Math.min(f(v), max) / max) * plotW;
  const out: string[] = [];
  out.push(svgTag(c.id, c.title, width, height, font(12)));
  for (const t of c.ticks ?? []) {
    out.push(
      `<line x1="${n1(x(t.value))}" x2="${n1(x(t.value))}" y1="${top - 4}" y2="${height - 6}" stroke="#e6e6e6"/>`,
    );
    out.push(
      `<text x="${n1(x(t.value))}" y="14" text-anchor="middle" fill="#666" font-size="11">${esc(t.label)}</text>`,
    );
  }
  c.bars.forEach((b, i) => {
    const yTop = top + i * rowH;
    // A value above zero always shows, however small beside the largest.
    const w = b.value > 0 ? Math.max(2, x(b.value) - labelW) : 0;
    out.push(`<text x="${labelW - 8}" y="${yTop + 15}" text-anchor="end" fill="#333">${esc(b.label)}</text>`);
    if (w > 0) out.push(mark(labelW, yTop + 3, w, rowH - 6, b.color ?? c.color ?? '#1565c0', `${b.label}: ${b.text}`));
    out.push(`<text x="${n1(labelW + w + 6)}" y="${yTop + 15}" fill="#333">${esc(b.text)}</text>`);
  });
  out.push(`<line x1="${labelW}" x2="${labelW}" y1="${top - 4}" y2="${height - 6}" stroke="#999"/>`);
  out.push('</svg>');
  return out.join('\n');
}

/** 100 % stacked horizontal bars: each row's shares of a whole (an agent's resolutions). */
export function shareBars(c: {
  id: string;
  title: string;
  rows: readonly { label: string; total: number; parts: readonly number[] }[];
  series: readonly { name: string; color: string }[];
  width?: number;
}): string {
  const width = c.width ?? 960;
  const rowH = 22;
  const top = 28;
  if (c.rows.length === 0) return empty(c.id, c.title, width, 80);
  const height = top + c.rows.length * rowH + 8;
  const labelW = Math.min(280, 16 + Math.max(...c.rows.map((r) => displayWidth(r.label))) * 7);
  const textW = 90;
  const plotW = width - labelW - textW;
  const out: string[] = [];
  out.push(svgTag(c.id, c.title, width, height, font(12)));
  legend(out, c.series, labelW, 6, ' font-size="11"');
  c.rows.forEach((r, i) => {
    const yTop = top + i * rowH;
    out.push(`<text x="${labelW - 8}" y="${yTop + 15}" text-anchor="end" fill="#333">${esc(r.label)}</text>`);
    let x = labelW;
    r.parts.forEach((p, k) => {
      if (p <= 0 || r.total <= 0) return;
      const w = (p / r.total) * plotW;
      const s = c.series[k] as { name: string; color: string };
      const share = `${p} of ${r.total} (${n1((100 * p) / r.total)} %)`;
      out.push(mark(x, yTop + 3, w, rowH - 6, s.color, `${r.label}: ${s.name} ${share}`));
      x += w;
    });
    out.push(`<text x="${labelW + plotW + 6}" y="${yTop + 15}" fill="#333">${r.total} runs</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
