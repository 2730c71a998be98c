// The Export API's GET endpoints as runsync names them, with the scope each needs (for a 403 whose
// message does not name one) and the schema of the records it returns.

export type CatalogKind = 'tools' | 'agents' | 'guidelines' | 'guardrails' | 'runbooks';

export type EndpointName =
  | 'runs.list'
  | 'runs.get'
  | 'runs.toolOptions'
  | `${CatalogKind}.${'list' | 'get'}`;

export type SchemaName =
  | 'run-summary'
  | 'run-detail'
  | 'run-tool-option'
  | 'tool'
  | 'agent'
  | 'guideline'
  | 'guardrail'
  | 'runbook';

export interface EndpointInfo {
  scope: string;
  schema: SchemaName;
}

const CATALOG: Record<CatalogKind, { scope: string; schema: SchemaName }> = {
  tools: { scope: 'api:tools:read', schema: 'tool' },
  agents: { scope: 'api:agents:read', schema: 'agent' },
  guidelines: { scope: 'api:guidelines:read', schema: 'guideline' },
  guardrails: { scope: 'api:guardrails:read', schema: 'guardrail' },
  runbooks: { scope: 'api:runbooks:read', schema: 'runbook' },
};

export const CATALOG_KINDS = Object.keys(CATALOG) as CatalogKind[];

export function endpointInfo(endpoint: EndpointName): EndpointInfo {
  switch (endpoint) {
    case 'runs.list':
      return { scope: 'api:runs:read', schema: 'run-summary' };
    case 'runs.get':
      return { scope: 'api:runs:read', schema: 'run-detail' };
    case 'runs.toolOptions':
      return { scope: 'api:runs:read', schema: 'run-tool-option' };
    default: {
      const kind = endpoint.slice(0, endpoint.indexOf('.')) as CatalogKind;
      return CATALOG[kind];
    }
  }
}

/** Page size bounds of a list endpoint (spec, Limits). */
export function pageBounds(endpoint: EndpointName): { max: number } {
  return { max: endpoint === 'runs.list' ? 100 : 200 };
}
