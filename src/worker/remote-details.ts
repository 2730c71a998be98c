import { type Job, type Queue, type QueueEvents, UnrecoverableError } from 'bullmq';
import {
  ApiError,
  AuthError,
  InvalidRecordError,
  NotFoundError,
  PermissionError,
  type RunDetail,
} from '../api/index.ts';
import type { DetailBatch, DetailResult, DetailSource } from '../sync/detail-fetcher.ts';
import type { StagedBatch, StagedFailure, StagingStore } from './staging-store.ts';

// Run details fetched by the worker fleet: the ids go out as small fetch-details jobs, any worker
// (this one included) fetches them under the shared budget and leaves them in a staged file, and
// the writer reads the file back. Files are removed once their rows are committed (release).
// A fetch that found the key refused or a scope missing fails its job as unrecoverable, and that
// stops every other wait, as it stops a local fetch. When no worker holds any of the writer's jobs
// and none has moved for a while (no worker takes them: a fetcher that did not come back after
// Redis restarted), the writer takes back the jobs still waiting and fetches their runs itself, so
// a pass never waits on a fleet that does not answer. A job a worker holds, however slowly it goes
// under a low rate, keeps the others waiting for the fleet.

export interface FetchDetailsPayload {
  ids: string[];
}

export interface FetchDetailsResult {
  file: string;
  ok: number;
  failed: number;
}

/** A detail that failed in another process, as far as its error can be told from there. */
export class RemoteFetchError extends ApiError {
  readonly retriable = true;
}

/** The message an ApiError was built from: without the endpoint before it and the meta after. */
function bare(f: { detail: string; endpoint: string }): string {
  const d = f.detail.startsWith(`${f.endpoint}: `) ? f.detail.slice(f.endpoint.length + 2) : f.detail;
  return d.replace(/ \((?:HTTP \d+|[a-z_]+|request_id)[^()]*\)$/, '');
}

/** The error a staged failure stands for; an invalid record gets back what was staged of it. */
export function rebuildError(f: StagedFailure, invalid?: StagedBatch['invalid'][number]): ApiError {
  const info = { endpoint: f.endpoint, status: f.status, code: f.code, requestId: f.requestId };
  if (f.kind === 'InvalidRecordError') {
    const facts = { problems: invalid?.problems ?? [], recordId: f.id, record: invalid?.record ?? null };
    return new InvalidRecordError(bare(f), info, facts);
  }
  if (f.kind === 'NotFoundError') return new NotFoundError(bare(f), info);
  return new RemoteFetchError(bare(f), info);
}

/** The failure a job's failedReason carries when the key or a scope stopped it. */
export function fatalReason(e: AuthError | PermissionError): string {
  const scope = e instanceof PermissionError ? e.scope : null;
  const { name: kind, message: detail, endpoint, status, code, requestId } = e;
  return `fatal:${JSON.stringify({ kind, detail, endpoint, status, code, requestId, scope })}`;
}

function fatalFrom(reason: string | undefined): ApiError | null {
  if (!reason?.startsWith('fatal:')) return null;
  try {
    const f = JSON.parse(reason.slice('fatal:'.length)) as StagedFailure & { scope: string | null };
    const info = { endpoint: f.endpoint, status: f.status, code: f.code, requestId: f.requestId };
    return f.kind === 'PermissionError'
      ? new PermissionError(bare(f), info, { scope: f.scope })
      : new AuthError(bare(f), info);
  } catch {
    return null;
  }
}

export interface RemoteDetailsOptions {
  queue: Queue;
  events: QueueEvents;
  staging: StagingStore;
  signal: AbortSignal;
  /** Runs per fetch job. */
  chunk: number;
  /** Fetches in this process the runs of jobs taken back (see stallMs). */
  local: (signal: AbortSignal) => DetailSource;
  /**
   * How long none of the jobs waited on may stay unmoved, none of them held by a worker, before
   * those still waiting are taken back.
   */
  stallMs?: number;
  /** Told of each job taken back. */
  onTakeBack?: (info: { jobId: string; runs: number; stalledMs: number }) => void;
  /** How often a job's state is looked up beside its events (default 2 s). */
  pollMs?: number;
}

const POLL_MS = 2_000;
export const STALL_MS = 30_000;
/** States of a job no worker has taken (yet, or again). */
const UNTAKEN = new Set(['waiting', 'prioritized', 'delayed', 'wait']);

/** A chunk's outcome: a staged file to read back, or the results fetched here. */
type Chunk = { file: string } | { results: DetailResult[] };

export class RemoteDetails implements DetailSource {
  private fatal: unknown = null;
  private readonly waiters = new Set<(e: unknown) => void>();
  private readonly onAbort: () => void;
  /** When one of the jobs waited on last moved (taken, retried, finished), or one was added. */
  private movedAt = Date.now();
  /** The jobs waited on that a worker held when last looked at. */
  private readonly held = new Set<string>();
  private localSource: DetailSource | null = null;

  constructor(private readonly o: RemoteDetailsOptions) {
    this.onAbort = () => this.stop(o.signal.reason);
    // A signal aborted before this was made fires no event.
    if (o.signal.aborted) this.onAbort();
    else o.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  async fetch(ids: readonly string[]): Promise<DetailBatch> {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += this.o.chunk) chunks.push(ids.slice(i, i + this.o.chunk));
    const files: string[] = [];
    const parts = await Promise.all(
      chunks.map(async (c) => {
        const chunk = await this.one(c);
        if ('results' in chunk) return chunk.results;
        files.push(chunk.file);
        return this.readBack(chunk.file, c);
      }),
    );
    if (this.fatal !== null) throw this.fatal;
    return {
      results: parts.flat(),
      release: async () => {
        for (const f of files) await this.o.staging.remove(f);
      },
    };
  }

