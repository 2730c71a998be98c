import { ARCHIVE_ENDPOINTS, type ArchiveEndpoint, listArchiveFiles } from '../archive/paths.ts';
import { PII_NOTE, piiNote } from '../archive/sink.ts';
import { ArchiveWriter } from '../archive/writer.ts';
import { applyPolicy, resourceOfEndpoint } from '../pii/index.ts';
import type { PiiPolicy } from '../pii/types.ts';
import { RESOURCES, RUNS } from '../resources/registry.ts';
import {
  knownNode,
  mergeObserved,
  type Observed,
  observedToJson,
  observeUnknown,
} from '../resources/schema-observe.ts';
import { toJsonText } from './json-text.ts';
import { OBSERVED_NOTE } from './load-runs.ts';
import { quoteLiteral } from './sql.ts';
import type { SqlRunner, Warehouse } from './types.ts';

// A changed personal-data policy, applied to what the raw archive already holds: every file
// written under another policy (its note says which) is written again with the policy in force
// applied to each payload, and takes the old file's place under the same name, so the order of the
// loads is kept. Applying a policy is idempotent, so what is hashed, redacted or dropped stays so;
// what an earlier policy removed cannot come back (a policy that keeps more applies to new loads).
// Run files get their note of observed members anew, since a dropped member is no longer there.

export interface PolicyReapplied {
  files: number;
  payloads: number;
}

/** Rows of a file read at a time, so a file's payloads are never held whole. */
const SLICE = 64;

export async function reapplyPolicy(wh: Warehouse, dir: string, policy: PiiPolicy | null): Promise<PolicyReapplied> {
  const out: PolicyReapplied = { files: 0, payloads: 0 };
  // Nothing to apply: files written under a policy keep what it left.
  if (policy === null) return out;
  for (const endpoint of ARCHIVE_ENDPOINTS) {
    const files = await listArchiveFiles(dir, endpoint);
    if (files.length === 0) continue;
    const notes = await notesOf(wh, files);
    for (const file of files) {
      const fileNotes = notes.get(file) ?? new Map<string, string>();
      if (fileNotes.get(PII_NOTE) === policy.fingerprint) continue;
      out.payloads += await rewrite(wh, file, endpoint, fileNotes, policy);
      out.files++;
    }
  }
  if (out.files)
    wh.logger.info({ ...out, policy: policy.source }, 'applied the personal-data policy to the raw archive');
  return out;
}

async function notesOf(db: SqlRunner, files: readonly string[]): Promise<Map<string, Map<string, string>>> {
  const rows = await db.all<{ f: string; k: string; v: string }>(
    `SELECT file_name AS f, decode(key) AS k, decode(value) AS v
     FROM parquet_kv_metadata([${files.map(quoteLiteral).join(', ')}])`,
  );
  const out = new Map<string, Map<string, string>>();
  for (const r of rows) {
    let m = out.get(r.f);
    if (!m) {
      m = new Map();
      out.set(r.f, m);
    }
    m.set(r.k, r.v);
  }
  return out;
}

interface Row {
  seq: bigint;
  kind: string;
  id: string | null;
  u: string | null;
  f: bigint;
  l: bigint | null;
  payload: string;
}

async function rewrite(
  db: SqlRunner,
  file: string,
  endpoint: ArchiveEndpoint,
  notes: ReadonlyMap<string, string>,
  policy: PiiPolicy,
): Promise<number> {
  const resource = resourceOfEndpoint(endpoint) ?? endpoint;
  const runs = resource === RUNS.table;
  const known = runs ? knownNode(RESOURCES.find((r) => r.table === resource) ?? RUNS) : null;
  let observed: Observed | null = null;
  const archive = await ArchiveWriter.replacing(file);
  let payloads = 0;
  try {
    const source = `read_parquet(${quoteLiteral(file)})`;
    const [last] = await db.all<{ n: bigint | null }>(`SELECT max(seq) AS n FROM ${source}`);
    for (let from = 0; from <= Number(last?.n ?? -1); from += SLICE) {
      const rows = await db.all<Row>(
        `SELECT seq, kind, id, updated_at AS u, epoch_us(fetched_at) AS f, epoch_us(listed_at) AS l, payload
         FROM ${source} WHERE seq >= $1 AND seq < $2 ORDER BY seq`,
        [from, from + SLICE],
      );
      for (const r of rows) {
        let payload = r.payload;
        if (r.kind !== 'manifest') {
          const applied = reapplied(policy, resource, payload);
          if (applied !== null) {
            payload = applied.text;
            payloads++;
            if (known && r.kind === 'payload') {
              const seen = observeUnknown(applied.value, known);
              if (seen) observed = observed ? mergeObserved(observed, seen) : seen;
            }
          }
        }
        await archive.append({
          kind: r.kind as 'payload',
          id: r.id,
          updatedAt: r.u,
          fetchedAt: Number(r.f),
          listedAt: r.l === null ? null : Number(r.l),
          payload,
        });
      }
    }
    for (const [k, v] of notes) if (k !== PII_NOTE && k !== OBSERVED_NOTE) archive.note(k, v);
    if (runs) archive.note(OBSERVED_NOTE, JSON.stringify(observed ? observedToJson(observed) : null));
    archive.note(PII_NOTE, piiNote(policy));
    await archive.commit();
  } catch (e) {
    await archive.abort();
    throw e;
  }
  return payloads;
}

/**
 * The payload with the policy applied, or null when it is not JSON (kept as it is). Parsed as the
 * client parses what it receives, so nothing else of the payload changes.
 */
export function reapplied(policy: PiiPolicy, resource: string, text: string): { text: string; value: unknown } | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const next = applyPolicy(policy, resource, value);
  return { text: next === value ? text : toJsonText(next), value: next };
}
