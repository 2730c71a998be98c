import { listValue } from '@duckdb/node-api';
import { listArchiveFiles } from '../archive/paths.ts';
import { ArchiveWriter } from '../archive/writer.ts';
import { refusalReason, refusedChanges } from '../resources/contract.ts';
import {
  knownNode,
  mergeObserved,
  type Observed,
  type ObservedJson,
  observeAll,
  observedFromJson,
} from '../resources/schema-observe.ts';
import { checkRunDetail } from './flatten-run.ts';
import { PayloadError } from './flatten-values.ts';
import { inLanes } from './lanes.ts';
import { insertRejected } from './load-rejected.ts';
import { OBSERVED_NOTE, releaseRuns, stageAndMerge } from './load-runs.ts';
import { CHECKPOINT_THRESHOLD } from './open.ts';
import { transactionWithRoom } from './out-of-memory.ts';
import { identity, type KeptOut, keptOut, QUARANTINED, quarantine } from './quarantine.ts';
import { RunRebuildSql } from './rebuild-runs-sql.ts';
import { rebuildStates } from './rebuild-states.ts';
import { recordRunKeys } from './run-keys.ts';
import { evolveSchema } from './schema.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';
import type { StagedRows } from './stage-runs-sql.ts';
import type { Warehouse } from './types.ts';

// The runs of a rebuild. Replaying every archive file in turn through the loads' merge judges each
// batch against a table that keeps growing, one transaction per file. The outcome is known from the
// archive's keys alone: per run, the payload with the newest updated_at, then the latest fetch, then
// the later file and row, as the loads decided. So the winners are chosen first from the key
// columns (no payload is read), and their payloads streamed into the fresh tables a range of
// winners at a time (rebuild-runs-sql.ts), with nothing stored to judge against. Schema evolution
// comes first, from what every file noted, so every column exists before any row lands.

export interface RunRebuild {
  runFiles: number;
  runs: number;
  childRows: number;
  rejected: number;
  /** Observed states written (runs_history). */
  states: number;
}

/**
 * Winners a statement reads: enough that its row groups are written to the file as they fill, few
 * enough that a statement run again with more memory (an outsized payload) repeats little.
 */
export const RANGE_RUNS = 50_000;

export async function rebuildRuns(
  wh: Warehouse,
  sourceDir: string,
  { rangeRuns, lanes }: { rangeRuns: number; lanes: number },
  result: RunRebuild,
): Promise<void> {
  const files = await listArchiveFiles(sourceDir, 'runs');
  result.runFiles = files.length;
  if (files.length === 0) return;
  const notes = await observedNotes(wh, files);
  const observed: (Observed | null)[] = [];
  for (const f of files) observed.push(notes.has(f) ? (notes.get(f) ?? null) : await observeFile(wh, f));
  await wh.transaction(async (tx) => {
    for (const o of observed) await evolveSchema(tx, wh, 'runs', o, wh.now());
  });

  const t0 = performance.now();
  await chooseWinners(wh, files);
  const ranges = await rangesOfWinners(wh, files, rangeRuns);
  wh.logger.debug(
    { files: files.length, ranges: ranges.length, ms: Math.round(performance.now() - t0) },
    'rebuild: winners chosen',
  );
  await wh.run('DROP TABLE _rebuild_win');
  await wh.run('DROP TABLE _rebuild_payloads');
  // What the choice held stays with the instance that made it, even released: the first range
  // would start from all of it, where the later ones start each on a file opened afresh.
  await wh.reopen();
  const resource = wh.resource('runs');
  const sql = new RunRebuildSql(resource);
  const outsized: Statement[] = [];
  // No checkpoint starts on its own while statements run side by side: one is made between ranges.
  const [threshold] = await wh.all<{ t: string }>(`SELECT current_setting('checkpoint_threshold') AS t`);
  const holdCheckpoints = () => wh.run(`SET checkpoint_threshold = '1TB'`);
  await holdCheckpoints();
  try {
    for (const rows of ranges) {
      const statements = [
        { table: resource.table, sql: sql.runs(rows), child: false },
        ...resource.children.map((c) => ({ table: c.table, sql: sql.child(c, rows), child: true })),
      ];
      const undone = await inLanes(wh, statements, { lanes, key: (st) => st.table }, async (db, st) => {
        // DuckDB answers an INSERT with the rows it inserted.
        const [row] = await db.all<{ Count: bigint }>(st.sql);
        count(result, st, row?.Count);
      });
      outsized.push(...undone);
      // The checkpoint holds most beside what the statements freed: that goes back first.
      await wh.releaseFreed();
      const t1 = performance.now();
      await wh.run('CHECKPOINT');
      // DuckDB keeps what it learned of every row group it wrote, so each range's checkpoint would
      // grow the process further: the file opened afresh starts the next range from the metadata
      // that range touches.
      await wh.reopen();
      await holdCheckpoints();
      wh.logger.debug(
        { runs: result.runs, checkpointMs: Math.round(performance.now() - t1) },
        'rebuild: a range written',
      );
    }
  } finally {
    await wh.run(`SET checkpoint_threshold = ${quoteLiteral(threshold?.t ?? CHECKPOINT_THRESHOLD)}`);
  }
  // A statement that did not fit (tool outputs of many megabytes, as loads meet them) is done
  // again alone, with more memory.
  for (const st of outsized) {
    const [row] = await transactionWithRoom(
      wh,
      (tx) => tx.all<{ Count: bigint }>(st.sql),
      { table: st.table },
      'a range of the rebuild did not fit in memory; inserting it again with more',
    );
    count(result, st, row?.Count);
  }
  result.states = await rebuildStates(wh, files, resource);
  await wh.run(sql.exportDirty());
  await wh.run(recordRunKeys(`SELECT id, created_date FROM ${quoteIdent(resource.table)}`));
  await retryKeptRuns(wh, files, result);
}

