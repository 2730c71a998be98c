// Generates src/api/types.ts from the JSON Schemas in schemas/api/, so the TypeScript types of
// API resources have the schemas as their source. `npm run gen:types` rewrites the file; a test
// fails when it is out of date.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { RESOURCES as RESOURCE_SPECS } from '../../src/resources/registry.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const SCHEMAS = join(ROOT, 'schemas/api');
export const TYPES_FILE = join(ROOT, 'src/api/types.ts');

const pascal = (name: string) => name.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

// A type for the schema of every declared resource (src/resources), the run summary the runs list
// returns, and the error body.
const TYPES: Record<string, string> = {
  'run-summary.json': 'RunSummary',
  ...Object.fromEntries(RESOURCE_SPECS.map((r) => [`${r.schema}.json`, pascal(r.schema)])),
  'error.json': 'ErrorBody',
};

export async function generateApiTypes(): Promise<string> {
  const files = (await readdir(SCHEMAS)).filter((f) => f.endsWith('.json'));
  const byFile = new Map<string, JSONSchema>();
  for (const f of files) byFile.set(f, JSON.parse(await readFile(join(SCHEMAS, f), 'utf8')) as JSONSchema);
  const parts: string[] = [
    '// Generated from schemas/api/*.json by `npm run gen:types`; do not edit by hand.',
    '/* eslint-disable */',
    '',
  ];
  const seen = new Set<string>();
  for (const [file, name] of Object.entries(TYPES)) {
    const schema = { ...(byFile.get(file) as JSONSchema), title: name };
    const ts = await compile(schema, name, {
      cwd: SCHEMAS,
      bannerComment: '',
      additionalProperties: true,
      declareExternallyReferenced: true,
      strictIndexSignatures: false,
      unknownAny: true,
      format: true,
      style: { singleQuote: true, printWidth: 110 },
    });
    // Shared definitions are emitted with every resource that refers to them; keep the first.
    for (const block of ts.split(/\n(?=export )/)) {
      const m = /^export (?:interface|type) (\w+)/.exec(block.trim());
      if (m && seen.has(m[1] as string)) continue;
      if (m) seen.add(m[1] as string);
      parts.push(block.trim(), '');
    }
  }
  return parts.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await writeFile(TYPES_FILE, await generateApiTypes());
  console.log(`wrote ${TYPES_FILE}`);
}
