import { readFileSync } from 'node:fs';

// RUNSYNC_S3_CREDENTIALS_FILE: a file in the AWS shared-credentials format, read again whenever
// the store says the credentials expired, so a file that an agent rewrites (Vault, a sidecar
// refreshing a session) keeps the export going. Without it the SDK's standard chain applies.

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Thrown for a file that cannot be read or lacks a key; the message never quotes a value. */
export class CredentialsFileError extends Error {
  override readonly name = 'CredentialsFileError';
}

export function readCredentialsFile(path: string, profile: string): S3Credentials {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CredentialsFileError(`cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const values = new Map<string, string>();
  let section: string | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (head) {
      section = head[1] as string;
      continue;
    }
    const kv = /^([A-Za-z_]+)\s*=\s*(.*)$/.exec(line);
    if (kv && section === profile) values.set((kv[1] as string).toLowerCase(), (kv[2] as string).trim());
  }
  const accessKeyId = values.get('aws_access_key_id');
  const secretAccessKey = values.get('aws_secret_access_key');
  if (!accessKeyId || !secretAccessKey)
    throw new CredentialsFileError(`${path} has no aws_access_key_id and aws_secret_access_key under [${profile}]`);
  const sessionToken = values.get('aws_session_token');
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}
