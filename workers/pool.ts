import type { Queue } from 'bullmq';
import type { Config } from '../shared/config.ts';
import type { Sql } from '../shared/db.ts';
import type { Logger } from '../shared/logger.ts';
import type { JobHandlers, JobName, Pool } from '../shared/queues.ts';

/** What a pool's module receives: shared resources, never a request context. */
export type PoolContext = {
  config: Config;
  sql: Sql;
  log: Logger;
  now: () => Date;
  queue: Queue;
};

/** A pool: its handlers (one per job of its queue) and optional schedules set up at boot. */
export type PoolDefinition = {
  pool: Pool;
  handlers: (context: PoolContext) => readonly (readonly [JobName, JobHandlers[JobName]])[];
  schedules?: readonly { id: string; job: JobName; everyMs: number }[];
  concurrency?: number;
};

/** Typed registration of one handler (keeps the payload type tied to the job name). */
export function handle<Name extends JobName>(name: Name, handler: JobHandlers[Name]): readonly [JobName, JobHandlers[JobName]] {
  return [name, handler as JobHandlers[JobName]];
}
