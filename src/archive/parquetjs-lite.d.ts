// The part of parquetjs-lite (plain JavaScript, no types of its own) that runsync uses.
declare module 'parquetjs-lite' {
  export interface FieldDefinition {
    type?: string;
    optional?: boolean;
    repeated?: boolean;
    compression?: 'UNCOMPRESSED' | 'GZIP' | 'SNAPPY' | 'BROTLI';
    encoding?: string;
    /** false: no min/max statistics for the column. */
    statistics?: boolean;
    fields?: Record<string, FieldDefinition>;
  }

  export class ParquetSchema {
    constructor(definition: Record<string, FieldDefinition>);
    readonly fields: Record<string, unknown>;
  }

  export interface WriterOptions {
    rowGroupSize?: number;
    pageSize?: number;
    useDataPageV2?: boolean;
    /** false: no column and offset index. */
    pageIndex?: boolean;
    flags?: string;
    mode?: number;
  }

  export class ParquetWriter {
    static openFile(schema: ParquetSchema, path: string, options?: WriterOptions): Promise<ParquetWriter>;
    static openStream(
      schema: ParquetSchema,
      stream: import('node:stream').Writable,
      options?: WriterOptions,
    ): Promise<ParquetWriter>;
    appendRow(row: Record<string, unknown>): Promise<void>;
    close(): Promise<void>;
    setMetadata(key: string, value: string): void;
  }

  export interface ParquetCursor {
    next(): Promise<Record<string, unknown> | null>;
  }

  export class ParquetReader {
    static openFile(path: string): Promise<ParquetReader>;
    readonly schema: ParquetSchema;
    getCursor(columns?: string[] | string[][]): ParquetCursor;
    getRowCount(): number | bigint;
    close(): Promise<void>;
  }

  const parquet: {
    ParquetSchema: typeof ParquetSchema;
    ParquetWriter: typeof ParquetWriter;
    ParquetReader: typeof ParquetReader;
  };
  export default parquet;
}

declare module 'parquetjs-lite/lib/compression.js' {
  export const PARQUET_COMPRESSION_METHODS: Record<
    string,
    { deflate(value: Buffer): Buffer; inflate(value: Buffer): Buffer }
  >;
}

declare module 'parquetjs-lite/lib/types.js' {
  export const PARQUET_LOGICAL_TYPES: Record<string, { fromPrimitive?: (value: unknown) => unknown }>;
}
