import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defaultPolicyFile } from '../pii/default-file.ts';
import { KEY_SETTING, POLICY_SETTING, PolicyError, parsePolicy } from '../pii/policy.ts';
import type { PiiPolicy } from '../pii/types.ts';
import { ConfigError } from './error.ts';

// RUNSYNC_PII_POLICY: off (the default), `default` for the policy runsync ships
// (policies/pii-default.yaml), or the path of a policy file. RUNSYNC_PII_KEY, or
// RUNSYNC_PII_KEY_FILE naming a file that holds it: the secret hashed values are keyed with.

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_POLICY_NAME = 'default';
const MIN_KEY_LENGTH = 16;

export interface PiiSettings {
  readonly policy: PiiPolicy | null;
  /** The key, for the values no log line may show (null when none is set). */
  readonly key: string | null;
}

export function piiSettingsOf(
  env: Env,
  options: { readFile?: (path: string) => string; cwd?: string } = {},
): PiiSettings {
  const readFile = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  const key = readKey(env, readFile);
  const raw = env[POLICY_SETTING]?.trim() ?? '';
  if (raw === '' || raw.toLowerCase() === 'off') return { policy: null, key };
  const file = raw === DEFAULT_POLICY_NAME ? defaultPolicyFile() : resolve(options.cwd ?? process.cwd(), raw);
  let text: string;
  try {
    text = readFile(file);
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new ConfigError(
      POLICY_SETTING,
      `cannot read ${file}${code ? ` (${code})` : ''}; give off, default or a policy file`,
    );
  }
  const source = raw === DEFAULT_POLICY_NAME ? DEFAULT_POLICY_NAME : file;
  try {
    return { policy: parsePolicy(text, { key: key === null ? null : Buffer.from(key, 'utf8'), source }), key };
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
    throw new ConfigError(POLICY_SETTING, e.problems.join(`\n${POLICY_SETTING}: `));
  }
}

function readKey(env: Env, readFile: (path: string) => string): string | null {
  const direct = env[KEY_SETTING];
  const fileSetting = `${KEY_SETTING}_FILE`;
  const file = env[fileSetting]?.trim() ?? '';
  if (direct !== undefined && direct !== '' && file !== '')
    throw new ConfigError(KEY_SETTING, `is set together with ${fileSetting}; set only one`);
  let key: string;
  let name = KEY_SETTING;
  if (file !== '') {
    name = fileSetting;
    try {
      key = readFile(file);
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw new ConfigError(name, `cannot read ${file}${code ? ` (${code})` : ''}`);
    }
  } else if (direct !== undefined && direct !== '') key = direct;
  else return null;
  key = key.replace(/\r?\n$/, '');
  // Never quoted: only what is wrong with it.
  if (key.trim().length < MIN_KEY_LENGTH)
    throw new ConfigError(name, `the key must be at least ${MIN_KEY_LENGTH} characters (a random secret)`);
  return key;
}
