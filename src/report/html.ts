import { formatTimestamp, MICROS_PER_MINUTE, type Micros } from '../util/timestamp.ts';
import { esc, FONT_STACK, horizontalBars, shareBars, stackedColumns } from './charts.ts';
import type { LagReport, PassRow, ReportData } from './data.ts';

// The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched.

export const RESOLUTION_SERIES = [
  { key: 'deflected', name: 'deflected', color: '#2e7d32' },
  { key: 'resolved', name: 'resolved', color: '#1565c0' },
  { key: 'escalated', name: 'escalated', color: '#ef6c00' },
  { key: 'pending', name: 'pending', color: '#8e24aa' },
  { key: 'noResolution', name: 'no resolution', color: '#9e9e9e' },
  { key: 'other', name: 'other', color: '#6d4c41' },
] as const;

/**
 * The tiles are a grid of as many columns as tiles, or a half or a third of them on narrower
 * screens: every row full, never one tile alone on the last.
 */
function tileGrid(n: number): string {
  const divisors = Array.from({ length: n }, (_, i) => n - i).filter((d) => n % d === 0);
  const atMost = (k: number) => divisors.find((d) => d <= k) ?? 1;
  const cols = (k: number) => `grid-template-columns: repeat(${k}, minmax(0, 1fr));`;
  return [
    `.tiles { display: grid; ${cols(n)} gap: 12px; margin: 16px 0; }`,
    `@media (max-width: 960px) { .tiles { ${cols(atMost(Math.max(1, Math.floor(n / 2))))} } }`,
    `@media (max-width: 600px) { .tiles { ${cols(atMost(2))} } }`,
  ].join('\n');
}

const CSS = `
body { font-family: ${FONT_STACK}; margin: 0; color: #222; background: #fafafa; }
header { background: #263238; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: #cfd8dc; font-size: 13px; }
main { padding: 8px 32px 40px; max-width: 1000px; }
section { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 12px 18px 16px; margin: 16px 0; }
h2 { font-size: 17px; margin: 4px 0 2px; }
h3 { font-size: 14px; margin: 14px 0 2px; }
p.note { color: #666; font-size: 12px; margin: 0 0 10px; }
.tile { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 10px 16px; min-width: 0; }
.tile b { display: block; font-size: 22px; }
.tile span { color: #666; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; margin-top: 8px; }
th, td { text-align: left; padding: 3px 10px 3px 0; border-bottom: 1px solid #eee; }
td.n, th.n { text-align: right; }
svg.chart { display: block; max-width: 100%; height: auto; }
`;

const pct = (x: number) => `${(Math.round(x * 1000) / 10).toFixed(1)} %`;
const int = (x: number) => x.toLocaleString('en-US');

/** "3 min", "5.2 h", "12 days": how long before `now`. */
export function age(at: Micros | null, now: Micros): string {
  if (at === null) return 'never';
  const m = (now - at) / MICROS_PER_MINUTE;
  if (m < 0) return 'ahead of this clock';
  if (m < 120) return `${Math.round(m)} min`;
  if (m < 48 * 60) return `${(m / 60).toFixed(1)} h`;
  return `${Math.round(m / 1440)} days`;
}

/** A table column: its heading, its cell for a row, and whether it holds numbers (aligned right). */
type Column<T> = readonly [head: string, cell: (row: T) => string | number, numeric?: 'n'];

