import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/storage/local.ts';
import { DetailFetcher } from '../../src/sync/detail-fetcher.ts';
import { FETCH_QUEUE } from '../../src/worker/job-context.ts';
import { RemoteDetails } from '../../src/worker/remote-details.ts';
import { StagingStore } from '../../src/worker/staging-store.ts';
import { makeClient } from '../api/test-kit.ts';
import { startSim } from '../sync/kit.ts';
import { cleanRedis, REDIS_URL, uniquePrefix } from './kit.ts';

// The writer waits on fetch jobs that the fleet's fetchers take. When none of its jobs moves (no
// fetcher takes them, as after a Redis restart a fetcher did not come back from), it takes back
// the jobs still waiting and fetches their runs itself; a job a fetcher holds stays with it, and
// while one is held the others wait for the fleet.

describe('fetch jobs nobody takes', () => {
  const undo: (() => unknown)[] = [];
  afterEach(async () => {
    for (const u of undo.splice(0).reverse()) await u();
  });

  /** A link to Redis whose every chunk, each way, arrives `ms` late: a Redis slower than the polling. */
  async function slowRedisUrl(ms: number): Promise<string> {
    const target = new URL(REDIS_URL);
    const sockets = new Set<Socket>();
    const delay = (from: Socket, to: Socket) =>
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), ms));
    const server = createServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      delay(client, upstream);
      delay(upstream, client);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    undo.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
        }),
    );
    return `redis://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  async function setUp(redisUrl = REDIS_URL) {
    const sim = await startSim({ seed: 31, size: 40, days: 2 });
    undo.push(() => sim.close());
    const prefix = uniquePrefix();
    undo.push(() => cleanRedis(prefix));
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
    undo.push(() => connection.disconnect());
    const queue = new Queue(FETCH_QUEUE, { connection, prefix });
    // BullMQ leaves a connection it was given open on close.
    const eventsConnection = connection.duplicate();
    undo.push(() => eventsConnection.disconnect());
    const events = new QueueEvents(FETCH_QUEUE, { connection: eventsConnection, prefix });
    undo.push(() => events.close());
    undo.push(() => queue.close());
    await events.waitUntilReady();
    const dir = mkdtempSync(join(tmpdir(), 'runsync-staging-'));
    undo.push(() => rmSync(dir, { recursive: true, force: true }));
    const staging = new StagingStore(new LocalStore(dir, { share: null }));
    const { client } = makeClient(sim.url, sim.key);
    const ids = [...sim.world.truthRunDetails()].map((d) => d.id as string).slice(0, 25);
    const takenBack: { jobId: string; at: number }[] = [];
    const signal = new AbortController().signal;
    const details = new RemoteDetails({
      queue,
      events,
      staging,
      signal,
      chunk: 10,
      local: (s) => new DetailFetcher(client, 4, s),
      stallMs: 1_500,
      pollMs: 200,
      onTakeBack: (info) => takenBack.push({ jobId: info.jobId, at: Date.now() }),
    });
    undo.push(() => details.close());
    return { sim, prefix, connection, queue, staging, ids, details, takenBack };
  }

  it('fetches the runs itself once no job has moved for a while, and leaves no job behind', async () => {
    const { queue, ids, details, takenBack, sim } = await setUp();
    const batch = await details.fetch(ids);
    expect(batch.results.map((r) => r.id)).toEqual(ids);
    for (const r of batch.results) {
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.detail.id).toBe(r.id);
    }
    expect(takenBack).toHaveLength(3);
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed');
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
    expect(sim.counters.count('runs.get')).toBe(ids.length);
    await batch.release();
  });

  it('takes each job back once when Redis answers slower than the jobs are looked at', async () => {
    const { ids, details, takenBack, sim } = await setUp(await slowRedisUrl(150));
    const batch = await details.fetch(ids);
    expect(batch.results.map((r) => r.ok && r.detail.id)).toEqual(ids);
    expect(takenBack.map((t) => t.jobId).sort()).toEqual([...new Set(takenBack.map((t) => t.jobId))].sort());
    expect(takenBack).toHaveLength(3);
    expect(sim.counters.count('runs.get')).toBe(ids.length);
    await batch.release();
  });

  it('leaves a job a fetcher holds to it, and takes back those waiting only once no fetcher holds any', async () => {
    const { prefix, connection, queue, ids, details, takenBack, staging } = await setUp();
    // One fetcher that holds the first job it takes for a while, and then stops taking jobs.
    const held: number[] = [];
    const workerConnection = connection.duplicate();
    undo.push(() => workerConnection.disconnect());
    const worker = new Worker(
      FETCH_QUEUE,
      async (job) => {
        held.push(job.data.ids.length);
        await new Promise((r) => setTimeout(r, 3_000));
        const file = await staging.write(`details-${job.id}`, {
          details: (job.data.ids as string[]).map((id) => ({ id, detail: { id, fetchedBy: 'fleet' } })),
          invalid: [],
          failures: [],
        });
        return { file, ok: job.data.ids.length, failed: 0 };
      },
      { connection: workerConnection, prefix, concurrency: 1, lockDuration: 2_000 },
    );
    undo.push(() => worker.close(true));
    worker.on('active', () => void worker.pause(true));
    let releasedAt = 0;
    worker.on('completed', () => {
      releasedAt = Date.now();
    });
    const batch = await details.fetch(ids);
    expect(held).toHaveLength(1);
    const byFleet = batch.results.filter((r) => r.ok && (r.detail as { fetchedBy?: string }).fetchedBy === 'fleet');
    expect(byFleet).toHaveLength(held[0] as number);
    expect(takenBack).toHaveLength(2);
    // Nothing was taken back while the fetcher held its job.
    expect(releasedAt).toBeGreaterThan(0);
    for (const t of takenBack) expect(t.at).toBeGreaterThanOrEqual(releasedAt);
    expect(batch.results.every((r) => r.ok)).toBe(true);
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active');
    expect([counts.waiting, counts.delayed, counts.active]).toEqual([0, 0, 0]);
    await batch.release();
  });
});
