import type { Micros } from '../util/timestamp.ts';
import type { CatalogKind } from './catalog.ts';
import { isOpenVersion, type RunVersion } from './runs.ts';
import type { SimWorld } from './world.ts';

// Ground truth for freshness: every change the API came to show in a stretch of time, when it
// first showed it, and of which kind, so a test or a bench can tell how long each took to reach
// the warehouse or the Parquet tree. A run that appears late (listed after its created_at) is news
// from the moment it appears; a version superseded before anyone could see it is not a change.

export type ChangeKind = 'new run' | 'open run' | 'settled run' | 'catalog';

export interface Change {
  kind: ChangeKind;
  /** The warehouse table the change lands in. */
  table: string;
  id: string;
  /** When the API first showed it. */
  shownAt: Micros;
  /** The object's updated_at from then on; null when the change removed it from its listing. */
  updatedAt: Micros | null;
}

export const CATALOG_TABLES_BY_KIND: Record<CatalogKind, string> = {
  tool: 'tools',
  agent: 'agents',
  guideline: 'guidelines',
  guardrail: 'guardrails',
  runbook: 'runbooks',
};

/** The changes of runs created in [createdFrom, to) that the API first showed in (from, to]. */
export function* runChanges(world: SimWorld, from: Micros, to: Micros, createdFrom: Micros = 0): Generator<Change> {
  const runs = world.runs;
  const hi = runs.firstIndexAtOrAfter(to, true);
  for (let i = runs.firstIndexAtOrAfter(createdFrom); i < hi; i++) {
    if (runs.visibleAt(i) > to) continue;
    const plan = runs.plan(i, false);
    let shown: RunVersion | null = null;
    for (const v of plan.versions) {
      const shownAt = Math.max(v.at, plan.visibleAt);
      if (shownAt > to) break;
      if (v.at <= plan.visibleAt) {
        shown = v;
        continue;
      }
      if (shown === null) {
        // A run whose first version is dated after it appeared: that version is the first shown.
        shown = v;
        continue;
      }
      if (shownAt > from) {
        const kind = isOpenVersion(shown) ? 'open run' : 'settled run';
        yield { kind, table: 'runs', id: plan.id, shownAt, updatedAt: v.at };
      }
      shown = v;
    }
    const first = runs.versionAt(plan, plan.visibleAt);
    if (first && plan.visibleAt > from)
      yield { kind: 'new run', table: 'runs', id: plan.id, shownAt: plan.visibleAt, updatedAt: first.at };
  }
}

/** Catalog objects created, edited, unpublished, published again or deleted in (from, to]. */
export function* catalogChanges(world: SimWorld, from: Micros, to: Micros): Generator<Change> {
  const catalog = world.catalog;
  for (const [kind, table] of Object.entries(CATALOG_TABLES_BY_KIND) as [CatalogKind, string][]) {
    for (const e of catalog.entities[kind]) {
      const times = [e.createdAt, ...e.events.map((ev) => ev.at)].filter((t) => t > from && t <= to);
      for (const at of times) {
        const state = catalog.stateAt(e, at);
        yield { kind: 'catalog', table, id: e.id, shownAt: at, updatedAt: state ? state.updatedAt : null };
      }
    }
  }
}
