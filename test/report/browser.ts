import { type Browser, chromium, type Page } from 'playwright-core';

// Debian's Chromium, driven by playwright-core, for the report's rendering tests. Everything that
// would reach the network on its own (updates, sync, QUIC probes) is switched off.

export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

export interface PixelStats {
  width: number;
  height: number;
  /** Distinct colours (quantised to 5 bits a channel). */
  colours: number;
  /** Share of pixels that are not the most common colour (the background). */
  inked: number;
  /** Pixels within a small distance of each asked-for colour. */
  matches: Record<string, number>;
}

// Runs in the page (plain JavaScript: the project's TypeScript has no DOM types).
const COUNT_PIXELS = `async ({ b64, want }) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.width;
  canvas.height = img.height;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const data = g.getImageData(0, 0, img.width, img.height).data;
  const counts = new Map();
  const targets = want.map((hex) => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16)));
  const matches = want.map(() => 0);
  for (let i = 0; i < data.length; i += 4) {
    const r = data[i], gr = data[i + 1], b = data[i + 2];
    const key = ((r >> 3) << 10) | ((gr >> 3) << 5) | (b >> 3);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    targets.forEach(([tr, tg, tb], k) => {
      if (Math.abs(r - tr) + Math.abs(gr - tg) + Math.abs(b - tb) < 24) matches[k] += 1;
    });
  }
  const total = img.width * img.height;
  const background = Math.max(...counts.values());
  return {
    width: img.width,
    height: img.height,
    colours: counts.size,
    inked: (total - background) / total,
    matches: Object.fromEntries(want.map((w, k) => [w, matches[k]])),
  };
}`;

/** Decodes a PNG with the browser itself and counts what is drawn in it. */
export async function pixelStats(page: Page, png: Buffer, colours: readonly string[] = []): Promise<PixelStats> {
  const args = JSON.stringify({ b64: png.toString('base64'), want: colours });
  return (await page.evaluate(`(${COUNT_PIXELS})(${args})`)) as PixelStats;
}