  close(): void {
    this.o.signal.removeEventListener('abort', this.onAbort);
    this.stop(new Error('closed'));
    this.localSource?.close();
  }

  private stop(reason: unknown): void {
    if (this.fatal === null) this.fatal = reason ?? new Error('stopped');
    for (const w of this.waiters) w(this.fatal);
    this.waiters.clear();
  }

  private async one(ids: string[]): Promise<Chunk> {
    if (this.fatal !== null) throw this.fatal;
    const payload: FetchDetailsPayload = { ids };
    const job = await this.o.queue.add('fetch-details', payload, {
      attempts: 4,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 3600, count: 2000 },
      removeOnFail: { age: 24 * 3600, count: 2000 },
    });
    return this.finished(job);
  }

  /** The runs of a job taken back, fetched here. */
  private async fetchHere(ids: string[]): Promise<Chunk> {
    this.localSource ??= this.o.local(this.o.signal);
    const batch = await this.localSource.fetch(ids);
    return { results: batch.results };
  }

  /**
   * Takes back a job no worker has taken while no worker holds any of the jobs waited on and none
   * has moved for stallMs. Removing fails for a job a worker holds, so a job is either fetched here
   * or by its worker.
   */
  private async takeBack(job: Job): Promise<boolean> {
    const stalledMs = Date.now() - this.movedAt;
    if (this.held.size > 0 || stalledMs < (this.o.stallMs ?? STALL_MS)) return false;
    const removed = await job.remove().then(
      () => true,
      () => false,
    );
    if (removed) this.o.onTakeBack?.({ jobId: String(job.id), runs: (job.data.ids as string[]).length, stalledMs });
    return removed;
  }

  /** Waits on the queue's events, and polls as well: events sent while Redis was away are lost. */
  private finished(job: Job): Promise<Chunk> {
    this.movedAt = Date.now();
    let last = '';
    return new Promise<Chunk>((resolve, reject) => {
      let done = false;
      const id = String(job.id);
      const finish = (f: () => void) => {
        if (done) return;
        done = true;
        this.held.delete(id);
        clearInterval(timer);
        this.waiters.delete(fail);
        f();
      };
      const fail = (e: unknown) => finish(() => reject(e));
      const failed = (reason: string | undefined) => {
        const fatal = fatalFrom(reason);
        if (fatal) {
          this.stop(fatal);
          fail(fatal);
        } else
          fail(
            new RemoteFetchError(`the fetch job ${job.id} failed: ${reason ?? 'no reason given'}`, {
              endpoint: 'runs.get',
            }),
          );
      };
      const completed = (value: unknown) => {
        this.movedAt = Date.now();
        finish(() => resolve({ file: (value as FetchDetailsResult).file }));
      };
      this.waiters.add(fail);
      job
        .waitUntilFinished(this.o.events)
        .then(completed, (e: unknown) => failed(e instanceof Error ? e.message : String(e)));
      const ids = job.data.ids as string[];
      // A look that outlasts the interval (a slow Redis) must not overlap the next: both would
      // take the job back.
      let looking = false;
      const timer = setInterval(() => {
        if (looking) return;
        looking = true;
        void (async () => {
          // A failed look-up (Redis away) proves nothing; only a job Redis no longer has is asked again.
          const state = await this.o.queue.getJobState(job.id as string).catch(() => 'no answer');
          if (state === 'active') this.held.add(id);
          else if (state !== 'no answer') this.held.delete(id);
          if (state === 'completed') {
            const j = await this.o.queue.getJob(job.id as string);
            if (j) completed(j.returnvalue);
          } else if (state === 'failed') {
            const j = await this.o.queue.getJob(job.id as string);
            failed(j?.failedReason);
          } else if (state === 'unknown') {
            // Gone (Redis lost it): ask again.
            finish(() => resolve(this.one(ids)));
          } else if (UNTAKEN.has(state)) {
            const seen = `${state}:${(await this.o.queue.getJob(job.id as string).catch(() => null))?.attemptsMade}`;
            if (seen !== last) {
              if (last !== '') this.movedAt = Date.now();
              last = seen;
            } else if (!done && (await this.takeBack(job))) finish(() => resolve(this.fetchHere(ids)));
          } else if (state === 'active' && last !== 'active') {
            this.movedAt = Date.now();
            last = 'active';
          }
        })()
          // A look-up Redis did not answer is made again at the next tick.
          .catch(() => undefined)
          .finally(() => {
            looking = false;
          });
      }, this.o.pollMs ?? POLL_MS);
    });
  }

  private async readBack(file: string, ids: string[]): Promise<DetailResult[]> {
    const batch = await this.o.staging.read(file);
    const invalid = new Map(batch.invalid.map((r) => [r.recordId, r]));
    const out: DetailResult[] = [];
    const details = new Map(batch.details.map((d) => [d.id, d.detail as RunDetail]));
    const failures = new Map(batch.failures.map((f) => [f.id, f]));
    for (const id of ids) {
      const d = details.get(id);
      const f = failures.get(id);
      if (d !== undefined) out.push({ id, ok: true, detail: d });
      else
        out.push({
          id,
          ok: false,
          error: f
            ? rebuildError(f, invalid.get(id))
            : new RemoteFetchError('the fetch job returned nothing for this run', { endpoint: 'runs.get' }),
        });
    }
    return out;
  }
}

export { UnrecoverableError };
