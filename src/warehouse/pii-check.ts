import { createDetectors, type Detectors } from '../pii/detect.ts';
import { protectedColumn } from '../pii/policy.ts';
import type { PiiPolicy } from '../pii/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { quoteIdent } from './sql.ts';
import type { SqlRunner } from './types.ts';

// `runsync pii check`: a sample of every text and JSON column of the resource tables, read for what
// looks like personal data (the detectors redact uses). What the policy redacted or hashed no longer
// looks like any, so whatever is found is in what the policy keeps. Columns named like personal
// data that no rule covers are named too: a name is not found by its looks. Only counts are
// reported, never a value.

export interface ColumnFinding {
  table: string;
  column: string;
  sampled: number;
  /** Sampled values holding something that looks like personal data. */
  values: number;
  /** How many of each kind were found in them. */
  kinds: Record<string, number>;
}

export interface PiiCheckReport {
  columns: number;
  sample: number;
  findings: ColumnFinding[];
  /** Columns named like personal data that the policy keeps, as table.column. */
  namedLike: string[];
}

const TEXTUAL = new Set(['text', 'json', 'text_list']);
const NAMED_LIKE =
  /(^|_)(customer|user_name|email|e_mail|phone|mobile|address|first_name|last_name|full_name|birth|ssn|passport)(_|$)/;
/** Characters of a value read: enough for a tool output's start, little memory at any sample. */
const VALUE_CHARS = 20_000;

export async function checkWarehouse(
  db: SqlRunner,
  resources: readonly ResourceSpec[],
  policy: PiiPolicy | null,
  sample: number,
): Promise<PiiCheckReport> {
  const detectors: Detectors = policy?.detectors ?? createDetectors();
  const report: PiiCheckReport = { columns: 0, sample, findings: [], namedLike: [] };
  const tables = resources.flatMap((r) => [
    { name: r.table, columns: r.columns, target: { resource: r, child: null } },
    ...r.children.map((c) => ({ name: c.table, columns: c.columns, target: { resource: r, child: c } })),
  ]);
  for (const t of tables) {
    for (const c of t.columns) {
      // Keys are no policy's to change, and ids would only be taken for numbers.
      if (!TEXTUAL.has(c.kind) || protectedColumn(t.target, c)) continue;
      report.columns++;
      if (NAMED_LIKE.test(c.name) && !covered(policy, t.name, c.name)) report.namedLike.push(`${t.name}.${c.name}`);
      const finding = await checkColumn(db, t.name, c.name, c.kind === 'json', sample, detectors);
      if (finding.values) report.findings.push(finding);
    }
  }
  return report;
}

/** Whether a rule other than keep acts on the column as a whole. */
function covered(policy: PiiPolicy | null, table: string, column: string): boolean {
  return (
    policy?.rules.some((r) => r.table === table && r.column === column && r.action !== 'keep' && r.path.length > 0) ??
    false
  );
}

async function checkColumn(
  db: SqlRunner,
  table: string,
  column: string,
  json: boolean,
  sample: number,
  detectors: Detectors,
): Promise<ColumnFinding> {
  const col = quoteIdent(column);
  const rows = await db.all<{ v: string }>(
    `SELECT v FROM (SELECT left(${col}::VARCHAR, ${VALUE_CHARS}) AS v FROM ${quoteIdent(table)} WHERE ${col} IS NOT NULL)
     USING SAMPLE reservoir(${Math.max(1, Math.floor(sample))} ROWS) REPEATABLE (7)`,
  );
  const out: ColumnFinding = { table, column, sampled: rows.length, values: 0, kinds: {} };
  for (const { v } of rows) {
    const kinds = detectors.find(json ? textOfJson(v) : v);
    if (kinds.size === 0) continue;
    out.values++;
    for (const [k, n] of kinds) out.kinds[k] = (out.kinds[k] ?? 0) + n;
  }
  return out;
}

/**
 * The strings of a JSON value, one a line: redaction looks at text, not at numbers (a number that
 * passes for a card is an id more often). A value cut short is read as it is.
 */
function textOfJson(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(value);
  return out.join('\n');
}
