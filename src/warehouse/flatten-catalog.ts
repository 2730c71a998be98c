import { asArray, asObject, flattenColumns, type Row } from './flatten-values.ts';
import { CATALOG_COLUMNS, TOOL_OPTION_COLUMNS, TOOL_PARAMETER_COLUMNS, type CatalogTable } from './spec-catalog.ts';

// Catalog objects and tool options as rows. Pure, like the run flattening; secrets must already
// be masked (mask-secrets.ts) when a tool comes here.

export interface CatalogRows {
  row: Row;
  /** tool_parameters rows (tools only; empty otherwise). */
  parameters: Row[];
  /** Parameters left out because an earlier one had the same name (the key is tool_id, name). */
  duplicateParameters: string[];
}

export function flattenCatalogObject(table: CatalogTable, obj: unknown): CatalogRows {
  const o = asObject(obj, '');
  const row = flattenColumns(o, CATALOG_COLUMNS[table], '');
  if (table !== 'tools') return { row, parameters: [], duplicateParameters: [] };
  return { row, ...toolParameters(o, row.id as string) };
}

function toolParameters(tool: Record<string, unknown>, toolId: string): Omit<CatalogRows, 'row'> {
  const parameters: Row[] = [];
  const duplicateParameters: string[] = [];
  if (tool.parameters === undefined || tool.parameters === null) return { parameters, duplicateParameters };
  const items = asArray(tool.parameters, 'parameters');
  const seen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const row: Row = { tool_id: toolId };
    flattenColumns(asObject(items[i], `parameters[${i}]`), TOOL_PARAMETER_COLUMNS, `parameters[${i}].`, row);
    const name = row.name as string;
    if (seen.has(name)) {
      duplicateParameters.push(name);
      continue;
    }
    seen.add(name);
    parameters.push({ tool_id: toolId, name, ordinal: i, ...withoutKeys(row, ['tool_id', 'name']) });
  }
  return { parameters, duplicateParameters };
}

function withoutKeys(row: Row, keys: readonly string[]): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) if (!keys.includes(k)) out[k] = v;
  return out;
}

export function flattenToolOption(option: unknown): Row {
  return flattenColumns(asObject(option, ''), TOOL_OPTION_COLUMNS, '');
}

export const flattenTool = (tool: unknown): CatalogRows => flattenCatalogObject('tools', tool);
export const flattenAgent = (agent: unknown): Row => flattenCatalogObject('agents', agent).row;
export const flattenGuideline = (guideline: unknown): Row => flattenCatalogObject('guidelines', guideline).row;
export const flattenGuardrail = (guardrail: unknown): Row => flattenCatalogObject('guardrails', guardrail).row;
export const flattenRunbook = (runbook: unknown): Row => flattenCatalogObject('runbooks', runbook).row;
