import type { Queue } from 'bullmq';
import { Gauge, type Registry } from 'prom-client';
import type { Pool } from '../jobs/queues.ts';
import type { Logger } from '../platform/logger.ts';
import { bounded } from './bounded.ts';

/** The states GET /v2/status reports too. */
const STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/**
 * `cs2_queue_jobs{pool,state}`: each given pool's BullMQ job counts, read from Redis when scraped
 * (never cached, so a scrape sees the backlog as it is). A queue that cannot be read in time (Redis
 * down) reports no series for that scrape rather than a stale count, and one warning line is logged.
 */
export function registerQueueDepth(registry: Registry, queues: readonly { pool: Pool; queue: Queue }[], log: Logger): void {
  new Gauge({
    name: 'cs2_queue_jobs',
    help: 'Jobs in each pool queue by state (waiting, active, delayed, failed), read from Redis at scrape time',
    labelNames: ['pool', 'state'] as const,
    registers: [registry],
    async collect() {
      const results = await Promise.allSettled(queues.map(({ queue }) => bounded(queue.getJobCounts(...STATES))));
      this.reset();
      const unreadable: string[] = [];
      results.forEach((result, index) => {
        const pool = queues[index]!.pool;
        if (result.status === 'rejected') {
          unreadable.push(pool);
          return;
        }
        for (const state of STATES) this.set({ pool, state }, result.value[state] ?? 0);
      });
      if (unreadable.length > 0) log.warn({ pools: unreadable }, 'metrics: queue depth unavailable (Redis unreachable?)');
    },
  });
}
