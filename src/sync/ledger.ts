import type { ListPage, RunSummary } from '../api/index.ts';
import { parseTimestamp } from '../util/timestamp.ts';
import { beginListing, coverTo, type ListedRuns, setExpected, stageListed } from '../warehouse/completeness.ts';
import { stringMember } from '../warehouse/json-text.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import { LIVE_KEY, RECONCILE_KEY } from './state-keys.ts';
import type { SyncSettings } from './types.ts';
import type { Window } from './window.ts';

// What a walk gives the completeness ledger (src/warehouse/completeness.ts): every summary it
// lists, staged with its page, and each slice's end once the slice is read to its last page. Only
// a walk of every run (no filter but created time) can say what a day holds.

/** Whether a walk lists every run of its range. */
export function wholeListing(walk: { filter: object }): boolean {
  return Object.keys(walk.filter).length === 0;
}

/** How the ledger names what listed a day. */
export function listedBy(key: string): string {
  if (key === LIVE_KEY) return 'sync';
  if (key === RECONCILE_KEY || key.startsWith('runs.rolling')) return 'reconcile';
  if (key.startsWith('backfill.')) return 'backfill';
  return key;
}

/**
 * The (id, created, updated) of a page's summaries, those that break their schema included (the
 * API listed them). A summary without a readable created_at belongs to no day, and is left out.
 */
export function listedRuns(page: Pick<ListPage<RunSummary>, 'items' | 'refused'>): ListedRuns {
  const out: ListedRuns = { ids: [], createdUs: [], updatedUs: [] };
  const add = (id: string | null, created: string | null, updated: string | null) => {
    const c = created === null ? null : parseTimestamp(created);
    if (id === null || c === null) return;
    out.ids.push(id);
    out.createdUs.push(c);
    out.updatedUs.push(updated === null ? null : parseTimestamp(updated));
  };
  for (const s of page.items) add(s.id, s.created_at, s.updated_at);
  for (const r of page.refused)
    if (r.endpoint === 'runs.list')
      add(r.recordId, stringMember(r.record, 'created_at'), stringMember(r.record, 'updated_at'));
  return out;
}

/** A page's part of the ledger, in its commit; `done`: the slice this page completes. */
export async function coverSlice(
  tx: SqlRunner,
  stream: string,
  runs: ListedRuns,
  done: Window | null,
  at: number,
): Promise<void> {
  await stageListed(tx, stream, runs, at);
  if (done) await coverTo(tx, stream, done.to, listedBy(stream), at);
}

/** A walk begun afresh: its listing starts at `from`, with what the ledger expects of passes. */
export async function openListing(
  tx: SqlRunner,
  stream: string,
  from: number,
  deps: { settings: Pick<SyncSettings, 'reconcileEvery' | 'openRunHorizon'>; now: () => number },
): Promise<void> {
  await beginListing(tx, stream, from, deps.now());
  const { reconcileEvery, openRunHorizon } = deps.settings;
  await setExpected(tx, { every: reconcileEvery, horizon: openRunHorizon }, deps.now());
}
