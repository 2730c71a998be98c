import type { Micros } from '../util/timestamp.ts';
import type { Row } from './flatten-values.ts';

// What one catalog listing does to the history, decided without touching the database: the
// pure heart of the type-2 rules.
//
// - An object not seen before, or whose content (every column but the unversioned ones) differs
//   from its current version, gets a new version; the current one is closed at the new one's
//   valid_from. So does an object that reappears after being marked deleted.
// - valid_from is the object's updated_at when that moved past the current version's valid_from;
//   otherwise (content changed without updated_at moving, a reappearance, no updated_at) the time
//   of the listing, and never earlier than just after the current version began, so the versions
//   of one object are strictly ordered and never overlap.
// - A payload older than the stored version (updated_at went backwards: a slower, earlier fetch)
//   changes nothing; nor does a reappearance from a listing taken before the deletion was seen.
// - Only a complete listing marks the objects it lacks as deleted, at the listing's time.
// - Unversioned columns (agents' last_run_at) that moved forward are updated in place, in the live
//   row and in the current version, without a new version.

export interface CurrentVersion {
  contentHash: string;
  validFrom: Micros;
  updatedAt: Micros | null;
  isDeleted: boolean;
  lastRunAt: Micros | null;
}

export interface IncomingObject {
  id: string;
  row: Row;
  /** Rows of the resource's child table (tool_parameters), versioned with the object. */
  children: Row[];
  contentHash: string;
  updatedAt: Micros | null;
  lastRunAt: Micros | null;
  /** The masked payload, for the raw archive. */
  payload: string;
  updatedAtText: string | null;
}

export interface Listing {
  objects: readonly IncomingObject[];
  listedAt: Micros;
  /** The listing holds every object there is (all pages read, none refused). */
  complete: boolean;
  /** Ids present besides `objects` (ids of refused payloads; a replayed manifest). */
  presentIds?: ReadonlySet<string>;
}

export interface NewVersion {
  object: IncomingObject;
  validFrom: Micros;
  reason: 'new' | 'changed' | 'reappeared';
  /** The current version to close (valid_to = validFrom), if there is one. */
  closes: boolean;
}

export interface CatalogPlan {
  versions: NewVersion[];
  touches: { object: IncomingObject; lastRunAt: Micros }[];
  deletions: { id: string; at: Micros }[];
  stale: string[];
  unchanged: number;
}

export function planListing(current: ReadonlyMap<string, CurrentVersion>, listing: Listing): CatalogPlan {
  const plan: CatalogPlan = { versions: [], touches: [], deletions: [], stale: [], unchanged: 0 };
  const at = listing.listedAt;
  const after = (cur: CurrentVersion, t: Micros | null): Micros =>
    t !== null && t > cur.validFrom ? t : Math.max(at, cur.validFrom + 1);

  for (const o of listing.objects) {
    const cur = current.get(o.id);
    if (!cur) {
      plan.versions.push({ object: o, validFrom: o.updatedAt ?? at, reason: 'new', closes: false });
    } else if (cur.isDeleted) {
      if (at <= cur.validFrom) plan.stale.push(o.id);
      else plan.versions.push({ object: o, validFrom: after(cur, o.updatedAt), reason: 'reappeared', closes: true });
    } else if (o.updatedAt !== null && cur.updatedAt !== null && o.updatedAt < cur.updatedAt) {
      plan.stale.push(o.id);
    } else if (o.contentHash !== cur.contentHash) {
      plan.versions.push({ object: o, validFrom: after(cur, o.updatedAt), reason: 'changed', closes: true });
    } else if (o.lastRunAt !== null && (cur.lastRunAt === null || o.lastRunAt > cur.lastRunAt)) {
      plan.touches.push({ object: o, lastRunAt: o.lastRunAt });
    } else {
      plan.unchanged++;
    }
  }

  if (listing.complete) {
    const present = new Set(listing.objects.map((o) => o.id));
    for (const id of listing.presentIds ?? []) present.add(id);
    for (const [id, cur] of current) {
      if (!cur.isDeleted && !present.has(id)) plan.deletions.push({ id, at: Math.max(at, cur.validFrom + 1) });
    }
  }
  return plan;
}
