import { fileURLToPath } from 'node:url';

/** The checkout the tests run in. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
