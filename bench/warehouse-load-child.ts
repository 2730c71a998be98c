// One measurement of the warehouse-load bench, run in a fresh process so that its peak memory is
// its own. Prints one JSON line. Modes:
//   load <ndjson> <n> <dir> <batch> [export|no-export] [memoryLimit]
//                                                   load the first n run details, then export
//   units <ndjson> <n> <dir> <batch>                as the sync engine commits: one warehouse unit
//                                                   (open, load, checkpoint, close) per batch
//   staging <ndjson> <n> <dir> <batch>              staging+merge only: archive-read vs Appender
//   ceiling <ndjson> <dir>                          DuckDB read_json + unnest of the same file
//   replay <warehouse> <dir>                        DuckDB's part of a load alone: the archive
//                                                   files of an earlier load merged one per
//                                                   transaction, with no JavaScript work beside
import { createReadStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { listArchiveFiles } from '../src/archive/paths.ts';
import { ArchiveWriter } from '../src/archive/writer.ts';
import { exportParquet } from '../src/export/parquet.ts';
import { RUNS } from '../src/resources/registry.ts';
import { WarehouseGate } from '../src/sync/warehouse-gate.ts';
import { limitHeapGrowth } from '../src/util/heap-growth.ts';
import { silentLogger } from '../src/util/logger.ts';
import { appendRows, createStageLike } from '../src/warehouse/append-rows.ts';
import { flattenRunDetail } from '../src/warehouse/flatten-run.ts';
import type { Row } from '../src/warehouse/flatten-values.ts';
import { loadRunDetails, stageAndMerge } from '../src/warehouse/load-runs.ts';
import { openWarehouse } from '../src/warehouse/open.ts';
import { sqlRunner } from '../src/warehouse/sql.ts';
import type { SqlRunner } from '../src/warehouse/types.ts';

/** The lines of a file, split on newline bytes and decoded one line at a time. */
async function* lines(file: string): AsyncGenerator<string> {
  let rest: Buffer = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const buf = rest.length ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      yield buf.toString('utf8', start, nl);
      start = nl + 1;
    }
    rest = buf.subarray(start);
  }
  if (rest.length) yield rest.toString('utf8');
}

/**
 * Batches of parsed run details; with their input text too only when `withTexts` (staging).
 * Reading and parsing stand for the API client's work, so they are kept cheap: readline's
 * splitting and decoding of such long lines costs more than JSON.parse.
 */