/** An INSERT of one table's rows of a range. */
interface Statement {
  table: string;
  sql: string;
  child: boolean;
}

function count(into: { runs: number; childRows: number }, st: Statement, n: bigint | undefined): void {
  if (st.child) into.childRows += Number(n ?? 0);
  else into.runs += Number(n ?? 0);
}

/** Files of a statement read each on its own, with its own filter: more make the plan itself slow. */
const PARTIAL_FILES = 100;

/**
 * The winners cut into ranges of `size` in commit order, each as the archive rows its statements
 * read: files whose every payload wins in the range, read together, and for each other file the
 * seq range of its winners there (and their seqs when others lie between), at most PARTIAL_FILES
 * of them a statement.
 */
async function rangesOfWinners(
  wh: Warehouse,
  files: readonly string[],
  size: number,
): Promise<(string | StagedRows)[][]> {
  const parts = await wh.all<{
    range: bigint;
    ord: number;
    lo: bigint;
    hi: bigint;
    n: bigint;
    payloads: bigint;
    seqs: bigint[] | null;
  }>(
    `SELECT w.rn // ${size} AS range, w.ord, min(w.seq) AS lo, max(w.seq) AS hi, count(*) AS n,
            any_value(p.n) AS payloads,
            CASE WHEN count(*) < max(w.seq) - min(w.seq) + 1 THEN list(w.seq ORDER BY w.seq) END AS seqs
     FROM _rebuild_win w JOIN _rebuild_payloads p USING (ord) GROUP BY 1, 2 ORDER BY 1, min(w.rn)`,
  );
  const statements: (string | StagedRows)[][] = [];
  let range = -1;
  let partial = 0;
  for (const p of parts) {
    if (Number(p.range) !== range || (p.n !== p.payloads && partial === PARTIAL_FILES)) {
      statements.push([]);
      range = Number(p.range);
      partial = 0;
    }
    const statement = statements[statements.length - 1] as (string | StagedRows)[];
    const file = files[p.ord] as string;
    if (p.n === p.payloads) {
      statement.push(file);
      continue;
    }
    partial++;
    statement.push({
      file,
      from: Number(p.lo),
      to: Number(p.hi),
      ...(p.seqs ? { seqs: p.seqs.map(Number) } : {}),
    });
  }
  return statements;
}

/**
 * _rebuild_win: the archive row each run's stored row came from, its file named by its place in
 * `files` (a path held by every row would make the choice's sorts far larger). A run's newest
 * updated_at wins; within one file (one load), its latest fetch. When several loads sent that same
 * updated_at, the loads kept the stored payload unless one arrived with other content and no
 * earlier fetch: that needs the payloads' hashes, read only for those runs, and is decided here in
 * commit order.
 */
