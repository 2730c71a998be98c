import { createHash } from 'node:crypto';
import type { Micros } from '../util/timestamp.ts';
import type { IncomingObject } from './catalog-plan.ts';
import { flattenCatalogObject } from './flatten-catalog.ts';
import { PayloadError, type Row } from './flatten-values.ts';
import { canonicalJsonText, toJsonText } from './json-text.ts';
import type { RejectedPayload } from './load-rejected.ts';
import { maskToolSecrets } from './mask-secrets.ts';
import { CATALOG_COLUMNS, UNVERSIONED_COLUMNS, type CatalogTable } from './spec-catalog.ts';

// Catalog payloads on their way in: secrets masked (tools), flattened, fingerprinted, and
// de-duplicated by id (the newest updated_at wins; on a tie the later one).

export interface PreparedListing {
  objects: IncomingObject[];
  rejected: RejectedPayload[];
  rejectedPayloads: string[];
  /** Ids of refused payloads: present in the listing, though not loaded. */
  presentIds: Set<string>;
  /** Refused payloads without a readable id: the listing cannot prove anything absent. */
  unidentified: number;
  duplicates: number;
}

export function prepareListing(table: CatalogTable, payloads: readonly unknown[], maskSecrets: boolean): PreparedListing {
  const out: PreparedListing = { objects: [], rejected: [], rejectedPayloads: [], presentIds: new Set(), unidentified: 0, duplicates: 0 };
  const byId = new Map<string, IncomingObject>();
  for (const raw of payloads) {
    const payload = maskSecrets && table === 'tools' ? maskToolSecrets(raw) : raw;
    let obj: IncomingObject;
    try {
      obj = incoming(table, payload);
    } catch (e) {
      if (!(e instanceof PayloadError)) throw e;
      const id = idOf(payload);
      out.rejected.push({ id, reason: e.message });
      out.rejectedPayloads.push(safeJson(payload));
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

function incoming(table: CatalogTable, payload: unknown): IncomingObject {
  const { row, parameters } = flattenCatalogObject(table, payload);
  return {
    id: row.id as string,
    row,
    parameters,
    contentHash: contentHash(table, row, parameters),
    updatedAt: (row.updated_at ?? null) as Micros | null,
    lastRunAt: (row.last_run_at ?? null) as Micros | null,
    payload: toJsonText(payload),
    updatedAtText: textOf(payload, 'updated_at'),
  };
}

/** Digest of what makes a version: the versioned columns, JSON compared by content, and the parameters. */
export function contentHash(table: CatalogTable, row: Row, parameters: readonly Row[]): string {
  const skip = UNVERSIONED_COLUMNS[table];
  const parts: unknown[] = [];
  for (const c of CATALOG_COLUMNS[table]) {
    if (skip.includes(c.name)) continue;
    const v = row[c.name] ?? null;
    parts.push(c.kind === 'json' && typeof v === 'string' ? JSON.parse(v) : v);
  }
  return createHash('sha256').update(canonicalJsonText([parts, parameters])).digest('hex').slice(0, 32);
}

function textOf(payload: unknown, key: string): string | null {
  const v = payload !== null && typeof payload === 'object' ? (payload as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' ? v : null;
}

function idOf(payload: unknown): string | null {
  return textOf(payload, 'id');
}

function safeJson(value: unknown): string {
  try {
    return toJsonText(value);
  } catch (e) {
    return JSON.stringify({ unserializable: String((e as Error).message) });
  }
}
