import { enqueue } from '../shared/jobs/queues.ts';
import type { Logger } from '../shared/platform/logger.ts';
import type { PoolContext } from './pool.ts';

/**
 * Wakes a pool's job as soon as rows it works on commit: Postgres NOTIFY on `channel` (a trigger
 * on the table's inserts, delivered on commit) adds one `job` with a fixed id, so a second
 * notification while it waits is the same job and dropped. Returns `listen`, which the job's
 * handlers call: the pool starts listening on its first job rather than when it is defined (loading
 * a pool has no side effects), and a failed LISTEN is tried again by the next job while the job's
 * schedule covers the time between.
 */
export function nudgeOnNotify(
  context: PoolContext,
  log: Logger,
  nudge: { channel: string; job: 'webhooks.dispatch' | 'prices.stream_relay'; jobId: string },
): () => void {
  let listening: Promise<unknown> | null = null;
  const wake = () => {
    enqueue(context.queue, nudge.job, {}, { jobId: nudge.jobId }).catch((error: Error) =>
      log.warn({ err: error.message, job: nudge.job }, 'could not nudge a job after a notification'),
    );
  };
  return () => {
    if (listening !== null) return;
    listening = context.sql.listen(nudge.channel, wake).catch((error: Error) => {
      listening = null;
      log.warn({ err: error.message, channel: nudge.channel }, 'could not listen for notifications');
    });
  };
}
