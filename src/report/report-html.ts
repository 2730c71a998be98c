import { formatTimestamp, MICROS_PER_MINUTE, type Micros } from '../util/timestamp.ts';
import { esc, horizontalBars, shareBars, stackedColumns } from './report-charts.ts';
import type { ReportData } from './report-data.ts';

// The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched.

export const RESOLUTION_SERIES = [
  { key: 'deflected', name: 'deflected', color: '#2e7d32' },
  { key: 'resolved', name: 'resolved', color: '#1565c0' },
  { key: 'escalated', name: 'escalated', color: '#ef6c00' },
  { key: 'pending', name: 'pending', color: '#8e24aa' },
  { key: 'noResolution', name: 'no resolution', color: '#9e9e9e' },
  { key: 'other', name: 'other', color: '#6d4c41' },
] as const;

const CSS = `
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #222; background: #fafafa; }
header { background: #263238; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: #cfd8dc; font-size: 13px; }
main { padding: 8px 32px 40px; max-width: 1000px; }
section { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 12px 18px 16px; margin: 16px 0; }
h2 { font-size: 17px; margin: 4px 0 2px; }
p.note { color: #666; font-size: 12px; margin: 0 0 10px; }
.tiles { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.tile { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; padding: 10px 16px; min-width: 130px; }
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

function table(head: readonly string[], rows: readonly (readonly (string | number)[])[], numeric: readonly boolean[]): string {
  if (rows.length === 0) return '<p class="note">none</p>';
  const th = head.map((h, i) => `<th${numeric[i] ? ' class="n"' : ''}>${esc(h)}</th>`).join('');
  const tr = rows.map((r) => `<tr>${r.map((c, i) => `<td${numeric[i] ? ' class="n"' : ''}>${esc(String(c))}</td>`).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

export function renderReport(d: ReportData): string {
  const now = d.generatedAt;
  const runs = d.days.reduce((a, r) => a + r.runs, 0);
  const sum = (k: 'deflected' | 'escalated') => d.days.reduce((a, r) => a + r[k], 0);
  const tiles = [
    [int(runs), `runs, last ${d.days.length} days`],
    [runs ? pct(sum('deflected') / runs) : '–', 'deflected'],
    [runs ? pct(sum('escalated') / runs) : '–', 'escalated'],
    [int(d.toolTotals.calls), `tool calls, ${d.toolTotals.tools} tools`],
    [d.toolTotals.calls ? pct(d.toolTotals.errors / d.toolTotals.calls) : '–', 'tool calls with an error'],
    [int(d.waitingTotal), 'runs waiting for approval'],
  ];

  const perDay = stackedColumns({
    id: 'runs-per-day',
    title: 'Runs per day by resolution',
    categories: d.days.map((r) => r.day),
    series: RESOLUTION_SERIES.filter((s) => s.key !== 'other' || d.days.some((r) => r.other > 0)).map((s) => ({ name: s.name, color: s.color, values: d.days.map((r) => r[s.key]) })),
  });
  const byErrors = [...d.tools].sort((a, b) => b.errorRate - a.errorRate || b.calls - a.calls);
  const toolChart = horizontalBars({
    id: 'tool-error-rates',
    title: 'Tool error rates',
    bars: byErrors.map((t) => ({ label: t.label ?? t.name, value: t.errorRate, text: `${pct(t.errorRate)} of ${int(t.calls)} calls`, color: t.inCatalog ? '#c62828' : '#8d6e63' })),
    max: Math.max(0.01, ...byErrors.map((t) => t.errorRate)),
  });
  const agentChart = shareBars({
    id: 'resolution-by-agent',
    title: 'Resolution by agent',
    rows: d.agents.map((a) => ({ label: a.name, total: a.runs, parts: [a.deflected, a.resolved, a.escalated, a.pending, a.noResolution] })),
    series: RESOLUTION_SERIES.slice(0, 5),
  });
  const ages = d.freshness.map((f) => ({ label: f.table, at: f.newestChange ?? f.lastFetched, rows: f.rows }));
  const lastPass = d.passes?.find((p) => p.finishedAt !== null) ?? null;
  if (lastPass) ages.unshift({ label: 'last sync pass', at: lastPass.finishedAt, rows: -1 });
  const minutes = (at: Micros | null) => (at === null ? 0 : Math.max(0, (now - at) / MICROS_PER_MINUTE));
  const freshChart = horizontalBars({
    id: 'freshness',
    title: 'Freshness',
    scale: 'log',
    bars: ages.map((a) => ({ label: a.label, value: minutes(a.at), text: a.at === null ? 'no data' : a.at > now ? 'ahead of this clock' : `${age(a.at, now)} ago`, color: '#546e7a' })),
    max: Math.max(60 * 24 * 30, ...ages.map((a) => minutes(a.at))),
    ticks: [
      { value: 1, label: '1 min' },
      { value: 60, label: '1 h' },
      { value: 1440, label: '1 day' },
      { value: 10_080, label: '1 week' },
      { value: 43_200, label: '30 days' },
    ],
  });

  const source = d.source.kind === 'warehouse' ? d.source.file : `${d.source.file} (views over the Parquet tree, as of the last export)`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>runsync report</title>
<style>${CSS}</style>
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
<section id="runs">
<h2>Runs per day by resolution</h2>
<p class="note">UTC days of run creation, the ${d.days.length} days up to the newest run (v_runs_daily_resolution). A run is counted under its current resolution.</p>
${perDay}
</section>
<section id="tools">
<h2>Tool error rates</h2>
<p class="note">The ${d.tools.length} most called tools, highest error rate first: calls whose tool reported an error (v_tool_stats). Brown: no longer in the tool catalog.</p>
${toolChart}
${table(['tool', 'calls', 'errors', 'error rate', 'median duration (s)'], d.tools.map((t) => [t.label ?? t.name, int(t.calls), int(t.errors), pct(t.errorRate), t.medianSeconds === null ? '' : t.medianSeconds.toFixed(2)]), [false, true, true, true, true])}
</section>
<section id="agents">
<h2>Resolution by agent</h2>
<p class="note">Share of each agent's runs by resolution, busiest agents first (v_resolution_by_agent).</p>
${agentChart}
</section>
<section id="freshness">
<h2>Freshness</h2>
<p class="note">How long before this report each table last changed (newest run update, message, step, evaluation, catalog version; v_table_freshness)${lastPass ? ' and the last sync pass ended' : ''}. Logarithmic scale.</p>
${freshChart}
${table(['table', 'rows', 'newest change', 'last fetched'], d.freshness.map((f) => [f.table, int(f.rows), f.newestChange === null ? '' : formatTimestamp(f.newestChange), f.lastFetched === null ? '' : formatTimestamp(f.lastFetched)]), [false, true, false, false])}
</section>
<section id="approvals">
<h2>Waiting for approval</h2>
<p class="note">${int(d.waitingTotal)} run(s) wait for someone to approve a tool call (v_runs_awaiting_approval)${d.waitingTotal > d.waiting.length ? `; the ${d.waiting.length} waiting longest` : ''}.</p>
${table(['run', 'agent', 'tool', 'ticket', 'waiting'], d.waiting.map((w) => [w.runId, w.agent ?? '', w.tool ?? '', w.ticket ?? '', w.since === null ? '' : age(w.since, now)]), [false, false, false, false, true])}
</section>
<section id="evaluations">
<h2>Evaluation attributes</h2>
<p class="note">How often each attribute was recorded; the mean of its values that read as numbers (v_evaluation_attributes; v_evaluation_values has every value's share).</p>
${table(['attribute', 'evaluations', 'runs', 'distinct values', 'mean of numeric values'], d.evaluations.map((e) => [e.name, int(e.evaluations), int(e.runs), int(e.distinctValues), e.avgNumeric === null ? '' : e.avgNumeric.toFixed(2)]), [false, true, true, true, true])}
</section>
${d.passes ? `<section id="passes">
<h2>Recent sync passes</h2>
${table(['kind', 'status', 'started', 'took', 'requests'], d.passes.map((p) => [p.kind, p.status ?? '', formatTimestamp(p.startedAt), p.finishedAt === null ? 'not finished' : `${((p.finishedAt - p.startedAt) / 1e6).toFixed(1)} s`, p.requests === null ? '' : int(p.requests)]), [false, false, false, true, true])}
</section>` : ''}
</main>
</body>
</html>
`;
}
