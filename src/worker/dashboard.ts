import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import type { Logger } from '../util/logger.ts';
import type { WorkerQueues } from './job-context.ts';
import type { WorkerMetrics } from './metrics.ts';

// `runsync worker --dashboard PORT`: Bull Board (the queue dashboard BullMQ users know) at `/`,
// Prometheus metrics at `/metrics`, and `/healthz`. Bound to 127.0.0.1 unless told otherwise:
// the board can retry and remove jobs, so put it behind your own access control to expose it.

export interface Dashboard {
  url: string;
  close(): Promise<void>;
}

export async function startDashboard(o: {
  port: number;
  host: string;
  queues: WorkerQueues;
  metrics: WorkerMetrics;
  logger: Logger;
}): Promise<Dashboard> {
  const board = new ExpressAdapter();
  board.setBasePath('/');
  createBullBoard({
    queues: [new BullMQAdapter(o.queues.write), new BullMQAdapter(o.queues.fetch)],
    serverAdapter: board,
  });
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', (_req, res) => {
    o.metrics.registry
      .metrics()
      .then((text) => res.type(o.metrics.registry.contentType).send(text))
      .catch((e: unknown) =>
        res
          .status(500)
          .type('text/plain')
          .send(`metrics failed: ${(e as Error).message}`),
      );
  });
  app.get('/healthz', (_req, res) => res.type('text/plain').send('ok'));
  app.use('/', board.getRouter());
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(o.port, o.host, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  o.logger.info({ url }, 'dashboard and /metrics listening');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
