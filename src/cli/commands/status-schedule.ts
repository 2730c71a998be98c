import { formatTimestamp } from '../../util/timestamp.ts';
import type { QueueReport } from '../../worker/client.ts';

// A schedule as `runsync status` shows it. A worker moves a schedule's next run forward as it
// takes up each tick, so a next run in the past says no worker has been taking them up; shown as
// if all were well, it would hide a fleet that is not running.

/** How long past due a tick may be while a worker is connected: it may be busy with the writer's job. */
const BUSY_GRACE_MS = 60_000;
/** With no worker connected, a tick a few seconds past due is already not going to run. */
const NONE_GRACE_MS = 5_000;

export function scheduleLine(s: QueueReport['schedules'][number], workers: number | null, nowMs: number): string {
  const head = `schedule      ${s.id} "${s.pattern ?? ''}" UTC`;
  if (!s.next) return `${head}, next not planned`;
  const due = formatTimestamp(s.next * 1000);
  const late = nowMs - s.next;
  if (workers === 0 && late > NONE_GRACE_MS)
    return `${head}: no worker has run the schedule since ${due}, and none is connected (runsync worker)`;
  if (workers === null && late > BUSY_GRACE_MS)
    return `${head}: no worker has run the schedule since ${due} (or every worker is busy)`;
  if (late > BUSY_GRACE_MS) return `${head}: due since ${due}, waiting for the writer, busy with another job`;
  return `${head}, next ${due}`;
}
