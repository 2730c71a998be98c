import { CATALOG, type CatalogTable, RUN_TOOL_OPTIONS, RUNS } from '../resources/registry.ts';
import type { SchemaName } from '../resources/types.ts';

// The Export API's GET endpoints as runsync names them, with the scope each needs (for a 403 whose
// message does not name one) and the schema of the records it returns, from the resources' one
// declaration (src/resources).

export type CatalogKind = CatalogTable;
export type { SchemaName };

export type EndpointName = 'runs.list' | 'runs.get' | 'runs.toolOptions' | `${CatalogKind}.${'list' | 'get'}`;

export interface EndpointInfo {
  scope: string;
  schema: SchemaName;
}

export const CATALOG_KINDS = CATALOG.map((r) => r.table) as CatalogKind[];

export function endpointInfo(endpoint: EndpointName): EndpointInfo {
  switch (endpoint) {
    case 'runs.list':
      return { scope: RUNS.scope, schema: 'run-summary' };
    case 'runs.get':
      return { scope: RUNS.scope, schema: RUNS.schema };
    case 'runs.toolOptions':
      return { scope: RUN_TOOL_OPTIONS.scope, schema: RUN_TOOL_OPTIONS.schema };
    default: {
      const table = endpoint.slice(0, endpoint.indexOf('.'));
      const r = CATALOG.find((c) => c.table === table);
      if (!r) throw new Error(`unknown endpoint ${endpoint}`);
      return { scope: r.scope, schema: r.schema };
    }
  }
}

/** Page size bounds of a list endpoint (spec, Limits). */
export function pageBounds(endpoint: EndpointName): { max: number } {
  return { max: endpoint === 'runs.list' ? 100 : 200 };
}
