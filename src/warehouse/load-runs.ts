import { createHash } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { PII_NOTE, piiNote } from '../archive/sink.ts';
import { ArchiveWriter } from '../archive/writer.ts';
import { refusalReason, refusedOf } from '../resources/contract.ts';
import {
  knownNode,
  mergeObserved,
  type Observed,
  observedToJson,
  observeUnknown,
} from '../resources/schema-observe.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';
import { checkRunDetail } from './flatten-run.ts';
import { PayloadError } from './flatten-values.ts';
import { stringMember, toJsonText } from './json-text.ts';
import { insertRejected, type Refusal, type RejectedPayload, reasons, refusal } from './load-rejected.ts';
import { transactionWithRoom } from './out-of-memory.ts';
import {
  anyQuarantined,
  identity,
  type KeptOut,
  keptOut,
  keyOf,
  QUARANTINED,
  type QuarantinedRecord,
  quarantine,
  quarantinedKeys,
  release,
} from './quarantine.ts';
import { storedRuns } from './run-keys.ts';
import { evolveSchema } from './schema.ts';
import { runBookkeeping } from './sql.ts';
import { RunMergeSql } from './stage-runs-sql.ts';
import type { Bookkeeping, LoadOptions, SqlRunner, Warehouse } from './types.ts';

// Loading run details. Each payload is checked in TypeScript (the rules of flattenRunDetail) and
// streamed into a raw archive file; DuckDB then stages the batch straight from that file and
// merges it by key in one transaction with the caller's bookkeeping. A run's children are
// replaced as a whole; an older payload never replaces a newer one; of duplicates in a batch
// the newest wins. The archive file becomes visible just before the commit.
//
// The checking and archiving happen before the transaction is queued, so a caller with several
// batches in flight prepares the next while DuckDB merges the previous one.

export interface RunLoadResult {
  received: number;
  /** Runs not stored before. */
  inserted: number;
  /** Stored runs replaced by a newer payload (or by other content with the same updated_at). */
  updated: number;
  /** Payloads equal to what is stored. */
  unchanged: number;
  /** Payloads older than what is stored: not applied. */
  stale: number;
  /** Payloads superseded by a newer one of the same run in this batch. */
  duplicates: number;
  rejected: RejectedPayload[];
  /** Payloads the schema contract kept out (in _sync_quarantine and the raw archive). */
  quarantined: QuarantinedRecord[];
  /** Child rows written (messages, steps, evaluations). */
  childRows: number;
  /** created_date partitions changed. */
  createdDates: string[];
  archiveFile: string | null;
}

interface Prepared {
  archive: ArchiveWriter;
  /** What the payloads hold beyond the schema in force when they were checked. */
  observed: Observed | null;
  valid: number;
  /** MD5 of each archived payload, by its row in the archive file (null for a rejected one). */
  hashes: (string | null)[];
  refused: Refusal[];
  quarantined: KeptOut[];
  /** Ids of the payloads that may load: a version of a quarantined run that loads releases it. */
  loadedIds: string[];
  /** Of those, the ones not kept out already (the same version fetched again is archived once). */
  newlyQuarantined: number;
}

export async function loadRunDetails(
  wh: Warehouse,
  details: readonly unknown[],
  { fetchedAt = wh.now(), bookkeeping }: LoadOptions = {},
): Promise<RunLoadResult> {
  // Only the count is needed once the payloads are archived: the merge, queued behind others,
  // must not keep a batch of parsed details alive.
  const received = details.length;
  const prepared = await prepare(wh, details, fetchedAt);
  try {
    return await transactionWithRoom(
      wh,
      (tx) => merge(tx, wh, prepared, received, fetchedAt, bookkeeping),
      { runs: received },
      'a batch of run details did not fit in memory; merging it again with more',
    );
  } catch (e) {
    await prepared.archive.abort();
    throw e;
  }
}

/**
 * The archive file's note of what its payloads held beyond the schema they were loaded with
 * (JSON of the observed type tree, or null), so rebuild need not parse them to replay evolution.
 */
export const OBSERVED_NOTE = 'runsync.observed';

/** Payloads checked and archived between two returns to the event loop: few, so DuckDB waits little. */
const YIELD_EVERY = 16;

