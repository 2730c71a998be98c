import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsMod from 'ajv-formats';
import agent from '../../schemas/api/agent.json' with { type: 'json' };
import common from '../../schemas/api/common.json' with { type: 'json' };
import guardrail from '../../schemas/api/guardrail.json' with { type: 'json' };
import guideline from '../../schemas/api/guideline.json' with { type: 'json' };
import runDetail from '../../schemas/api/run-detail.json' with { type: 'json' };
import runSummary from '../../schemas/api/run-summary.json' with { type: 'json' };
import runToolOption from '../../schemas/api/run-tool-option.json' with { type: 'json' };
import runbook from '../../schemas/api/runbook.json' with { type: 'json' };
import tool from '../../schemas/api/tool.json' with { type: 'json' };
import { parseTimestamp } from '../util/timestamp.ts';
import type { SchemaName } from './endpoints.ts';

const addFormats = addFormatsMod.default;

// Records checked against schemas/api, the same files the TypeScript types are generated from.
// - strict: every keyword (formats, patterns, enums, consts), for tests;
// - lenient (production): only what a record cannot be used without: required members present
//   with the right JSON types, and `created_at`/`updated_at` readable as timestamps. A value the
//   spec does not enumerate, an id in an unexpected format or a member nobody has heard of passes,
//   and unknown members are kept as they came.

export type ValidationMode = 'strict' | 'lenient';

export interface RecordValidator {
  readonly mode: ValidationMode;
  /** Problems found, one line each; empty when the record is usable. */
  check(schema: SchemaName, record: unknown): string[];
}

const SCHEMAS: Record<SchemaName, object> = {
  'run-summary': runSummary,
  'run-detail': runDetail,
  'run-tool-option': runToolOption,
  tool,
  agent,
  guideline,
  guardrail,
  runbook,
};
const ID_BASE = 'https://runsync.dev/schemas/api/';
const LENIENT_DROPS = new Set(['format', 'pattern', 'enum', 'const']);
const SCHEMA_MAPS = new Set(['properties', 'definitions', 'patternProperties']);
const TIMESTAMPS = ['created_at', 'updated_at'];

/** The schema without the keywords lenient mode does not enforce. */
function relax(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(relax);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (LENIENT_DROPS.has(k)) continue;
    out[k] =
      SCHEMA_MAPS.has(k) && v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, relax(s)]))
        : relax(v);
  }
  return out;
}

export function createRecordValidator(mode: ValidationMode = 'lenient'): RecordValidator {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const schema of [common, ...Object.values(SCHEMAS)])
    ajv.addSchema(mode === 'strict' ? schema : (relax(schema) as object));
  const cache = new Map<SchemaName, ValidateFunction>();
  const compiled = (name: SchemaName): ValidateFunction => {
    let v = cache.get(name);
    if (!v) {
      v = ajv.getSchema(`${ID_BASE}${name}.json`);
      if (!v) throw new Error(`no schema ${name}.json`);
      cache.set(name, v);
    }
    return v;
  };
  return {
    mode,
    check(name, record) {
      const validate = compiled(name);
      const problems = validate(record)
        ? []
        : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
      if (mode === 'lenient' && record && typeof record === 'object') {
        for (const field of TIMESTAMPS) {
          const v = (record as Record<string, unknown>)[field];
          if (typeof v === 'string' && parseTimestamp(v) === null)
            problems.push(`/${field} is not an RFC 3339 date-time`);
        }
      }
      return problems;
    },
  };
}
