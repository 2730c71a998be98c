import { CATALOG_KINDS, type CatalogKind, type InvalidRecordReport, PermissionError } from '../api/index.ts';
import { safeJsonText } from '../warehouse/json-text.ts';
import { loadCatalogListing } from '../warehouse/load-catalog.ts';
import { insertRejected } from '../warehouse/load-rejected.ts';
import { loadToolOptions } from '../warehouse/load-tool-options.ts';
import { maskToolSecrets } from '../warehouse/mask-secrets.ts';
import type { QuarantinedRecord } from '../warehouse/quarantine.ts';
import type { SqlRunner } from '../warehouse/types.ts';
import type { SyncDeps } from './types.ts';

// A snapshot reads every page of the five catalog collections and the run tool options, and loads
// each collection as one complete listing: what changed gets a new history version, what vanished
// (a guideline or runbook unpublished, a tool deleted) is marked deleted. A collection the key may
// not read (403) is reported with the scope it lacks, and the others still sync.

export const CATALOG_PAGE_SIZE = 200;

export interface CatalogTableCounts {
  pages: number;
  received: number;
  added: number;
  changed: number;
  deleted: number;
  unchanged: number;
  rejected: number;
}

export interface SnapshotResult {
  tables: Partial<Record<CatalogKind | 'run_tool_options', CatalogTableCounts>>;
  /** Resources the key may not read: the scope it lacks, and the API's message. */
  denied: { resource: string; scope: string | null; message: string }[];
}

interface Listed {
  kind: CatalogKind;
  listedAt: number;
  objects: unknown[];
  pages: number;
  refused: InvalidRecordReport[];
}

export async function snapshotCatalog(deps: SyncDeps): Promise<SnapshotResult> {
  const result: SnapshotResult = { tables: {}, denied: [] };
  // Everything is read first, then loaded in one turn at the warehouse: the listings are small,
  // and each turn (an open and a close of the file) costs more than their requests.
  const listed: Listed[] = [];
  for (const kind of CATALOG_KINDS) {
    const listedAt = deps.now();
    const objects: unknown[] = [];
    const refused: InvalidRecordReport[] = [];
    let pages = 0;
    try {
      for await (const page of deps.api.catalogPages(kind, { pageSize: CATALOG_PAGE_SIZE, signal: deps.signal })) {
        pages++;
        objects.push(...page.items);
        refused.push(...page.refused);
      }
    } catch (e) {
      if (!(e instanceof PermissionError)) throw e;
      deny(deps, result, kind, e);
      continue;
    }
    // Records the client refused were still listed: they keep their objects from being taken for
    // deleted, and are kept whole in _sync_rejected.
    listed.push({ kind, listedAt, objects, pages, refused });
  }
  let options: { items: unknown[]; refused: InvalidRecordReport[]; at: number } | null = null;
  try {
    options = { ...(await deps.api.getRunToolOptions({ signal: deps.signal })), at: deps.now() };
  } catch (e) {
    if (!(e instanceof PermissionError)) throw e;
    deny(deps, result, 'run tool options', e);
  }

  await deps.gate.use(async (wh) => {
    for (const l of listed) {
      const r = await loadCatalogListing(wh, l.kind, l.objects, {
        complete: l.refused.every((x) => x.recordId !== null),
        listedAt: l.listedAt,
        presentIds: new Set(l.refused.flatMap((x) => (x.recordId === null ? [] : [x.recordId]))),
        bookkeeping: (tx) => keepRefused(tx, l.refused, l.listedAt, wh.maskSecrets),
      });
      warnQuarantined(deps, l.kind, r.quarantined);
      result.tables[l.kind] = {
        pages: l.pages,
        received: l.objects.length + l.refused.length,
        added: r.added + r.reappeared,
        changed: r.changed + r.touched,
        deleted: r.deleted,
        unchanged: r.unchanged,
        rejected: r.rejected.length + l.refused.length,
      };
      deps.freshness?.catalog.record(r.changedAt, deps.now());
    }
    if (options) {
      const o = options;
      const r = await loadToolOptions(wh, o.items, {
        fetchedAt: o.at,
        bookkeeping: (tx) => keepRefused(tx, o.refused, o.at, wh.maskSecrets),
      });
      warnQuarantined(deps, 'run_tool_options', r.quarantined);
      result.tables.run_tool_options = {
        pages: 1,
        received: r.received + o.refused.length,
        added: 0,
        changed: r.changed ? 1 : 0,
        deleted: 0,
        unchanged: r.changed ? 0 : 1,
        rejected: r.rejected.length + o.refused.length,
      };
    }
  });
  return result;
}

function warnQuarantined(deps: SyncDeps, table: string, kept: readonly QuarantinedRecord[]): void {
  for (const q of kept)
    deps.logger.warn(
      { table, recordId: q.id, reasons: q.reasons },
      'the schema contract keeps this object out of a frozen table; in _sync_quarantine until it is widened',
    );
}

function deny(deps: SyncDeps, result: SnapshotResult, resource: string, e: PermissionError): void {
  result.denied.push({ resource, scope: e.scope, message: e.message });
  const lacks = e.scope ? ` (it lacks the scope ${e.scope})` : '';
  deps.logger.error(
    { resource, scope: e.scope },
    `the API key may not read ${resource}${lacks}; the other resources still sync`,
  );
}

async function keepRefused(
  tx: SqlRunner,
  refused: readonly InvalidRecordReport[],
  at: number,
  mask: boolean,
): Promise<void> {
  for (const r of refused) {
    // A refused tool still has its custom headers and auth: masked like every stored tool.
    const record = mask && r.endpoint.startsWith('tools.') ? maskToolSecrets(r.record) : r.record;
    const reason = `breaks the API schema: ${r.problems.slice(0, 5).join('; ')}`;
    await insertRejected(tx, r.endpoint, [{ id: r.recordId, reason, payload: safeJsonText(record) }], at);
  }
}