async function prepare(wh: Warehouse, details: readonly unknown[], fetchedAt: Micros): Promise<Prepared> {
  // Named by when it is written, so the files sort in the order their merges commit.
  const archive = await ArchiveWriter.open(wh.dir, 'runs', wh.now());
  const out: Prepared = {
    archive,
    observed: null,
    valid: 0,
    hashes: [],
    refused: [],
    quarantined: [],
    loadedIds: [],
    newlyQuarantined: 0,
  };
  const resource = wh.resource('runs');
  const schema = knownNode(resource);
  const freeze = wh.contract.freezes('runs');
  let known: Set<string> | null = null;
  try {
    let i = 0;
    for (const detail of details) {
      // Back to the event loop now and then: DuckDB, merging the previous batch, waits on this
      // thread to hear that a statement finished and to be handed the next.
      if (++i % YIELD_EVERY === 0) await yieldToEventLoop();
      let text: string;
      let seen: Observed | null;
      try {
        checkRunDetail(detail, resource);
        text = toJsonText(detail);
        seen = observeUnknown(detail, schema);
      } catch (e) {
        if (!(e instanceof PayloadError)) throw e;
        const r = refusal(detail, e.message);
        out.refused.push(r);
        out.hashes.push(null);
        // Kept in the archive too, so a later flattening that accepts it needs no re-fetch.
        const updatedAt = stringMember(detail, 'updated_at');
        await archive.append({ kind: 'rejected', id: r.id, updatedAt, fetchedAt, listedAt: null, payload: r.payload });
        continue;
      }
      const refused = freeze ? refusedOf(wh.contract, resource, seen) : [];
      if (refused.length) {
        const kept = keptOut({ ...identity(detail), reasons: refused.map(refusalReason) }, text);
        out.quarantined.push(kept);
        out.hashes.push(null);
        // Read between merges: the handle may be merging the batch before this one.
        known ??= await wh.serial(() => quarantinedKeys(wh, 'runs'));
        if (known.has(keyOf(kept))) continue;
        known.add(keyOf(kept));
        out.newlyQuarantined++;
        const { id, updatedAt } = kept;
        await archive.append({ kind: QUARANTINED, id, updatedAt, fetchedAt, listedAt: null, payload: text });
        continue;
      }
      if (seen) out.observed = out.observed ? mergeObserved(out.observed, seen) : seen;
      out.valid++;
      const id = stringMember(detail, 'id');
      if (id !== null) out.loadedIds.push(id);
      // The archive needs the UTF-8 bytes anyway; hashing them here takes the hash off DuckDB's
      // thread, which is the busier side of a load.
      const bytes = Buffer.from(text, 'utf8');
      out.hashes.push(createHash('md5').update(bytes).digest('hex'));
      await archive.append({
        kind: 'payload',
        id: stringMember(detail, 'id'),
        updatedAt: stringMember(detail, 'updated_at'),
        fetchedAt,
        listedAt: null,
        payload: bytes,
      });
    }
    // What the batch held beyond the schema, for rebuild to take in without parsing the payloads.
    archive.note(OBSERVED_NOTE, JSON.stringify(out.observed ? observedToJson(out.observed) : null));
    archive.note(PII_NOTE, piiNote(wh.pii));
    await archive.finish();
  } catch (e) {
    await archive.abort();
    throw e;
  }
  return out;
}

async function merge(
  tx: SqlRunner,
  wh: Warehouse,
  p: Prepared,
  received: number,
  fetchedAt: Micros,
  bookkeeping: Bookkeeping | undefined,
): Promise<RunLoadResult> {
  const result: RunLoadResult = {
    received,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    stale: 0,
    duplicates: 0,
    rejected: reasons(p.refused),
    quarantined: p.quarantined.map(({ id, updatedAt, reasons }) => ({ id, updatedAt, reasons })),
    childRows: 0,
    createdDates: [],
    archiveFile: null,
  };
  if (p.valid > 0) {
    // New members become columns before the batch is staged, in the same transaction.
    await evolveSchema(tx, wh, 'runs', p.observed, fetchedAt);
    const counts = await stageAndMerge(tx, [p.archive.currentPath], p.hashes, wh.resource('runs'));
    Object.assign(result, counts);
  }
  await insertRejected(tx, 'runs', p.refused, fetchedAt);
  await quarantine(tx, 'runs', p.quarantined, fetchedAt);
  await releaseRuns(tx, p.loadedIds);
  await runBookkeeping(tx, bookkeeping);
  if (result.inserted + result.updated + p.refused.length + p.newlyQuarantined > 0)
    result.archiveFile = await p.archive.commit();
  else await p.archive.abort();
  if (result.stale)
    wh.logger.debug({ stale: result.stale }, 'run payloads older than the stored ones were not applied');
  return result;
}

/** Runs kept out whose stored version is now as new as the one kept out. */
export async function releaseRuns(tx: SqlRunner, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  if (!(await anyQuarantined(tx, 'runs'))) return;
  await release(tx, 'runs', ids, (list) => storedRuns(list, ['id', 'updated_at']));
}

export type MergeCounts = Pick<
  RunLoadResult,
  'inserted' | 'updated' | 'unchanged' | 'stale' | 'duplicates' | 'childRows' | 'createdDates'
>;

/**
 * Stages the payload rows of archive files and merges them; used by loading and by rebuild.
 * `hashes`: the MD5 of each payload of a single file, by row, when the caller has them.
 */
export async function stageAndMerge(
  tx: SqlRunner,
  files: readonly string[],
  hashes: readonly (string | null)[] | undefined,
  resource: ResourceSpec,
): Promise<MergeCounts> {
  const sql = new RunMergeSql(resource);
  // Two calls, each a script DuckDB runs through on its own: between statements sent one at a
  // time, DuckDB would wait for the JavaScript thread, which is busy preparing the next batch.
  const [c] = await tx.all<Record<string, bigint | number | string | string[] | null>>(
    [sql.stage(files, hashes), sql.pick(), sql.count()].join(';\n'),
  );
  const from = c?.replaced_from;
  const to = c?.replaced_to;
  const range = typeof from === 'string' && typeof to === 'string' ? { from, to } : null;
  await tx.run(sql.merge(range).join(';\n'));
  const n = (k: string) => Number(c?.[k] ?? 0);
  return {
    inserted: n('inserted'),
    updated: n('updated'),
    unchanged: n('unchanged'),
    stale: n('stale'),
    duplicates: n('staged') - n('picked'),
    childRows: n('child_rows'),
    createdDates: Array.isArray(c?.dates) ? c.dates : [],
  };
}
