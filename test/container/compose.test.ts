import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { unknownSettingWarnings } from '../../src/config/unknown-settings.ts';
import { ROOT } from '../support/cli.ts';
import { parseDockerfile } from './dockerfile.ts';

// docker-compose.yml without Docker: it is valid against the Compose Specification's JSON schema
// (compose-spec.json beside this file, from the specification's repository, Apache License 2.0),
// publishes nothing beyond this machine's loopback, names only settings runsync reads, and keeps
// the warehouse on the volume the image declares.

type Service = {
  ports?: (string | { host_ip?: string; published?: string | number })[];
  environment?: Record<string, string> | string[];
  volumes?: string[];
};

const compose = load(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service> };

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    // Draft 07, ajv's own: the meta-schema's address is left out rather than fetched.
    const { $schema: _, ...schema } = JSON.parse(
      readFileSync(join(ROOT, 'test', 'container', 'compose-spec.json'), 'utf8'),
    );
    const ajv = new Ajv({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv) => void)(ajv);
    const validate = ajv.compile(schema);
    expect(validate(compose), JSON.stringify(validate.errors, null, 2)).toBe(true);
    // And the schema does refuse what is not Compose.
    expect(validate({ services: { x: { ports: [{ nonsense: true }] } } })).toBe(false);
  });

  it('publishes ports on the loopback only', () => {
    const published = Object.entries(compose.services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, p]));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, p] of published) {
      if (typeof p === 'string') expect(p, String(name)).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      else expect((p as { host_ip?: string }).host_ip, String(name)).toBe('127.0.0.1');
    }
  });

  it('names only settings runsync reads, the staging by its current name, the warehouse on the image volume', () => {
    const image = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
    const volumes =
      image
        .at(-1)
        ?.steps.filter((s) => s.kind === 'VOLUME')
        .map((s) => s.args) ?? [];
    expect(volumes).toEqual(['/data']);
    for (const [name, s] of Object.entries(compose.services)) {
      const env = Array.isArray(s.environment)
        ? Object.fromEntries(s.environment.map((e) => e.split('=')))
        : (s.environment ?? {});
      expect(unknownSettingWarnings(env), name).toEqual([]);
      expect(env, name).not.toHaveProperty('RUNSYNC_STAGING_DIR');
      if (env.RUNSYNC_WAREHOUSE_DIR) {
        expect(env.RUNSYNC_WAREHOUSE_DIR.startsWith('/data/'), name).toBe(true);
        expect(s.volumes, name).toContain('warehouse:/data');
      }
    }
  });
});
