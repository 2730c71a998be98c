import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { PARQUET_COMPRESSION_METHODS } from 'parquetjs-lite/lib/compression.js';

// The codec of the archive's payload column. parquetjs-lite compresses in the writing thread:
// SNAPPY with a JavaScript implementation (snappyjs), GZIP with Node's zlib at level 6, either of
// them the largest cost of loading a batch. Brotli at quality 1, through Node's native zlib,
// compresses run details faster than either and into smaller files, and DuckDB reads it natively.
// parquetjs-lite ships Brotli as "not supported in the lite version", so the codec is supplied
// here, for writing and for reading back; registering it again changes nothing.

export const ARCHIVE_CODEC = 'BROTLI' as const;

export function registerArchiveCodec(): void {
  const methods = PARQUET_COMPRESSION_METHODS;
  if (methods.BROTLI?.deflate === brotliDeflate) return;
  methods.BROTLI = { deflate: brotliDeflate, inflate: (value: Buffer) => brotliDecompressSync(value) };
}

function brotliDeflate(value: Buffer): Buffer {
  return brotliCompressSync(value, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: value.length,
    },
  });
}
