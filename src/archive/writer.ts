import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import parquet, { type ParquetWriter } from 'parquetjs-lite';
import type { Micros } from '../util/timestamp.ts';
import { ARCHIVE_CODEC, registerArchiveCodec } from './codec.ts';
import { type ArchiveEndpoint, newArchivePath } from './paths.ts';

// One archive file, written by parquetjs-lite as a stream: rows go out a row group at a time, so
// a batch of any size holds only a row group in memory. The file is written under a hidden name
// and becomes visible (renamed, after an fsync) only on commit(), in the same step as the
// warehouse transaction that it backs; abort() removes it. Owner-only permissions throughout.
//
// Payloads are compressed with Brotli (codec.ts says why); DuckDB reads it natively.

export interface ArchiveRecord {
  /**
   * A payload as fetched; one the flattening refused (kept so a later version may take it); one
   * the schema contract kept out (replayed once it lets it in); or a listing manifest (the ids of a
   * complete catalog listing).
   */
  kind: 'payload' | 'rejected' | 'manifest' | 'quarantined';
  /** The API's id, as data only. */
  id: string | null;
  /** updated_at exactly as the API sent it. */
  updatedAt: string | null;
  fetchedAt: Micros;
  /** When the catalog listing this belongs to was taken. */
  listedAt: Micros | null;
  /** JSON text, or its UTF-8 bytes. */
  payload: string | Buffer;
}

// No column statistics: parquetjs-lite would keep every distinct payload in a set and copy the
// smallest and largest payload whole into the page headers, the column index and the footer,
// costing writing time and file size. Nothing reads the archive by range, so min/max buy nothing.
const SCHEMA = new parquet.ParquetSchema({
  seq: { type: 'INT64', statistics: false },
  kind: { type: 'UTF8', statistics: false },
  id: { type: 'UTF8', optional: true, statistics: false },
  updated_at: { type: 'UTF8', optional: true, statistics: false },
  fetched_at: { type: 'TIMESTAMP_MICROS', statistics: false },
  listed_at: { type: 'TIMESTAMP_MICROS', optional: true, statistics: false },
  payload: { type: 'UTF8', compression: ARCHIVE_CODEC, statistics: false },
});

// A row group is what the writer buffers: ROW_GROUP_ROWS payloads, so a batch of any size holds
// little in memory, and DuckDB, which reads row groups in parallel, stages a batch on all its
// threads.
const ROW_GROUP_ROWS = 64;
const PAGE_ROWS = 64;

export class ArchiveWriter {
  private seq = 0;
  private finished = false;
  private done = false;
  private committed = false;

  private constructor(
    private readonly writer: ParquetWriter,
    /** The hidden file being written. */
    readonly tempPath: string,
    /** Where commit() puts it. */
    readonly path: string,
  ) {}

  static async open(warehouseDir: string, endpoint: ArchiveEndpoint, at: Micros): Promise<ArchiveWriter> {
    const { dir, name } = newArchivePath(warehouseDir, endpoint, at);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return ArchiveWriter.openFile(dir, name);
  }

  /** A file that takes the place of an existing one on commit (rebuild applying a policy again). */
  static async replacing(path: string): Promise<ArchiveWriter> {
    // What a replacement stopped half-way left (the file itself is whole until the rename).
    await rm(join(dirname(path), `.${basename(path)}.tmp`), { force: true });
    return ArchiveWriter.openFile(dirname(path), basename(path));
  }

  private static async openFile(dir: string, name: string): Promise<ArchiveWriter> {
    registerArchiveCodec();
    const tempPath = join(dir, `.${name}.tmp`);
    const sink = await FailureKeepingSink.open(tempPath);
    const writer = await parquet.ParquetWriter.openStream(SCHEMA, sink, {
      rowGroupSize: ROW_GROUP_ROWS,
      pageSize: PAGE_ROWS,
      // Version 1 data pages: the most widely readable.
      useDataPageV2: false,
      // No page index either: it too would hold min/max payloads.
      pageIndex: false,
    });
    const archive = new ArchiveWriter(writer, tempPath, join(dir, name));
    archive.sink = sink;
    return archive;
  }

  private sink: FailureKeepingSink | null = null;

  /** A write the file refused (a full disk) fails the archive at its next step. */
  private check(): void {
    if (this.sink?.failure) throw this.sink.failure;
  }

  get rows(): number {
    return this.seq;
  }

  /** A note in the file's footer (Parquet key-value metadata), read without reading the rows. */
  note(key: string, value: string): void {
    this.writer.setMetadata(key, value);
  }

  async append(record: ArchiveRecord): Promise<void> {
    this.check();
    await this.writer.appendRow({
      seq: this.seq++,
      kind: record.kind,
      ...(record.id !== null ? { id: record.id } : {}),
      ...(record.updatedAt !== null ? { updated_at: record.updatedAt } : {}),
      fetched_at: BigInt(record.fetchedAt),
      ...(record.listedAt !== null ? { listed_at: BigInt(record.listedAt) } : {}),
      payload: record.payload,
    });
  }

  /** Ends the file (still hidden) so it can be read, e.g. by DuckDB for staging. */
  async finish(): Promise<string> {
    if (!this.finished) {
      this.finished = true;
      this.check();
      await this.writer.close();
      this.check();
      const fh = await open(this.tempPath, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
    return this.tempPath;
  }

  async commit(): Promise<string> {
    if (this.committed) return this.path;
    await this.finish();
    await rename(this.tempPath, this.path);
    this.done = true;
    this.committed = true;
    return this.path;
  }

  /** Where the finished file is now: hidden until commit(), then under its name. */
  get currentPath(): string {
    return this.committed ? this.path : this.tempPath;
  }

  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    if (!this.finished) {
      this.finished = true;
      await this.writer.close().catch(() => undefined);
    }
    await rm(this.tempPath, { force: true });
  }
}

/**
 * The file parquetjs-lite writes to. parquetjs-lite starts writing the header without waiting for
 * it, so a refused write (no space left on the device) would surface as an unhandled rejection
 * and end the process. Here every write reports success to it, the first failure is kept, and
 * the archive's next step throws it, so the load fails cleanly and its transaction rolls back.
 */
class FailureKeepingSink extends Writable {
  failure: Error | null = null;

  private constructor(private readonly file: WriteStream) {
    super();
    file.on('error', (e) => {
      this.failure ??= e;
    });
  }

  static open(path: string): Promise<FailureKeepingSink> {
    return new Promise((resolve, reject) => {
      const file = createWriteStream(path, { flags: 'wx', mode: 0o600 });
      file.once('open', () => resolve(new FailureKeepingSink(file)));
      file.once('error', reject);
    });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (this.failure) return done();
    this.file.write(chunk, (e) => {
      if (e) this.failure ??= e;
      done();
    });
  }

  override _final(done: (error?: Error | null) => void): void {
    this.file.end(() => done());
  }
}
