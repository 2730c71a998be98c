import { applyPolicy } from './apply.ts';
import type { PiiPolicy } from './types.ts';

export { applyPolicy } from './apply.ts';
export { defaultPolicyFile } from './default-file.ts';
export { createDetectors, type Detectors } from './detect.ts';
export { HASH_PREFIX, isHashed } from './hash.ts';
export { KEY_SETTING, POLICY_SETTING, PolicyError, parsePolicy } from './policy.ts';
export type { PiiAction, PiiPolicy, PiiRule } from './types.ts';

/** The resource (live table) the records of an endpoint, or of a _sync_rejected endpoint name, belong to. */
export function resourceOfEndpoint(endpoint: string): string | null {
  if (endpoint === 'runs.toolOptions' || endpoint === 'tool-options') return 'run_tool_options';
  const dot = endpoint.indexOf('.');
  return dot < 0 ? endpoint : endpoint.slice(0, dot);
}

/** The policy as the API client applies it to every record it hands over. */
export function policyPayloads(policy: PiiPolicy): (endpoint: string, record: unknown) => unknown {
  return (endpoint, record) => {
    const resource = resourceOfEndpoint(endpoint);
    return resource === null ? record : applyPolicy(policy, resource, record);
  };
}
