import { Histogram, type Registry } from 'prom-client';
import { JOBS, type Pool } from '../jobs/queues.ts';

export type JobOutcome = 'completed' | 'failed';

export type JobMetrics = { observe: (pool: Pool, jobName: string, outcome: JobOutcome, seconds: number) => void };

/**
 * `cs2_job_duration_seconds{pool,job_name,outcome}`: how long each job's handler ran, by outcome
 * (its `_count` is the outcome counter). `job_name`, not `job`: Prometheus sets `job` on every
 * scraped series itself. Names outside the job registry (a job added by hand) count as `unknown`.
 */
export function jobMetrics(registry: Registry): JobMetrics {
  const histogram = new Histogram({
    name: 'cs2_job_duration_seconds',
    help: 'Time each job handler ran, by pool, job name and outcome (completed or failed); _count counts jobs by outcome',
    labelNames: ['pool', 'job_name', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  return {
    observe(pool, jobName, outcome, seconds) {
      histogram.observe({ pool, job_name: Object.hasOwn(JOBS, jobName) ? jobName : 'unknown', outcome }, seconds);
    },
  };
}