async function* batches(
  file: string,
  n: number,
  size: number,
  withTexts = false,
): AsyncGenerator<{ objects: unknown[]; texts: string[] }> {
  let objects: unknown[] = [];
  let texts: string[] = [];
  let seen = 0;
  for await (const line of lines(file)) {
    if (!line) continue;
    if (seen++ >= n) break;
    objects.push(JSON.parse(line));
    if (withTexts) texts.push(line);
    if (objects.length === size) {
      yield { objects, texts };
      objects = [];
      texts = [];
    }
  }
  if (objects.length) yield { objects, texts };
}

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;
/** CPU time of the whole process (every thread, DuckDB's included), in ms. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function childRows(db: SqlRunner): Promise<number> {
  const [r] = await db.all<{ n: bigint }>(
    `SELECT (SELECT count(*) FROM run_messages) + (SELECT count(*) FROM run_steps)
            + (SELECT count(*) FROM run_evaluations) AS n`,
  );
  return Number(r?.n ?? 0);
}

async function load(
  file: string,
  n: number,
  dir: string,
  batch: number,
  withExport: boolean,
  memoryLimit?: string,
): Promise<object> {
  // Reading and parsing the input stands for the API client's work: timed alone first, and taken
  // out of the loading time below.
  const startRssMb = process.memoryUsage().rss / 1024 / 1024;
  const tParse = performance.now();
  const cParse = cpuMs();
  for await (const b of batches(file, n, batch)) if (b.objects.length === 0) throw new Error('empty batch');
  const parseMs = performance.now() - tParse;
  const parseCpuMs = cpuMs() - cParse;

  const wh = await openWarehouse(dir, memoryLimit ? { memoryLimit } : {});
  // Two batches in flight: the next is checked and archived while DuckDB merges the previous.
  let runs = 0;
  let inflight: Promise<unknown> | null = null;
  const t0 = performance.now();
  const c0 = cpuMs();
  for await (const b of batches(file, n, batch)) {
    const next = loadRunDetails(wh, b.objects).then((r) => {
      runs += r.inserted + r.updated;
    });
    if (inflight) await inflight;
    inflight = next;
  }
  await inflight;
  await wh.run('CHECKPOINT');
  const wallMs = performance.now() - t0;
  const loadMs = wallMs - parseMs;
  const loadCpuMs = cpuMs() - c0 - parseCpuMs;
  const rows = await childRows(wh);
  const loadRss = peakRssMb();
  process.stderr.write(`loaded ${runs} runs in ${Math.round(loadMs)} ms, peak RSS ${Math.round(loadRss)} MB\n`);
  const base = { runs, childRows: rows, wallMs, loadMs, parseMs, loadCpuMs, startRssMb, loadPeakRssMb: loadRss };
  if (!withExport) {
    await wh.close();
    return base;
  }
  const tExport = performance.now();
  const e = await exportParquet(wh, { full: true });
  const exportMs = performance.now() - tExport;
  await wh.close();
  return { ...base, exportMs, exportFiles: e.written.length, peakRssMb: peakRssMb() };
}

async function units(file: string, n: number, dir: string, batch: number): Promise<object> {
  const tParse = performance.now();
  for await (const b of batches(file, n, batch)) if (b.objects.length === 0) throw new Error('empty batch');
  const parseMs = performance.now() - tParse;
  // The engine's way into the warehouse: every commit is a unit that opens the file, loads, and
  // closes it (checkpointing), so that a reader can get in between two loads.
  const gate = new WarehouseGate({ dir, logger: silentLogger() });
  let runs = 0;
  const t0 = performance.now();
  for await (const b of batches(file, n, batch)) {
    const r = await gate.use((wh) => loadRunDetails(wh, b.objects));
    runs += r.inserted + r.updated;
  }
  const loadMs = performance.now() - t0 - parseMs;
  const loadRss = peakRssMb();
  process.stderr.write(
    `loaded ${runs} runs in ${Math.round(loadMs)} ms, one unit per batch, peak RSS ${Math.round(loadRss)} MB\n`,
  );
  return { runs, loadMs, parseMs, loadPeakRssMb: loadRss };
}

async function staging(file: string, n: number, dir: string, batch: number): Promise<object> {
  // Archive-read: DuckDB stages straight from the raw archive file (what the loader does).
  const a = await openWarehouse(join(dir, 'archive-read'));
  let archiveMs = 0;
  for await (const b of batches(file, n, batch, true)) {
    const w = await ArchiveWriter.open(a.dir, 'runs', a.now());
    for (let i = 0; i < b.texts.length; i++) {
      await w.append({
        kind: 'payload',
        id: null,
        updatedAt: null,
        fetchedAt: a.now(),
        listedAt: null,
        payload: b.texts[i] as string,
      });
    }
    const path = await w.finish();
    const t0 = performance.now();
    await a.transaction((tx) => stageAndMerge(tx, [path], undefined, RUNS));
    archiveMs += performance.now() - t0;
    await w.abort();
  }
  const archiveRows = await childRows(a);
  await a.close();

  // Appender: flattenRunDetail in TypeScript, rows appended into staging tables, the same merge.
  const p = await openWarehouse(join(dir, 'appender'));
  let appenderMs = 0;
  const tables = ['runs', ...RUNS.children.map((c) => c.table)];
  for await (const b of batches(file, n, batch)) {
    const t0 = performance.now();
    await p.transaction(async (tx) => {
      const rows: Record<string, Row[]> = Object.fromEntries(tables.map((t) => [t, []]));
      for (const d of b.objects) {
        const f = flattenRunDetail(d);
        rows.runs?.push({ ...f.run, fetched_at: 0, payload_hash: '' });
        for (const c of RUNS.children) rows[c.table]?.push(...(f.children[c.table] ?? []));
      }
      for (const t of tables) {
        await createStageLike(tx, `_a_${t}`, t);
        await appendRows(tx, `_a_${t}`, rows[t] ?? []);
      }
      for (const c of RUNS.children) await tx.run(`DELETE FROM ${c.table} WHERE run_id IN (SELECT id FROM _a_runs)`);
      await tx.run(`DELETE FROM runs WHERE id IN (SELECT id FROM _a_runs)`);
      for (const t of tables) await tx.run(`INSERT INTO ${t} SELECT * FROM _a_${t}`);
    });
    appenderMs += performance.now() - t0;
  }
  const appenderRows = await childRows(p);
  await p.close();
  return { archiveMs, appenderMs, archiveRows, appenderRows };
}

async function replay(source: string, dir: string): Promise<object> {
  const files = await listArchiveFiles(source, 'runs');
  const wh = await openWarehouse(dir);
  let runs = 0;
  const t0 = performance.now();
  const c0 = cpuMs();
  for (const f of files) {
    // As the loader merges a batch, but DuckDB hashes the payloads itself (the loader hands it
    // the hashes it computed while archiving).
    const r = await wh.transaction((tx) => stageAndMerge(tx, [f], undefined, RUNS));
    runs += r.inserted + r.updated;
  }
  await wh.run('CHECKPOINT');
  const ms = performance.now() - t0;
  const cpu = cpuMs() - c0;
  const rows = await childRows(wh);
  await wh.close();
  return { ms, cpuMs: cpu, runs, childRows: rows, files: files.length, peakRssMb: peakRssMb() };
}

const struct = (...fields: string[]) => `STRUCT(${fields.join(', ')})`;
/** The typed columns read_json gives the ceiling, as a DuckDB struct literal. */
const CEILING_COLUMNS = `{${Object.entries({
  id: 'VARCHAR',
  created_at: 'TIMESTAMPTZ',
  updated_at: 'TIMESTAMPTZ',
  status: 'VARCHAR',
  '"source"': 'VARCHAR',
  duration_seconds: 'DOUBLE',
  ticket: struct('id VARCHAR', 'title VARCHAR', 'url VARCHAR'),
  agent: struct('id VARCHAR', 'name VARCHAR', 'description VARCHAR'),
  category: struct('id VARCHAR', 'name VARCHAR'),
  resolution: struct('"type" VARCHAR', 'summary VARCHAR'),
  '"trigger"': struct(
    'event_type VARCHAR',
    '"source" VARCHAR',
    '"timestamp" VARCHAR',
    'ticket_status VARCHAR',
    'ticket_priority VARCHAR',
    'ticket_tags VARCHAR[]',
    'trigger_message_type VARCHAR',
    'internal_notes_only BOOLEAN',
    'is_messaging_ticket BOOLEAN',
    'customer_name VARCHAR',
    'message_text VARCHAR',
    'latest_comment VARCHAR',
  ),
  approval: struct(
    'waiting_for_approval BOOLEAN',
    `pending ${struct(
      'step_id VARCHAR',
      'tool_id VARCHAR',
      'tool_name VARCHAR',
      'tool_type VARCHAR',
      'params JSON',
      'redacted BOOLEAN',
      'truncated BOOLEAN',
    )}`,
  ),
  scheduled_resume_at: 'TIMESTAMPTZ',
  conversation: `${struct(
    'id VARCHAR',
    '"order" BIGINT',
    'role VARCHAR',
    'user_name VARCHAR',
    'message VARCHAR',
    'source_timestamp VARCHAR',
    'recorded_at TIMESTAMPTZ',
  )}[]`,
  steps: `${struct(
    'id VARCHAR',
    '"order" BIGINT',
    '"timestamp" TIMESTAMPTZ',
    '"type" VARCHAR',
    'title VARCHAR',
    'content VARCHAR',
    'status VARCHAR',
    'duration_seconds DOUBLE',
    `tool ${struct(
      'name VARCHAR',
      '"type" VARCHAR',
      'input JSON',
      'output JSON',
      'redacted BOOLEAN',
      'truncated BOOLEAN',
      'error VARCHAR',
    )}`,
  )}[]`,
  evaluation_attributes: `${struct(
    'id VARCHAR',
    'attribute_id VARCHAR',
    'name VARCHAR',
    'description VARCHAR',
    'value VARCHAR',
    'recorded_at TIMESTAMPTZ',
  )}[]`,
})
  .map(([name, type]) => `${name}:'${type}'`)
  .join(', ')}}`;

