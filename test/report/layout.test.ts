import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { niceStep } from '../../src/report/charts.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { runCli } from '../support/cli.ts';
import { startSim } from '../sync/kit.ts';
import { launchChromium } from './browser.ts';

// The report of a first sync as a person sees it in Chromium, at the widths of a laptop, a wide
// screen and a phone: the tiles fill whole rows, names in Japanese and with an emoji (the
// simulator's agents include サポート and Helpdesk ✨) are drawn with real glyphs, not empty boxes,
// the runs axis ends close above the busiest day, and the empty lag table says why it is empty.

const WIDTHS = [1280, 1400, 1100, 420];

// Runs in the page: draws each sample on a canvas with the page's own fonts and compares it with
// a character no font has (drawn as the missing-glyph box), pixel by pixel.
const GLYPHS = `({ samples, font }) => {
  const canvas = document.createElement('canvas');
  canvas.width = 96;
  canvas.height = 48;
  const g = canvas.getContext('2d', { willReadFrequently: true });
  const draw = (text) => {
    g.clearRect(0, 0, 96, 48);
    g.font = '28px ' + font;
    g.fillStyle = '#000';
    g.textBaseline = 'top';
    g.fillText(text, 4, 4);
    return { data: g.getImageData(0, 0, 96, 48).data, width: g.measureText(text).width };
  };
  const box = draw('\\u{10FFFD}');
  return samples.map((s) => {
    const { data, width } = draw(s);
    let ink = 0, differ = 0, colour = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i + 3] > 0) ink++;
      if (data[i + 3] !== box.data[i + 3]) differ++;
      const [r, gr, b] = [data[i], data[i + 1], data[i + 2]];
      if (data[i + 3] > 128 && Math.max(r, gr, b) - Math.min(r, gr, b) > 60) colour++;
    }
    return { sample: s, ink, differ, colour, width, boxWidth: box.width };
  });
}`;

describe('the report in Chromium', () => {
  let sim: Simulator;
  let browser: Browser;
  let page: Page;
  let tmp = '';
  let file = '';
  beforeAll(async () => {
    [sim, browser] = await Promise.all([startSim({ seed: 44, size: 240, days: 6 }), launchChromium()]);
    tmp = mkdtempSync(join(tmpdir(), 'runsync-layout-'));
    const dir = join(tmp, 'warehouse');
    const env = { RUNSYNC_API_URL: sim.url, RUNSYNC_API_KEY: sim.key, RUNSYNC_WAREHOUSE_DIR: dir };
    const s = await runCli(['sync'], env);
    expect(s.code, s.stderr).toBe(0);
    const r = await runCli(['report'], env);
    expect(r.code, r.stderr).toBe(0);
    file = join(dir, 'report.html');
    page = await browser.newPage({ viewport: { width: WIDTHS[0] as number, height: 900 } });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await sim?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it.each(WIDTHS)('at %i px the tiles fill whole rows', async (width) => {
    await page.setViewportSize({ width, height: 900 });
    const tops = await page
      .locator('.tiles .tile')
      .evaluateAll((tiles) => tiles.map((t) => Math.round(t.getBoundingClientRect().top)));
    expect(tops).toHaveLength(6);
    const rows = new Map<number, number>();
    for (const t of tops) rows.set(t, (rows.get(t) ?? 0) + 1);
    const perRow = [...rows.values()];
    // Every row as full as the first: never one tile alone on the last.
    expect(
      perRow.every((n) => n === perRow[0]),
      `${width}px: ${perRow.join(' + ')}`,
    ).toBe(true);
    if (width >= 1100) expect(perRow).toEqual([6]);
    // And no tile overflows its neighbour.
    const overflow = await page
      .locator('.tiles .tile')
      .evaluateAll((tiles) => tiles.filter((t) => t.scrollWidth > t.clientWidth + 1).length);
    expect(overflow, `${width}px`).toBe(0);
  });

  it('names in Japanese and with an emoji are drawn with real glyphs', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    const labels = await page.locator('svg[data-chart="resolution-by-agent"] text').allTextContents();
    expect(labels).toContain('サポート');
    expect(labels).toContain('Helpdesk ✨');
    const font = await page
      .locator('svg[data-chart="resolution-by-agent"] text')
      .first()
      .evaluate(
        (t) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { fontFamily: string } }).getComputedStyle(t)
            .fontFamily,
      );
    const samples = ['サ', 'ポ', 'ー', 'ト', '✨'];
    const seen = (await page.evaluate(`(${GLYPHS})(${JSON.stringify({ samples, font })})`)) as {
      sample: string;
      ink: number;
      differ: number;
      colour: number;
    }[];
    for (const g of seen) {
      expect(g.ink, g.sample).toBeGreaterThan(20);
      // Not the missing-glyph box: its pixels are not the box's.
      expect(g.differ, g.sample).toBeGreaterThan(40);
    }
    // A colour emoji, not a monochrome outline or a box.
    expect(seen.find((g) => g.sample === '✨')?.colour).toBeGreaterThan(20);
  });

  it('the runs axis ends close above the busiest day', async () => {
    const svg = page.locator('svg[data-chart="runs-per-day"]');
    const ticks = (await svg.locator('text[text-anchor="end"]').allTextContents()).map(Number);
    const totals = new Map<string, number>();
    for (const t of await svg.locator('rect.mark title').allTextContents()) {
      const m = /^(\S+): .* (\d+)$/.exec(t) as RegExpExecArray;
      totals.set(m[1] as string, (totals.get(m[1] as string) ?? 0) + Number(m[2]));
    }
    const busiest = Math.max(...totals.values());
    const top = Math.max(...ticks);
    expect(top).toBeGreaterThanOrEqual(busiest);
    expect(top - busiest, `axis to ${top} for ${busiest}`).toBeLessThanOrEqual(top - (ticks.at(-2) ?? 0));
    expect(top / busiest).toBeLessThan(1.35);
  });

  it('a first sync has no lag to show: the table has its heading and says why', () => {
    const html = readFileSync(file, 'utf8');
    expect(html).not.toContain('<p class="note">none</p>');
    expect(html).toMatch(/<h3>Lag of the last hour<\/h3>\n<p class="note">No change was measured[^<]*first sync/);
  });
});

describe('the axis step', () => {
  it.each([
    [101, 20, 120],
    [100, 20, 100],
    [7, 2, 8],
    [250, 50, 250],
    [1, 0.2, 1],
    [9999, 2000, 10_000],
  ])('for a largest value of %d: a step of %d, up to %d', (max, step, top) => {
    const s = niceStep(max);
    expect(s).toBeCloseTo(step, 9);
    expect(Math.ceil(max / s - 1e-9) * s).toBeCloseTo(top, 9);
  });
});
