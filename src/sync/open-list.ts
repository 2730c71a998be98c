import { FilterError, type ListPage, type RunListFilter, type RunSummary } from '../api/index.ts';
import type { TicketBatch } from './open-runs.ts';
import { readSlice } from './slice.ts';
import type { RunCounts, SyncDeps } from './types.ts';

// The open runs' ticket batches are independent listings of a page or two each, so several are
// listed at once: one after the other, a pass with tens of thousands of open runs would wait a
// round trip per page, with the budget's turns unused. The budget still paces every request.
// Each batch is handed on whole, in order: a batch is small, and its runs are judged together.

/**
 * What a ticket batch's listing asks for besides the tickets: the state that keeps its runs open,
 * where one does (`state`: running or paused; `pending`: a resolution pending); `any` otherwise.
 */
export type OpenListing = 'state' | 'pending' | 'any';

const LISTING_FILTERS: Record<OpenListing, Omit<RunListFilter, 'createdAfter' | 'createdBefore' | 'ticketId'>> = {
  state: { status: ['running', 'paused'] },
  pending: { resolutionType: ['pending'] },
  any: {},
};

/** The filter a batch's listing adds to its ticket ids. */
export function batchFilter(batch: TicketBatch): Omit<RunListFilter, 'createdAfter' | 'createdBefore'> {
  return { ticketId: batch.tickets, ...LISTING_FILTERS[batch.listing] };
}

/** Ticket batches listed at once. */
export const BATCHES_AT_ONCE = 4;

export interface ListedBatch {
  batch: TicketBatch;
  pages: ListPage<RunSummary>[];
  /** The API refused a value of the ticket filter: the batch's runs are to be fetched by id. */
  filterError: FilterError | null;
}

async function listBatch(deps: SyncDeps, batch: TicketBatch, counts: RunCounts, signal: AbortSignal) {
  const pages: ListPage<RunSummary>[] = [];
  try {
    // A refused cursor lists the batch again (narrower if it keeps happening).
    for await (const { page } of readSlice(
      deps,
      { from: batch.createdFrom, to: batch.createdTo },
      { part: 0, cursor: null },
      { filter: batchFilter(batch), counts, signal, logFields: { openRuns: batch.runs.size } },
    ))
      pages.push(page);
  } catch (e) {
    if (!(e instanceof FilterError)) throw e;
    return { batch, pages, filterError: e };
  }
  return { batch, pages, filterError: null };
}

/** Each batch's listing, in the batches' order, with up to `atOnce` listed at a time. */
export async function* listTicketBatches(
  deps: SyncDeps,
  batches: readonly TicketBatch[],
  counts: RunCounts,
  signal: AbortSignal,
  atOnce = BATCHES_AT_ONCE,
): AsyncGenerator<ListedBatch> {
  // Only the listings in flight are held: a batch handed on is let go, or a pass would keep every
  // summary of tens of thousands of open runs until its last batch.
  const inFlight: Promise<ListedBatch>[] = [];
  let started = 0;
  for (let i = 0; i < batches.length; i++) {
    while (started < Math.min(batches.length, i + atOnce)) {
      const listing = listBatch(deps, batches[started++] as TicketBatch, counts, signal);
      // Awaited in turn below; until then a failure must not count as unhandled.
      listing.catch(() => {});
      inFlight.push(listing);
    }
    yield await (inFlight.shift() as Promise<ListedBatch>);
  }
}