async function ceiling(file: string, dir: string): Promise<object> {
  mkdirSync(dir, { recursive: true });
  const inst = await DuckDBInstance.create(join(dir, 'ceiling.duckdb'));
  const db = sqlRunner(await inst.connect());
  const t0 = performance.now();
  const c0 = cpuMs();
  await db.run(
    `CREATE TEMP TABLE p AS SELECT * FROM read_json('${file}', format = 'newline_delimited',
       maximum_object_size = 1000000000, columns = ${CEILING_COLUMNS})`,
  );
  await db.run(`CREATE TABLE runs AS SELECT id, created_at, updated_at, status, "source", duration_seconds,
    ticket.id AS ticket_id, ticket.title AS ticket_title, ticket.url AS ticket_url,
    agent.id AS agent_id, agent.name AS agent_name, agent.description AS agent_description,
    category.id AS category_id, category.name AS category_name,
    resolution."type" AS resolution_type, resolution.summary AS resolution_summary,
    "trigger".event_type AS trigger_event_type, "trigger"."source" AS trigger_source,
    "trigger"."timestamp" AS trigger_timestamp,
    "trigger".ticket_status AS trigger_ticket_status, "trigger".ticket_priority AS trigger_ticket_priority,
    "trigger".ticket_tags AS ticket_tags,
    "trigger".trigger_message_type AS trigger_message_type,
    "trigger".internal_notes_only AS trigger_internal_notes_only,
    "trigger".is_messaging_ticket AS trigger_is_messaging_ticket, "trigger".customer_name AS trigger_customer_name,
    "trigger".message_text AS trigger_message_text, "trigger".latest_comment AS trigger_latest_comment,
    approval.waiting_for_approval AS approval_waiting_for_approval,
    approval.pending.step_id AS approval_pending_step_id,
    approval.pending.tool_id AS approval_pending_tool_id, approval.pending.tool_name AS approval_pending_tool_name,
    approval.pending.tool_type AS approval_pending_tool_type, approval.pending.params AS approval_pending_params,
    approval.pending.redacted AS approval_pending_redacted, approval.pending.truncated AS approval_pending_truncated,
    scheduled_resume_at, (created_at AT TIME ZONE 'UTC')::DATE AS created_date FROM p`);
  await db.run(`CREATE TABLE run_messages AS SELECT id AS run_id, unnest(conversation, recursive := true) FROM p`);
  await db.run(`CREATE TABLE run_steps AS SELECT id AS run_id, unnest(steps, recursive := true) FROM p`);
  await db.run(
    `CREATE TABLE run_evaluations AS SELECT id AS run_id, unnest(evaluation_attributes, recursive := true) FROM p`,
  );
  await db.run('CHECKPOINT');
  const ms = performance.now() - t0;
  const cpu = cpuMs() - c0;
  const runs = Number((await db.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`))[0]?.n ?? 0);
  const rows = await childRows(db);
  db.connection.closeSync();
  inst.closeSync();
  return { ms, cpuMs: cpu, runs, childRows: rows, peakRssMb: peakRssMb() };
}

// As the CLI runs (src/cli/main.ts), unless the bench asks for V8's own heap growth.
if (process.env.RUNSYNC_BENCH_V8_DEFAULT_HEAP !== '1') limitHeapGrowth();

const [mode, ...args] = process.argv.slice(2);
const out =
  mode === 'load'
    ? await load(
        args[0] as string,
        Number(args[1]),
        args[2] as string,
        Number(args[3]),
        args[4] !== 'no-export',
        args[5],
      )
    : mode === 'units'
      ? await units(args[0] as string, Number(args[1]), args[2] as string, Number(args[3]))
      : mode === 'staging'
        ? await staging(args[0] as string, Number(args[1]), args[2] as string, Number(args[3]))
        : mode === 'replay'
          ? await replay(args[0] as string, args[1] as string)
          : await ceiling(args[0] as string, args[1] as string);
process.stdout.write(`${JSON.stringify(out)}\n`);
