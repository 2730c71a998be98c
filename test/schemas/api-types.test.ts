import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { generateApiTypes, TYPES_FILE } from '../support/gen-api-types.ts';

// src/api/types.ts is generated from schemas/api; a schema change without `npm run gen:types`
// would leave the code's types behind the schemas.
it('src/api/types.ts is up to date with schemas/api', async () => {
  expect(await readFile(TYPES_FILE, 'utf8')).toBe(await generateApiTypes());
});
