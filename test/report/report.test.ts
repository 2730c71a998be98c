import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { RESOLUTION_SERIES, renderReport } from '../../src/report/html.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { type ViewsFixture, viewsFixture } from '../views/fixture.ts';
import { holdInAnotherProcess, releaseHolder } from '../warehouse/wh-kit.ts';
import { launchChromium, pixelStats } from './browser.ts';

// `runsync report` on the shared synced warehouse, opened in Debian's Chromium: the page loads
// nothing but itself, each chart is an SVG of real size with drawn marks whose figures are the
// views', and the screenshot shows them (decoded pixel by pixel: the series colours are there).

const CHARTS = ['runs-per-day', 'tool-error-rates', 'resolution-by-agent', 'freshness'];

interface Ran {
  code: number;
  out: string[];
  err: string[];
}

async function report(dir: string, ...args: string[]): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['report', ...args], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env: { RUNSYNC_WAREHOUSE_DIR: dir },
    signal: new AbortController().signal,
    isTty: false,
  });
  return { code, out, err };
}

describe('runsync report', () => {
  let fixture: ViewsFixture;
  let tmp: string;
  let browser: Browser;
  let page: Page;
  let file: string;
  const requests: string[] = [];

  beforeAll(async () => {
    [fixture, browser] = await Promise.all([viewsFixture(), launchChromium()]);
    tmp = mkdtempSync(join(tmpdir(), 'runsync-report-'));
    file = join(tmp, 'report.html');
    const r = await report(fixture.dir, '--out', file);
    expect(r.code, r.err.join('\n')).toBe(0);
    expect(r.out).toEqual([expect.stringMatching(new RegExp(`^wrote ${file} \\(\\d+ KB\\) from .*runsync\\.duckdb$`))]);
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on('request', (q) => requests.push(q.url()));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('is one self-contained page: no script, and nothing but itself is loaded', () => {
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//i);
    expect(requests).toEqual([pathToFileURL(file).href]);
  });

  it('draws every chart at a real size, with marks', async () => {
    for (const id of CHARTS) {
      const svg = page.locator(`svg[data-chart="${id}"]`);
      await expect.poll(() => svg.isVisible(), { timeout: 5_000 }).toBe(true);
      const box = await svg.boundingBox();
      expect(box?.width, id).toBeGreaterThan(400);
      expect(box?.height, id).toBeGreaterThan(100);
      const marks = await svg.evaluate((el) =>
        [...el.querySelectorAll('rect.mark')].map((m) => {
          const r = m.getBoundingClientRect();
          return r.width * r.height;
        }),
      );
      expect(marks.length, id).toBeGreaterThan(3);
      expect(marks.filter((a) => a > 0).length, id).toBe(marks.length);
    }
  });

  it("shows the views' figures: runs per day by resolution and tool error rates", async () => {
    const wh = await openWarehouse(fixture.dir, { readOnly: true });
    let days: { day: string; deflected: bigint; escalated: bigint; runs: bigint }[];
    let tools: { label: string; calls: bigint; error_rate: number }[];
    try {
      days = await wh.all(
        `SELECT CAST(day AS VARCHAR) AS day, deflected, escalated, runs
           FROM v_runs_daily_resolution ORDER BY day DESC LIMIT 60`,
      );
      tools = await wh.all(
        `SELECT coalesce(display_name, tool_name) AS label, calls, error_rate
           FROM v_tool_stats WHERE calls > 0 ORDER BY calls DESC, tool_name LIMIT 15`,
      );
    } finally {
      await wh.close();
    }
    const titles = async (id: string) => page.locator(`svg[data-chart="${id}"] rect.mark title`).allTextContents();
    // Every day's columns add up to its runs; the deflected and escalated parts are the view's.
    const perDay = new Map<string, Map<string, number>>();
    for (const t of await titles('runs-per-day')) {
      const m = /^(\d{4}-\d{2}-\d{2}): (.+) (\d+)$/.exec(t);
      expect(m, t).not.toBeNull();
      const [, day, series, n] = m as RegExpExecArray;
      perDay.set(day as string, (perDay.get(day as string) ?? new Map()).set(series as string, Number(n)));
    }
    for (const d of days) {
      const parts = perDay.get(d.day) ?? new Map<string, number>();
      expect(
        [...parts.values()].reduce((a, b) => a + b, 0),
        d.day,
      ).toBe(Number(d.runs));
      expect(parts.get('deflected') ?? 0, d.day).toBe(Number(d.deflected));
      expect(parts.get('escalated') ?? 0, d.day).toBe(Number(d.escalated));
    }
    const bars = await titles('tool-error-rates');
    expect(bars.length).toBe(tools.length);
    for (const t of tools) {
      const pct = `${(Math.round(t.error_rate * 1000) / 10).toFixed(1)} %`;
      expect(bars, t.label).toContain(`${t.label}: ${pct} of ${Number(t.calls).toLocaleString('en-US')} calls`);
    }
    // Highest error rate first.
    const rates = bars.map((b) => Number(/: ([\d.]+) %/.exec(b)?.[1]));
    expect(rates).toEqual([...rates].sort((a, b) => b - a));
  });

  it('its screenshot shows the charts: not blank, and the series colours are drawn', async () => {
    const png = await page.screenshot({ fullPage: true });
    if (process.env.RUNSYNC_REPORT_SCREENSHOT) writeFileSync(process.env.RUNSYNC_REPORT_SCREENSHOT, png);
    const decoder = await browser.newPage();
    try {
      const whole = await pixelStats(decoder, png);
      expect(whole.width).toBe(1100);
      expect(whole.height).toBeGreaterThan(1500);
      expect(whole.colours).toBeGreaterThan(20);
      expect(whole.inked).toBeGreaterThan(0.05);
      const colours = RESOLUTION_SERIES.slice(0, 3).map((s) => s.color);
      const chart = await pixelStats(
        decoder,
        await page.locator('svg[data-chart="runs-per-day"]').screenshot(),
        colours,
      );
      for (const c of colours) expect(chart.matches[c], c).toBeGreaterThan(500);
      const errors = await pixelStats(decoder, await page.locator('svg[data-chart="tool-error-rates"]').screenshot(), [
        '#c62828',
      ]);
      expect(errors.matches['#c62828']).toBeGreaterThan(500);
    } finally {
      await decoder.close();
    }
  });

  it('renders an empty warehouse as a page that says there is no data yet', () => {
    const html = renderReport({
      generatedAt: 0,
      source: { kind: 'analytics', file: '/w/analytics.duckdb' },
      lag: null,
      days: [],
      tools: [],
      toolTotals: { calls: 0, errors: 0, tools: 0 },
      agents: [],
      freshness: [],
      waiting: [],
      waitingTotal: 0,
      evaluations: [],
      passes: null,
    });
    for (const id of CHARTS) expect(html).toMatch(new RegExp(`data-chart="${id}"[^>]*aria-label="[^"]*no data yet"`));
  });

  describe('beside a process that holds the warehouse', () => {
    let dir: string;
    let holder: ChildProcessWithoutNullStreams;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'runsync-report-held-'));
      copyFileSync(join(fixture.dir, 'runsync.duckdb'), join(dir, 'runsync.duckdb'));
      copyFileSync(join(fixture.dir, 'analytics.duckdb'), join(dir, 'analytics.duckdb'));
      holder = await holdInAnotherProcess(dir);
    });
    afterAll(async () => {
      await releaseHolder(holder);
      rmSync(dir, { recursive: true, force: true });
    });

    it('reports from analytics.duckdb and says so', async () => {
      const r = await report(dir, '--wait', '0');
      expect(r.code, r.err.join('\n')).toBe(0);
      expect(r.err).toEqual([
        expect.stringMatching(new RegExp(`in use by process ${holder.pid}.*reporting from analytics\\.duckdb`)),
      ]);
      expect(r.out[0]).toMatch(/from .*analytics\.duckdb$/);
      const html = readFileSync(join(dir, 'report.html'), 'utf8');
      expect(html).toContain('views over the Parquet tree');
      // Same figures as from the warehouse: the charts' marks are the same.
      const marks = (h: string) =>
        (h.match(/<rect class="mark"[^>]*><title>[^<]*<\/title>/g) ?? []).filter((m) => !m.includes('ago')).length;
      expect(marks(html)).toBe(marks(readFileSync(file, 'utf8')));
      expect(existsSync(join(dir, 'report.html'))).toBe(true);
    });
  });
});
