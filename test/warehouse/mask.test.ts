import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exportParquet } from '../../src/export/parquet.ts';
import { loadCatalogListing } from '../../src/warehouse/load-catalog.ts';
import { isMasked, maskToolSecrets, maskValue } from '../../src/warehouse/mask-secrets.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { simWorld, tempDir } from './wh-kit.ts';

const SECRET_TEXT = /sk_live_[0-9a-f]|pw-[0-9a-f]{6}|session=[0-9a-f]|supersecret|hunter2/;

function customTool(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'custom:1',
    object: 'tool',
    type: 'custom_tool',
    name: 'c',
    description: '',
    is_write_action: true,
    requires_approval: false,
    enabled: true,
    parameters: [],
    custom: {
      endpoint: 'https://svc:hunter2@api.example.com/x?api_key=supersecret&page=2',
      method: 'POST',
      body_format: 'json',
      http_timeout_sec: 30,
      headers: [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'Authorization', value: 'Bearer sk_live_aaaa' },
        { name: 'Cookie', value: 'session=abcd' },
        { name: 'X-Api-Key', value: 'sk_live_bbbb' },
        { name: 'X-Client-Secret', value: 'supersecret' },
      ],
      auth: {
        type: 'oauth2',
        client_id: 'client-1',
        client_secret: 'sk_live_cccc',
        token_url: 'https://auth.example.com/token',
        refresh: { token: 'sk_live_dddd', ttl: 3600 },
        scopes: ['read'],
      },
    },
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-02-01T00:00:00Z',
    ...over,
  };
}

describe('masking', () => {
  it('replaces a secret by a short fingerprint that changes with the secret and is stable for it', () => {
    expect(maskValue('sk_live_aaaa')).toMatch(/^\*\*\*masked:[0-9a-f]{8}$/);
    expect(maskValue('sk_live_aaaa')).toBe(maskValue('sk_live_aaaa'));
    expect(maskValue('sk_live_aaaa')).not.toBe(maskValue('sk_live_aaab'));
    expect(maskValue(maskValue('x'))).toBe(maskValue('x'));
    expect(isMasked('***masked:zz')).toBe(false);
  });

  it('masks sensitive headers, secret auth members and URL secrets, and nothing else', () => {
    const tool = customTool();
    const masked = maskToolSecrets(tool);
    const custom = masked.custom as {
      headers: { name: string; value: string }[];
      auth: Record<string, unknown>;
      endpoint: string;
    };
    const h = Object.fromEntries(custom.headers.map((x) => [x.name, x.value]));
    expect(h['Content-Type']).toBe('application/json');
    for (const name of ['Authorization', 'Cookie', 'X-Api-Key', 'X-Client-Secret'])
      expect(isMasked(h[name] as string), name).toBe(true);
    expect(custom.auth).toMatchObject({
      type: 'oauth2',
      client_id: 'client-1',
      token_url: 'https://auth.example.com/token',
      scopes: ['read'],
    });
    expect(isMasked(String(custom.auth.client_secret))).toBe(true);
    expect(isMasked(String((custom.auth.refresh as Record<string, string>).token))).toBe(true);
    expect(custom.endpoint).not.toMatch(SECRET_TEXT);
    expect(new URL(custom.endpoint).searchParams.get('page')).toBe('2');
    expect(JSON.stringify(masked)).not.toMatch(SECRET_TEXT);
    expect(JSON.stringify(tool)).toMatch(SECRET_TEXT); // the argument is left as it was
  });

  it('masks other shapes of auth and headers: api-key values, bare strings, header maps', () => {
    const shapes: [Record<string, unknown>, string[]][] = [
      [{ auth: { type: 'api_key', key_name: 'X-Api-Key', key_value: 'sk_live_1111', in: 'header' } }, ['key_value']],
      [{ auth: { type: 'api_key', header: 'X-Api-Key', header_value: 'sk_live_2222' } }, ['header_value']],
      [{ auth: { type: 'bearer', bearer: 'sk_live_3333' } }, ['bearer']],
      [{ auth: { type: 'basic', username: 'svc', pass: 'hunter2' } }, ['pass']],
      [{ auth: { type: 'jwt', jwt: 'eyJ.sk_live_4444', private_key_pem: 'sk_live_5555' } }, ['jwt', 'private_key_pem']],
    ];
    for (const [custom, secretKeys] of shapes) {
      const masked = maskToolSecrets({ custom }) as { custom: { auth: Record<string, unknown> } };
      const original = custom.auth as Record<string, unknown>;
      for (const [k, v] of Object.entries(masked.custom.auth)) {
        if (secretKeys.includes(k)) expect(isMasked(String(v)), k).toBe(true);
        else expect(v, k).toEqual(original[k]);
      }
      expect(JSON.stringify(masked)).not.toMatch(SECRET_TEXT);
      expect(maskToolSecrets(masked)).toEqual(masked);
    }
    const bare = maskToolSecrets({ custom: { auth: 'Bearer sk_live_6666' } }) as { custom: { auth: string } };
    expect(isMasked(bare.custom.auth)).toBe(true);
    const map = maskToolSecrets({
      custom: { headers: { Authorization: 'Bearer sk_live_7777', Accept: 'application/json' } },
    }) as { custom: { headers: Record<string, string> } };
    expect(isMasked(map.custom.headers.Authorization as string)).toBe(true);
    expect(map.custom.headers.Accept).toBe('application/json');
  });

  it('is idempotent: masking a masked tool changes nothing', () => {
    const once = maskToolSecrets(customTool());
    expect(maskToolSecrets(once)).toEqual(once);
    const endpointOnly = maskToolSecrets({ custom: { endpoint: 'https://api.example.com/plain?page=1' } });
    expect(endpointOnly).toEqual({ custom: { endpoint: 'https://api.example.com/plain?page=1' } });
  });

  it('leaves no secret of any simulator custom tool', () => {
    const tools = simWorld(6, 10)
      .catalogObjects('tool')
      .filter((t) => t.type === 'custom_tool');
    expect(tools.length).toBeGreaterThan(5);
    expect(JSON.stringify(tools)).toMatch(SECRET_TEXT);
    for (const t of tools) expect(JSON.stringify(maskToolSecrets(t))).not.toMatch(SECRET_TEXT);
  });
});