async function chooseWinners(wh: Warehouse, files: readonly string[]): Promise<void> {
  await wh.run(`CREATE OR REPLACE TEMP TABLE _rebuild_files (filename VARCHAR, ord INTEGER)`);
  await wh.run(`INSERT INTO _rebuild_files SELECT unnest(${fileList(files)}), unnest(range(${files.length}))`);
  // Aggregates rather than window functions: DuckDB's windows over every run of a large archive
  // hold far more than the memory limit beside it, where its aggregates stay within it.
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_keys AS
     SELECT a.id, f.ord, a.seq, a.fetched_at, TRY_CAST(a.updated_at AS TIMESTAMPTZ) AS u
     FROM read_parquet(${fileList(files)}, filename = true) AS a JOIN _rebuild_files AS f USING (filename)
     WHERE a.kind = 'payload' AND a.id IS NOT NULL`,
  );
  await wh.releaseFreed();
  // Per run, the payloads of its newest updated_at (all of them when none has one); of those, per
  // file, the latest fetch, then the later row.
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_top AS
     SELECT k.id, k.ord, arg_max(k.seq, coalesce(epoch_us(k.fetched_at), 0)::HUGEINT * 4294967296 + k.seq) AS seq,
            max(k.fetched_at) AS fetched_at
     FROM _rebuild_keys AS k JOIN (SELECT id, max(u) AS u FROM _rebuild_keys GROUP BY id) AS n
       ON k.id = n.id AND k.u IS NOT DISTINCT FROM n.u
     GROUP BY k.id, k.ord`,
  );
  await wh.run('DROP TABLE _rebuild_keys');
  await wh.releaseFreed();
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_payloads AS
     SELECT f.ord, count(*) AS n FROM read_parquet(${fileList(files)}, filename = true) AS a
     JOIN _rebuild_files AS f USING (filename) WHERE a.kind = 'payload' GROUP BY f.ord`,
  );
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_tied AS SELECT id FROM _rebuild_top GROUP BY id HAVING count(*) > 1`,
  );
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_won AS SELECT ord, seq FROM _rebuild_top ANTI JOIN _rebuild_tied USING (id)`,
  );
  await wh.releaseFreed();
  const ties = await wh.all<{ id: string; ord: number; seq: bigint; f: bigint; h: string }>(
    `WITH t AS (SELECT t.*, f.filename FROM _rebuild_top t SEMI JOIN _rebuild_tied USING (id) JOIN _rebuild_files f USING (ord))
     SELECT t.id, t.ord, t.seq, epoch_us(t.fetched_at) AS f, md5(p.payload) AS h
     FROM t JOIN read_parquet(${fileList(files)}, filename = true) AS p ON p.filename = t.filename AND p.seq = t.seq
     ORDER BY t.id, t.ord`,
  );
  const chosen = new Map<string, { ord: number; seq: bigint; f: bigint; h: string }>();
  for (const t of ties) {
    const cur = chosen.get(t.id);
    if (!cur || (t.h !== cur.h && t.f >= cur.f)) chosen.set(t.id, t);
  }
  if (chosen.size) {
    const won = [...chosen.values()];
    await wh.run(`INSERT INTO _rebuild_won SELECT unnest($1::INTEGER[]), unnest($2::BIGINT[])`, [
      listValue(won.map((w) => w.ord)),
      listValue(won.map((w) => w.seq)),
    ]);
  }
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE _rebuild_win AS
     SELECT ord, seq, row_number() OVER (ORDER BY ord, seq) - 1 AS rn FROM _rebuild_won`,
  );
  await wh.run('DROP TABLE _rebuild_won');
  await wh.run('DROP TABLE _rebuild_tied');
  await wh.run('DROP TABLE _rebuild_top');
  await wh.run('DROP TABLE _rebuild_files');
}

function fileList(files: readonly string[]): string {
  return `[${files.map(quoteLiteral).join(', ')}]`;
}

/** What each archive file's load noted its payloads held beyond the schema (files without a note are absent). */
async function observedNotes(wh: Warehouse, files: readonly string[]): Promise<Map<string, Observed | null>> {
  const out = new Map<string, Observed | null>();
  const rows = await wh.all<{ f: string; v: string }>(
    `SELECT file_name AS f, decode(value) AS v FROM parquet_kv_metadata(${fileList(files)})
     WHERE decode(key) = ${quoteLiteral(OBSERVED_NOTE)}`,
  );
  for (const r of rows) {
    const json = JSON.parse(r.v) as ObservedJson | null;
    out.set(r.f, json === null ? null : observedFromJson(json));
  }
  return out;
}

/** Payloads of a file a note-less file is read in, so a slice's texts alone are held at a time. */
const OBSERVE_SLICE = 100;

