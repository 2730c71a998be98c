import type { Detectors } from './detect.ts';
import type { Hasher } from './hash.ts';
import type { Live } from './matcher.ts';
import type { Segment } from './paths.ts';

// A personal-data policy as runsync applies it: for each resource, the rules of its own object
// and of the items of each child array, in the order the policy file gives them.

/**
 * - keep: stored as the API sent it;
 * - hash: HMAC-SHA256 under RUNSYNC_PII_KEY (strings and numbers; inside JSON, every one of them);
 * - redact: emails, phone numbers, cards, IBANs, IP addresses and the policy's patterns replaced
 *   by a typed placeholder (strings; inside JSON, every one of them);
 * - drop: the member is removed.
 */
export type PiiAction = 'keep' | 'hash' | 'redact' | 'drop';
export const PII_ACTIONS: readonly PiiAction[] = ['keep', 'hash', 'redact', 'drop'];

export interface PiiRule {
  /** Where the policy says it: `runs.trigger_customer_name`, `run_steps.tool_output $..email`. */
  readonly where: string;
  readonly table: string;
  /** The column named, or null for a member path given at table level. */
  readonly column: string | null;
  readonly action: PiiAction;
  /** From the item's root: the column's member path, then the path inside its JSON. */
  readonly path: readonly Segment[];
  /** Its place in the policy: of two rules reaching a value, the earlier decides. */
  readonly order: number;
}

export interface ResourceRules {
  /** Rules of the resource's own object. */
  readonly root: readonly PiiRule[];
  /** Rules of the items of a child array, by the array's member in the payload. */
  readonly children: ReadonlyMap<string, readonly PiiRule[]>;
  /** Where the root's rules stand at the root (the walk starts there). */
  readonly rootStart: Live;
  /** The same for each child array's items. */
  readonly childStarts: ReadonlyMap<string, Live>;
}

export interface PiiPolicy {
  /** `default`, or the policy file's path. */
  readonly source: string;
  /** A digest of what the policy does (not of the key): archive files note it. */
  readonly fingerprint: string;
  readonly rules: readonly PiiRule[];
  /** By resource (its live table's name). */
  readonly resources: ReadonlyMap<string, ResourceRules>;
  readonly detectors: Detectors;
  /** Null when no rule hashes. */
  readonly hash: Hasher | null;
}
