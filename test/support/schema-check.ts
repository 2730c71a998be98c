import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsMod from 'ajv-formats';

const addFormats = addFormatsMod.default;
const DIR = new URL('../../schemas/api/', import.meta.url).pathname;

// Validates API bodies against schemas/api. In `closed` mode every object schema refuses members
// it does not list, so the simulator cannot drift from the spec by adding fields silently.

function close(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(close);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node))
    out[k] = k === 'properties' || k === 'definitions' ? mapValues(v as object, close) : close(v);
  if (out.additionalProperties === true && out.properties) out.additionalProperties = false;
  return out;
}

function mapValues(o: object, f: (v: unknown) => unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));
}

export function schemaValidator(mode: 'open' | 'closed' = 'closed'): (file: string, data: unknown) => string[] {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const f of readdirSync(DIR).filter((x) => x.endsWith('.json'))) {
    const schema = JSON.parse(readFileSync(join(DIR, f), 'utf8')) as object;
    ajv.addSchema(mode === 'closed' ? (close(schema) as object) : schema);
  }
  const cache = new Map<string, ValidateFunction>();
  return (file, data) => {
    let v = cache.get(file);
    if (!v) {
      v = ajv.getSchema(`https://runsync.dev/schemas/api/${file}`) as ValidateFunction;
      if (!v) throw new Error(`no schema ${file}`);
      cache.set(file, v);
    }
    return v(data) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
  };
}