/** A file written before loads noted what they observed: its payloads are read and typed here. */
async function observeFile(wh: Warehouse, file: string): Promise<Observed | null> {
  const source = `read_parquet(${quoteLiteral(file)})`;
  const [last] = await wh.all<{ n: bigint | null }>(`SELECT max(seq) AS n FROM ${source} WHERE kind = 'payload'`);
  const resource = wh.resource('runs');
  let observed: Observed | null = null;
  for (let from = 0; from <= Number(last?.n ?? -1); from += OBSERVE_SLICE) {
    const payloads = await wh.all<{ payload: string }>(
      `SELECT payload FROM ${source} WHERE kind = 'payload' AND seq >= $1 AND seq < $2`,
      [from, from + OBSERVE_SLICE],
    );
    // Parsed one at a time as they are observed: the parsed payloads together would take far more
    // of V8's heap than their text, and the heap keeps what it grew to.
    const seen = observeAll(resource, parsedPayloads(payloads));
    if (seen) observed = observed ? mergeObserved(observed, seen) : seen;
  }
  return observed;
}

function* parsedPayloads(rows: readonly { payload: string }[]): Generator<unknown> {
  for (const r of rows) yield JSON.parse(r.payload) as unknown;
}

/**
 * Payloads once refused are checked again, so a flattening that now accepts them takes them in;
 * and those the schema contract kept out are judged by the contract in force, so a widened one
 * lets them in (a later version already stored wins, as in a load).
 */
async function retryKeptRuns(wh: Warehouse, files: readonly string[], result: RunRebuild): Promise<void> {
  // The kind column alone first: most archives hold neither, and their payloads need no reading.
  const kept = `kind IN ('rejected', '${QUARANTINED}')`;
  const [any] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM read_parquet(${fileList(files)}) WHERE ${kept}`);
  const total = Number(any?.n ?? 0);
  if (total === 0) return;
  const [before] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
  // A slice at a time, in the order they were fetched: a quarantine of a long freeze is large.
  for (let from = 0; from < total; from += RETRY_SLICE) {
    const rows = await wh.all<KeptRow>(
      `SELECT id, epoch_us(fetched_at) AS f, payload FROM read_parquet(${fileList(files)}, filename = true)
       WHERE ${kept} ORDER BY fetched_at, filename, seq LIMIT ${RETRY_SLICE} OFFSET ${from}`,
    );
    result.rejected += await retrySlice(wh, rows);
  }
  // A version kept out that a later one, loaded by a later slice, supersedes is out of quarantine.
  await wh.transaction(async (tx) => {
    const ids = await tx.all<{ id: string }>(
      `SELECT record_id AS id FROM _sync_quarantine WHERE resource = 'runs' AND record_id IS NOT NULL`,
    );
    await releaseRuns(
      tx,
      ids.map((r) => r.id),
    );
  });
  const [after] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
  result.runs += Number(after?.n ?? 0) - Number(before?.n ?? 0);
}

/** Archive rows read back at a time by retryKeptRuns. */
const RETRY_SLICE = 500;

interface KeptRow {
  id: string | null;
  f: bigint;
  payload: string;
}

/** One slice of kept rows judged again and loaded; how many are still refused. */
async function retrySlice(wh: Warehouse, rows: readonly KeptRow[]): Promise<number> {
  const resource = wh.resource('runs');
  const known = knownNode(resource);
  const archive = await ArchiveWriter.open(wh.dir, 'runs', wh.now());
  try {
    const still: { id: string | null; reason: string; payload: string; f: number }[] = [];
    const kept: { record: KeptOut; f: number }[] = [];
    const accepted: unknown[] = [];
    for (const r of rows) {
      let detail: unknown;
      try {
        detail = JSON.parse(r.payload) as unknown;
        checkRunDetail(detail, resource);
      } catch (e) {
        if (!(e instanceof PayloadError) && !(e instanceof SyntaxError)) throw e;
        still.push({ id: r.id, reason: e.message, payload: r.payload, f: Number(r.f) });
        continue;
      }
      const refused = refusedChanges(wh.contract, resource, known, detail);
      if (refused.length) {
        const record = keptOut({ ...identity(detail), reasons: refused.map(refusalReason) }, r.payload);
        kept.push({ record, f: Number(r.f) });
        continue;
      }
      accepted.push(detail);
      await archive.append({
        kind: 'payload',
        id: r.id,
        updatedAt: null,
        fetchedAt: Number(r.f),
        listedAt: null,
        payload: r.payload,
      });
    }
    const path = await archive.finish();
    const observed = observeAll(resource, accepted);
    await wh.transaction(async (tx) => {
      await evolveSchema(tx, wh, 'runs', observed, wh.now());
      if (accepted.length) await stageAndMerge(tx, [path], undefined, wh.resource('runs'));
      for (const s of still) await insertRejected(tx, 'runs', [s], s.f);
      for (const k of kept) await quarantine(tx, 'runs', [k.record], k.f);
    });
    return still.length;
  } finally {
    await archive.abort();
  }
}
