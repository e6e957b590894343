import type { Queue } from 'bullmq';
import type { Config } from '../shared/config.ts';
import type { Sql } from '../shared/db.ts';
import type { Logger } from '../shared/logger.ts';
import type { Redis } from '../shared/redis.ts';
import type { JobHandlers, JobName, JobPayload, Pool } from '../shared/queues.ts';

/** What a pool's module receives: shared resources, never a request context. */
export type PoolContext = {
  config: Config;
  sql: Sql;
  /** For plain commands (budgets, caches); fails fast when Redis is down. */
  redis: Redis;
  log: Logger;
  now: () => Date;
  queue: Queue;
  /** Enqueues a job of any pool (payload validated; `jobId` makes it idempotent). */
  enqueue: <Name extends JobName>(name: Name, payload: JobPayload<Name>, options?: { jobId?: string }) => Promise<void>;
};

export type Schedule = { id: string; job: JobName; everyMs: number; data?: Record<string, unknown> };

/** A pool: its handlers (one per job of its queue) and optional schedules set up at boot. */
export type PoolDefinition = {
  pool: Pool;
  handlers: (context: PoolContext) => readonly (readonly [JobName, JobHandlers[JobName]])[];
  /** Job schedulers, upserted at boot; ids start with `<pool>-` (others of the pool are removed). */
  schedules?: readonly Schedule[] | ((config: Config) => readonly Schedule[]);
  concurrency?: number;
};

/** Typed registration of one handler (keeps the payload type tied to the job name). */
export function handle<Name extends JobName>(name: Name, handler: JobHandlers[Name]): readonly [JobName, JobHandlers[JobName]] {
  return [name, handler as JobHandlers[JobName]];
}