describe('secrets on disk', () => {
  let tmp: ReturnType<typeof tempDir>;
  let wh: Warehouse;
  let now = 1_000_000;
  beforeEach(async () => {
    tmp = tempDir();
    wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => (now += 1000) });
  });
  afterEach(async () => {
    await wh.close();
    tmp.cleanup();
  });

  it('reach neither the tables, the raw archive, the refused payloads nor the Parquet files', async () => {
    const tools = [...simWorld(6, 10).catalogObjects('tool'), customTool()];
    const r = await loadCatalogListing(wh, 'tools', [...tools, customTool({ id: 'custom:bad', enabled: 'yes' })], {
      complete: true,
    });
    expect(r.rejected).toHaveLength(1);
    await exportParquet(wh);
    const leaky = (text: string) => `regexp_matches(${text}, '${SECRET_TEXT.source}')`;
    const custom = leaky('custom_headers::VARCHAR || custom_auth::VARCHAR || custom_endpoint');
    const leaks = await wh.all(`
      SELECT 'tools' AS source FROM tools WHERE ${custom}
      UNION ALL SELECT 'history' FROM tools_history WHERE ${custom}
      UNION ALL SELECT 'rejected' FROM _sync_rejected WHERE ${leaky('payload')}
      UNION ALL SELECT 'raw' FROM read_parquet('${join(wh.dir, 'raw', 'tools', '*', '*.parquet')}')
        WHERE ${leaky('payload')}
      UNION ALL SELECT 'parquet'
        FROM read_parquet('${join(wh.dir, 'parquet', 'tools*', '*.parquet')}', union_by_name = true)
        WHERE ${custom}`);
    expect(leaks).toEqual([]);
    expect(
      await wh.all(`SELECT count(*) AS n FROM tools WHERE custom_headers::VARCHAR LIKE '%***masked:%'`),
    ).not.toEqual([{ n: 0n }]);
  });

  it('a rotated secret still makes a new version', async () => {
    await loadCatalogListing(wh, 'tools', [customTool()], { complete: true });
    const rotated = customTool();
    ((rotated.custom as Record<string, unknown>).auth as Record<string, unknown>).client_secret = 'sk_live_eeee';
    const r = await loadCatalogListing(wh, 'tools', [rotated], { complete: true });
    expect(r.changed).toBe(1);
    const secrets = await wh.all<{ s: string }>(
      `SELECT custom_auth->>'client_secret' AS s FROM tools_history ORDER BY valid_from`,
    );
    expect(secrets.map((x) => x.s)).toEqual([maskValue('sk_live_cccc'), maskValue('sk_live_eeee')]);
  });

  it('can be turned off by the operator', async () => {
    const open = await openWarehouse(join(tmp.dir, 'plain'), { maskSecrets: false });
    await loadCatalogListing(open, 'tools', [customTool()], { complete: true });
    expect(await open.all(`SELECT custom_auth->>'client_secret' AS s FROM tools`)).toEqual([{ s: 'sk_live_cccc' }]);
    // The leak query of the test above does find secrets when they are there.
    const raw = join(open.dir, 'raw', 'tools', '*', '*.parquet');
    expect(
      await open.all(
        `SELECT count(*) AS n FROM read_parquet('${raw}') WHERE regexp_matches(payload, '${SECRET_TEXT.source}')`,
      ),
    ).toEqual([{ n: 1n }]);
    await open.close();
  });
});
