import type { Queue } from 'bullmq';
import type { Metric } from 'prom-client';
import type { Enqueue, JobHandlers, JobName, JobSchedule, Pool, StartupJob } from '../shared/jobs/queues.ts';
import type { Config } from '../shared/platform/config.ts';
import type { WorkerResources } from '../shared/platform/resources.ts';

/** What a pool's module receives: the process's resources and its queues, never a request context. */
export type PoolContext = WorkerResources & {
  /** This pool's own queue. */
  queue: Queue;
  /** Enqueues a job of any pool (shared/jobs/queues.ts `enqueue` over this process's queues). */
  enqueue: Enqueue;
};

export type Schedule = JobSchedule;

/** A pool: its handlers (one per job of its queue) and optional schedules set up at boot. */
export type PoolDefinition = {
  pool: Pool;
  handlers: (context: PoolContext) => readonly (readonly [JobName, JobHandlers[JobName]])[];
  /** Job schedulers, upserted at boot; ids start with `<pool>-` (others of the pool are removed). */
  schedules?: readonly Schedule[] | ((config: Config) => readonly Schedule[]);
  /** Jobs enqueued once each time the pool starts (shared/jobs/queues.ts StartupJob). */
  startupJobs?: readonly StartupJob[];
  /** Jobs in flight per process (default 1), or how many for a configuration. */
  concurrency?: number | ((config: Config) => number);
  /**
   * Metrics of the pool's own work (webhook delivery outcomes, render durations), defined by the
   * pool with `registers: []`; the runtime adds them to the process's GET /metrics.
   */
  metrics?: readonly Metric[];
};

/** Typed registration of one handler (keeps the payload type tied to the job name). */
export function handle<Name extends JobName>(name: Name, handler: JobHandlers[Name]): readonly [JobName, JobHandlers[JobName]] {
  return [name, handler as JobHandlers[JobName]];
}