/** A table of `rows`; with none, `empty`: a sentence saying why there is nothing to show. */
function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): string {
  if (rows.length === 0) return `<p class="note">${empty}</p>`;
  const cls = ([, , numeric]: Column<T>) => (numeric ? ' class="n"' : '');
  const th = columns.map((c) => `<th${cls(c)}>${esc(c[0])}</th>`).join('');
  const td = (r: T) => columns.map((c) => `<td${cls(c)}>${esc(String(c[1](r)))}</td>`).join('');
  const tr = rows.map((r) => `<tr>${td(r)}</tr>`).join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

function section(id: string, title: string, note: string | null, ...body: string[]): string {
  const lines = [`<section id="${id}">`, `<h2>${title}</h2>`];
  if (note !== null) lines.push(`<p class="note">${note}</p>`);
  return [...lines, ...body, '</section>'].join('\n');
}

const fixed2 = (x: number | null) => (x === null ? '' : x.toFixed(2));
const seconds = (x: number | undefined) => (x === undefined ? '' : `${x.toFixed(1)} s`);

/** How long changes of the last hour took to reach the warehouse and Parquet, per kind of object. */
function lagTable(lag: LagReport, now: Micros): string {
  const h = lag.lastHour;
  const rows = [
    { what: 'runs', to: 'runsync.duckdb', l: h.warehouse },
    { what: 'runs', to: 'Parquet', l: h.parquet },
    { what: 'catalog objects', to: 'runsync.duckdb', l: h.catalog.warehouse },
    { what: 'catalog objects', to: 'Parquet', l: h.catalog.parquet },
  ].filter((r) => r.l !== null);
  const verified =
    lag.horizonVerifiedSince === null
      ? ''
      : `<p class="note">Every run of the open-run horizon was looked at again since ` +
        `${esc(formatTimestamp(lag.horizonVerifiedSince))} (${age(lag.horizonVerifiedSince, now)} ago).</p>`;
  const why =
    'No change was measured in the hour up to the last pass: a first sync loads history, whose lag is not' +
    ' measured, and a pass that found nothing new has nothing to measure. The passes after it say here how' +
    ' long each change took to reach runsync.duckdb and the Parquet tree.';
  const lags = table(
    rows,
    [
      ['changes of the last hour', (r) => r.what],
      ['to', (r) => r.to],
      ['changes', (r) => int(r.l?.count ?? 0), 'n'],
      ['p50', (r) => seconds(r.l?.p50), 'n'],
      ['p95', (r) => seconds(r.l?.p95), 'n'],
      ['max', (r) => seconds(r.l?.max), 'n'],
    ],
    why,
  );
  return `<h3>Lag of the last hour</h3>\n${lags}\n${verified}`;
}
const when = (at: Micros | null) => (at === null ? '' : formatTimestamp(at));
const took = (p: PassRow) =>
  p.finishedAt === null ? 'not finished' : `${((p.finishedAt - p.startedAt) / 1e6).toFixed(1)} s`;

export function renderReport(d: ReportData): string {
  const now = d.generatedAt;
  const tiles = headlineTiles(d);
  const source =
    d.source.kind === 'warehouse'
      ? d.source.file
      : `${d.source.file} (views over the Parquet tree, as of the last export)`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runsync report</title>
<style>${CSS}${tileGrid(tiles.length)}</style>
</head>
<body>
<header>
<h1>Support agent runs</h1>
<p>From ${esc(source)} · generated ${esc(formatTimestamp(now))}</p>
</header>
<main>
<div class="tiles">
${tiles.map(([v, l]) => `<div class="tile"><b>${esc(String(v))}</b><span>${esc(String(l))}</span></div>`).join('\n')}
</div>
${runsSection(d)}
${toolsSection(d)}
${agentsSection(d)}
${freshnessSection(d, now)}
${approvalsSection(d, now)}
${evaluationsSection(d)}
${passesSection(d)}
</main>
</body>
</html>
`;
}

/** The figures at the top: each a value and what it counts. */
function headlineTiles(d: ReportData): [value: string, label: string][] {
  const runs = d.days.reduce((a, r) => a + r.runs, 0);
  const sum = (k: 'deflected' | 'escalated') => d.days.reduce((a, r) => a + r[k], 0);
  return [
    [int(runs), `runs, last ${d.days.length} days`],
    [runs ? pct(sum('deflected') / runs) : '–', 'deflected'],
    [runs ? pct(sum('escalated') / runs) : '–', 'escalated'],
    [int(d.toolTotals.calls), `tool calls, ${d.toolTotals.tools} tools`],
    [d.toolTotals.calls ? pct(d.toolTotals.errors / d.toolTotals.calls) : '–', 'tool calls with an error'],
    [int(d.waitingTotal), 'runs waiting for approval'],
  ];
}

function runsSection(d: ReportData): string {
  const perDay = stackedColumns({
    id: 'runs-per-day',
    title: 'Runs per day by resolution',
    categories: d.days.map((r) => r.day),
    series: RESOLUTION_SERIES.filter((s) => s.key !== 'other' || d.days.some((r) => r.other > 0)).map((s) => ({
      name: s.name,
      color: s.color,
      values: d.days.map((r) => r[s.key]),
    })),
  });
  return section(
    'runs',
    'Runs per day by resolution',
    `UTC days of run creation, the ${d.days.length} days up to the newest run (v_runs_daily_resolution).` +
      ' A run is counted under its current resolution.',
    perDay,
  );
}

function toolsSection(d: ReportData): string {
  const byErrors = [...d.tools].sort((a, b) => b.errorRate - a.errorRate || b.calls - a.calls);
  const toolChart = horizontalBars({
    id: 'tool-error-rates',
    title: 'Tool error rates',
    bars: byErrors.map((t) => ({
      label: t.label ?? t.name,
      value: t.errorRate,
      text: `${pct(t.errorRate)} of ${int(t.calls)} calls`,
      color: t.inCatalog ? '#c62828' : '#8d6e63',
    })),
    max: Math.max(0.01, ...byErrors.map((t) => t.errorRate)),
  });
  return section(
    'tools',
    'Tool error rates',
    `The ${d.tools.length} most called tools, highest error rate first: calls whose tool reported an error` +
      ' (v_tool_stats; from the warehouse, the median is read from durations summed in buckets, within half a' +
      ' percent). Brown: no longer in the tool catalog.',
    toolChart,
    table(
      d.tools,
      [
        ['tool', (t) => t.label ?? t.name],
        ['calls', (t) => int(t.calls), 'n'],
        ['errors', (t) => int(t.errors), 'n'],
        ['error rate', (t) => pct(t.errorRate), 'n'],
        ['median duration (s)', (t) => fixed2(t.medianSeconds), 'n'],
      ],
      'No tool was called yet.',
    ),
  );
}

function agentsSection(d: ReportData): string {
  const agentChart = shareBars({
    id: 'resolution-by-agent',
    title: 'Resolution by agent',
    rows: d.agents.map((a) => ({
      label: a.name,
      total: a.runs,
      parts: [a.deflected, a.resolved, a.escalated, a.pending, a.noResolution],
    })),
    series: RESOLUTION_SERIES.slice(0, 5),
  });
  return section(
    'agents',
    'Resolution by agent',
    "Share of each agent's runs by resolution, busiest agents first (v_resolution_by_agent).",
    agentChart,
  );
}

function freshnessSection(d: ReportData, now: Micros): string {
  const ages = d.freshness.map((f) => ({ label: f.table, at: f.newestChange ?? f.lastFetched, rows: f.rows }));
  const lastPass = d.passes?.find((p) => p.finishedAt !== null) ?? null;
  if (lastPass) ages.unshift({ label: 'last sync pass', at: lastPass.finishedAt, rows: -1 });
  const minutes = (at: Micros | null) => (at === null ? 0 : Math.max(0, (now - at) / MICROS_PER_MINUTE));
  const freshChart = horizontalBars({
    id: 'freshness',
    title: 'Freshness',
    scale: 'log',
    bars: ages.map((a) => ({
      label: a.label,
      value: minutes(a.at),
      text: a.at === null ? 'no data' : a.at > now ? 'ahead of this clock' : `${age(a.at, now)} ago`,
      color: '#546e7a',
    })),
    max: Math.max(60 * 24 * 30, ...ages.map((a) => minutes(a.at))),
    ticks: [
      { value: 1, label: '1 min' },
      { value: 60, label: '1 h' },
      { value: 1440, label: '1 day' },
      { value: 10_080, label: '1 week' },
      { value: 43_200, label: '30 days' },
    ],
  });
  return section(
    'freshness',
    'Freshness',
    'How long before this report each table last changed (newest run update, message, step, evaluation,' +
      ` catalog version; v_table_freshness)${lastPass ? ' and the last sync pass ended' : ''}. Logarithmic scale.`,
    freshChart,
    table(
      d.freshness,
      [
        ['table', (f) => f.table],
        ['rows', (f) => int(f.rows), 'n'],
        ['newest change', (f) => when(f.newestChange)],
        ['last fetched', (f) => when(f.lastFetched)],
      ],
      'No table holds rows yet.',
    ),
    d.lag ? lagTable(d.lag, now) : '',
  );
}

function approvalsSection(d: ReportData, now: Micros): string {
  return section(
    'approvals',
    'Waiting for approval',
    `${int(d.waitingTotal)} run(s) wait for someone to approve a tool call (v_runs_awaiting_approval)` +
      `${d.waitingTotal > d.waiting.length ? `; the ${d.waiting.length} waiting longest` : ''}.`,
    table(
      d.waiting,
      [
        ['run', (w) => w.runId],
        ['agent', (w) => w.agent ?? ''],
        ['tool', (w) => w.tool ?? ''],
        ['ticket', (w) => w.ticket ?? ''],
        ['waiting', (w) => (w.since === null ? '' : age(w.since, now)), 'n'],
      ],
      'No run waits for approval.',
    ),
  );
}

function evaluationsSection(d: ReportData): string {
  return section(
    'evaluations',
    'Evaluation attributes',
    'How often each attribute was recorded; the mean of its values that read as numbers' +
      " (v_evaluation_attributes; v_evaluation_values has every value's share).",
    table(
      d.evaluations,
      [
        ['attribute', (e) => e.name],
        ['evaluations', (e) => int(e.evaluations), 'n'],
        ['runs', (e) => int(e.runs), 'n'],
        ['distinct values', (e) => int(e.distinctValues), 'n'],
        ['mean of numeric values', (e) => fixed2(e.avgNumeric), 'n'],
      ],
      'No evaluation was recorded yet.',
    ),
  );
}

/** The recent passes, when the source is the warehouse itself (analytics.duckdb keeps none). */
function passesSection(d: ReportData): string {
  if (!d.passes) return '';
  return section(
    'passes',
    'Recent sync passes',
    null,
    table(
      d.passes,
      [
        ['kind', (p) => p.kind],
        ['status', (p) => p.status ?? ''],
        ['started', (p) => formatTimestamp(p.startedAt)],
        ['took', took, 'n'],
        ['requests', (p) => (p.requests === null ? '' : int(p.requests)), 'n'],
      ],
      'No sync pass has run yet.',
    ),
  );
}
