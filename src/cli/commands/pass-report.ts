import type { PassResult } from '../../sync/index.ts';
import { formatTimestamp } from '../../util/timestamp.ts';

// A finished pass as a few lines for a person: what was read, what landed, what it cost.

export function passLines(r: PassResult): string[] {
  const lines: string[] = [];
  lines.push(`pass ${r.id} (${r.kind}): ${r.status} in ${(r.durationMs / 1000).toFixed(1)} s`);
  if (r.window) {
    lines.push(`  runs window   ${formatTimestamp(r.window.from)} → ${formatTimestamp(r.window.to)}`);
  }
  if (r.reconciled) {
    lines.push(`  reconciled    ${formatTimestamp(r.reconciled.from)} → ${formatTimestamp(r.reconciled.to)}`);
  }
  if (r.kind !== 'snapshot') {
    const c = r.runs;
    const kinds = `${c.new} new, ${c.changed} changed, ${c.unchanged} unchanged`;
    const p = r.listPages;
    const split = `${p.live} live window, ${p.open} open runs, ${p.reconcile} reconciliation`;
    lines.push(`  runs          listed ${c.listed} in ${c.pages} page(s) (${split}): ${kinds}`);
    const loaded = `${c.inserted} inserted, ${c.updated} updated, ${c.stale} older than stored`;
    lines.push(`  details       ${c.fetched} loaded (${loaded}), ${c.childRows} child rows`);
    if (c.pending || c.rejected)
      lines.push(
        `  kept aside    ${c.pending} detail(s) to fetch again, ${c.rejected} record(s) refused (see _sync_rejected)`,
      );
    if (c.quarantined)
      lines.push(
        `  quarantined   ${c.quarantined} run(s) the schema contract keeps out of frozen tables (see _sync_quarantine)`,
      );
    if (c.deleted)
      lines.push(`  deleted       ${c.deleted} run(s) the API no longer has, marked in runs (see _sync_deletions)`);
    const retried = r.pendingRetried ? `; ${r.pendingRetried} earlier failure(s) retried` : '';
    lines.push(`  open runs     ${r.openRunsChecked} re-checked, ${r.openRunsTracked} still open${retried}`);
    if (r.openRunsDeferred > 0)
      lines.push(
        `                ${r.openRunsDeferred} deferred, the longest unchecked for ${r.openRunsLongestUncheckedSeconds} s (\`--all-open\` checks every one)`,
      );
  }
  if (r.catalog) {
    const parts = Object.entries(r.catalog.tables).map(
      ([t, c]) =>
        `${t} ${c.received}${c.added || c.changed || c.deleted ? ` (+${c.added} ~${c.changed} -${c.deleted})` : ''}`,
    );
    if (parts.length) lines.push(`  catalog       ${parts.join(', ')}`);
  }
  const q = r.requests;
  lines.push(`  requests      ${q.requests} (${q.rateLimited} answered 429, ${q.retries} retried)`);
  if (r.export)
    lines.push(
      `  parquet       ${r.export.dates.length} partition(s) and ${r.export.tables.length} table(s) rewritten`,
    );
  // The problems are not among them: the command prints each once, on stderr.
  return lines;
}
