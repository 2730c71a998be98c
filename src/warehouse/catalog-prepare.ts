import { createHash } from 'node:crypto';
import type { ResourceSpec } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';
import type { IncomingObject } from './catalog-plan.ts';
import { flattenCatalogObject } from './flatten-catalog.ts';
import { PayloadError, type Row } from './flatten-values.ts';
import { canonicalJsonText, stringMember, toJsonText } from './json-text.ts';
import { type Refusal, refusal } from './load-rejected.ts';
import { maskToolSecrets } from './mask-secrets.ts';

// Catalog payloads on their way in: secrets masked (tools), flattened, fingerprinted, and
// de-duplicated by id (the newest updated_at wins; on a tie the later one).

export interface PreparedListing {
  objects: IncomingObject[];
  refused: Refusal[];
  /** Ids of refused payloads: present in the listing, though not loaded. */
  presentIds: Set<string>;
  /** Refused payloads without a readable id: the listing cannot prove anything absent. */
  unidentified: number;
  duplicates: number;
}

export function prepareListing(
  resource: ResourceSpec,
  payloads: readonly unknown[],
  maskSecrets: boolean,
): PreparedListing {
  const out: PreparedListing = {
    objects: [],
    refused: [],
    presentIds: new Set(),
    unidentified: 0,
    duplicates: 0,
  };
  const byId = new Map<string, IncomingObject>();
  for (const raw of payloads) {
    const payload = maskSecrets && resource.table === 'tools' ? maskToolSecrets(raw) : raw;
    let obj: IncomingObject;
    try {
      obj = incoming(resource, payload);
    } catch (e) {
      if (!(e instanceof PayloadError)) throw e;
      const r = refusal(payload, e.message);
      out.refused.push(r);
      const id = r.id;
      if (id === null) out.unidentified++;
      else out.presentIds.add(id);
      continue;
    }
    const prev = byId.get(obj.id);
    if (prev) {
      out.duplicates++;
      if (prev.updatedAt !== null && obj.updatedAt !== null && obj.updatedAt < prev.updatedAt) continue;
    }
    byId.set(obj.id, obj);
  }
  out.objects = [...byId.values()];
  return out;
}

function incoming(resource: ResourceSpec, payload: unknown): IncomingObject {
  const { row, children } = flattenCatalogObject(resource, payload);
  return {
    id: row.id as string,
    row,
    children,
    contentHash: contentHash(resource, row, children),
    updatedAt: (row.updated_at ?? null) as Micros | null,
    lastRunAt: (row.last_run_at ?? null) as Micros | null,
    payload: toJsonText(payload),
    updatedAtText: stringMember(payload, 'updated_at'),
  };
}

/**
 * Digest of what makes a version: the versioned columns, JSON compared by content, and the child
 * rows. A column added by schema evolution counts only where it holds a value, so adding one does
 * not make a new version of every object that lacks the member.
 */
export function contentHash(resource: ResourceSpec, row: Row, children: readonly Row[]): string {
  const parts: unknown[] = [];
  const evolved: unknown[] = [];
  for (const c of resource.columns) {
    if (resource.unversioned.includes(c.name)) continue;
    const raw = row[c.name] ?? null;
    const v = c.kind === 'json' && typeof raw === 'string' ? JSON.parse(raw) : raw;
    if (!c.evolved) parts.push(v);
    else if (v !== null) evolved.push([c.name, v]);
  }
  const added = new Set(resource.children.flatMap((k) => k.columns.filter((c) => c.evolved).map((c) => c.name)));
  const rows = added.size
    ? children.map((r) => Object.fromEntries(Object.entries(r).filter(([k, v]) => v !== null || !added.has(k))))
    : children;
  return createHash('sha256')
    .update(canonicalJsonText(evolved.length ? [parts, rows, evolved] : [parts, rows]))
    .digest('hex')
    .slice(0, 32);
}
