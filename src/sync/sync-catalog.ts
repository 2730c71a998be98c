import { CATALOG_KINDS, PermissionError, type CatalogKind } from '../api/index.ts';
import { loadCatalogListing } from '../warehouse/load-catalog.ts';
import { insertRejected } from '../warehouse/load-rejected.ts';
import { maskToolSecrets } from '../warehouse/mask-secrets.ts';
import { loadToolOptions } from '../warehouse/load-tool-options.ts';
import { toJsonText } from '../warehouse/json-text.ts';
import type { SqlRunner } from '../warehouse/warehouse-types.ts';
import type { SyncDeps } from './sync-types.ts';

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

export async function snapshotCatalog(deps: SyncDeps): Promise<SnapshotResult> {
  const result: SnapshotResult = { tables: {}, denied: [] };
  for (const kind of CATALOG_KINDS) {
    const listedAt = deps.now();
    const objects: unknown[] = [];
    let pages = 0;
    try {
      for await (const page of deps.api.catalogPages(kind, { pageSize: CATALOG_PAGE_SIZE, signal: deps.signal })) {
        pages++;
        objects.push(...page.items);
      }
    } catch (e) {
      if (!(e instanceof PermissionError)) throw e;
      result.denied.push({ resource: kind, scope: e.scope, message: e.message });
      deps.logger.error({ resource: kind, scope: e.scope }, `the API key may not read ${kind}${e.scope ? ` (it lacks the scope ${e.scope})` : ''}; the other resources still sync`);
      continue;
    }
    // Records the client refused were still listed: they keep their objects from being taken for
    // deleted, and are kept whole in _sync_rejected.
    const refused = deps.reports.drain();
    const r = await deps.gate.use((wh) =>
      loadCatalogListing(wh, kind, objects, {
        complete: refused.every((x) => x.recordId !== null),
        listedAt,
        presentIds: new Set(refused.flatMap((x) => (x.recordId === null ? [] : [x.recordId]))),
        bookkeeping: (tx) => keepRefused(tx, refused, listedAt, wh.maskSecrets),
      }),
    );
    result.tables[kind] = {
      pages,
      received: objects.length + refused.length,
      added: r.added + r.reappeared,
      changed: r.changed + r.touched,
      deleted: r.deleted,
      unchanged: r.unchanged,
      rejected: r.rejected.length + refused.length,
    };
  }

  try {
    const options = await deps.api.getRunToolOptions({ signal: deps.signal });
    const refused = deps.reports.drain();
    const fetchedAt = deps.now();
    const r = await deps.gate.use((wh) => loadToolOptions(wh, options, { fetchedAt, bookkeeping: (tx) => keepRefused(tx, refused, fetchedAt, wh.maskSecrets) }));
    result.tables.run_tool_options = {
      pages: 1,
      received: r.received + refused.length,
      added: 0,
      changed: r.changed ? 1 : 0,
      deleted: 0,
      unchanged: r.changed ? 0 : 1,
      rejected: r.rejected.length + refused.length,
    };
  } catch (e) {
    if (!(e instanceof PermissionError)) throw e;
    result.denied.push({ resource: 'run tool options', scope: e.scope, message: e.message });
    deps.logger.error({ resource: 'run tool options', scope: e.scope }, 'the API key may not read the run tool options');
  }
  return result;
}

async function keepRefused(tx: SqlRunner, refused: ReturnType<SyncDeps['reports']['drain']>, at: number, mask: boolean): Promise<void> {
  for (const r of refused) {
    // A refused tool still has its custom headers and auth: masked like every stored tool.
    const record = mask && r.endpoint.startsWith('tools.') ? maskToolSecrets(r.record) : r.record;
    await insertRejected(tx, r.endpoint, [{ id: r.recordId, reason: `breaks the API schema: ${r.problems.slice(0, 5).join('; ')}` }], [safeJson(record)], at);
  }
}

function safeJson(v: unknown): string {
  try {
    return toJsonText(v);
  } catch {
    return JSON.stringify(String(v));
  }
}
