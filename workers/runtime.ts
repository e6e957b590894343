import { hostname } from 'node:os';
import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import { ZodError } from 'zod';
import { deleteHeartbeat, HEARTBEAT_INTERVAL_MS, upsertHeartbeat } from '../shared/health/heartbeats.ts';
import {
  checkHandlers,
  type Enqueue,
  enqueue as enqueueOn,
  enqueueStartupJob,
  JOBS,
  type JobName,
  type JobPayload,
  type JobSchedule,
  type Pool,
  parseJobPayload,
  queueName,
  upsertSchedule,
} from '../shared/jobs/queues.ts';
import { type JobMetrics, type JobOutcome, jobMetrics } from '../shared/metrics/jobs.ts';
import { registerQueueDepth } from '../shared/metrics/queues.ts';
import { Registry } from '../shared/metrics/registry.ts';
import type { Config } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { runWithLogContext } from '../shared/platform/log-context.ts';
import type { Logger } from '../shared/platform/logger.ts';
import { MemoryReleaser } from '../shared/platform/memory.ts';
import { createRequestRedis, createWorkerRedis } from '../shared/platform/redis.ts';
import { newId } from '../shared/util/ids.ts';
import type { PoolDefinition } from './pool.ts';

/**
 * A job processor run with the job's id and name on every log line written meanwhile, by any
 * logger (shared/platform/log-context.ts), and timed into `cs2_job_duration_seconds` by outcome.
 */
function observed(pool: Pool, jobs: JobMetrics, memory: MemoryReleaser, processJob: (job: Job) => Promise<unknown>) {
  return (job: Job) =>
    runWithLogContext({ job_id: job.id ?? 'unknown', job_name: job.name }, async () => {
      const started = performance.now();
      let outcome: JobOutcome = 'failed';
      try {
        const result = await processJob(job);
        outcome = 'completed';
        return result;
      } finally {
        jobs.observe(pool, job.name, outcome, (performance.now() - started) / 1000);
        // After the job's time is taken: a collection is the process's cost, not the job's.
        memory.afterWork();
      }
    });
}

export type RunningPools = {
  /** This process's metrics: job durations and outcomes, its pools' queue depths, the pools' own metrics. */
  metrics: Registry;
  stop: (timeoutMs?: number) => Promise<void>;
};

/**
 * Starts the given pools in this process: checks each pool's handlers against the job registry
 * (boot fails on a missing or duplicate handler), upserts schedules, heartbeats to Postgres, and
 * stops in order: workers (bounded), queues, Redis, then Postgres. Each job runs with its id and
 * name on every log line (shared/platform/log-context.ts) and is timed into the returned metrics; serving
 * them is the entry point's business (workers/main.ts), so tests can start pools without a port.
 */
export async function startPools(definitions: PoolDefinition[], config: Config, log: Logger): Promise<RunningPools> {
  const sql = createSql(config.DATABASE_URL, { max: 5, application: `workers:${definitions.map((d) => d.pool).join(',')}` });
  const connection = createWorkerRedis(config.REDIS_URL, 'workers');
  connection.on('error', (error) => log.warn({ err: error.message }, 'redis connection error'));
  // Plain commands from job code (budgets, caches) fail fast instead of waiting on a dead Redis.
  const redis = createRequestRedis(config.REDIS_URL, 'workers-commands');
  redis.on('error', (error) => log.warn({ err: error.message }, 'redis command connection error'));
  const now = () => new Date();
  // One per process: heavy jobs of any pool (snapshots, ingest runs, exports) leave garbage behind.
  const memory = new MemoryReleaser();
  const workers: Worker[] = [];
  const queues: Queue[] = [];
  const heartbeats: { workerId: string; pool: Pool; hostname: string; pid: number; startedAt: Date }[] = [];
  // Producers for other pools' jobs, opened on first use.
  const producers = new Map<Pool, Queue>();
  const producer = (pool: Pool) => {
    let queue = producers.get(pool);
    if (!queue) {
      queue = new Queue(queueName(pool), { connection, prefix: config.QUEUE_PREFIX });
      queue.on('error', (error) => log.warn({ err: error.message, queue: pool }, 'queue error'));
      producers.set(pool, queue);
    }
    return queue;
  };
  const enqueue: Enqueue = (name, payload, options) => enqueueOn(producer(JOBS[name].queue), name, payload, options);
  // Redis holds queues only (docs/design.md §1): a Redis restarted without its data has lost the job
  // schedulers, and with them the sweepers that re-enqueue work from Postgres. They are upserted
  // again on every reconnect (a no-op when they survived), so scheduled work resumes by itself.
  const scheduled: { pool: Pool; queue: Queue; schedules: readonly JobSchedule[]; log: Logger }[] = [];
  let connectedOnce = false;
  connection.on('ready', () => {
    if (!connectedOnce) {
      connectedOnce = true;
      return;
    }
    for (const { pool, queue, schedules, log: poolLog } of scheduled) {
      Promise.all(schedules.map((schedule) => upsertSchedule(queue, schedule)))
        .then(() => poolLog.info({ pool, schedules: schedules.map((schedule) => schedule.id) }, 'redis reconnected: job schedulers restored'))
        .catch((error: Error) =>
          poolLog.warn({ err: error.message }, 'redis reconnected but the job schedulers could not be restored; the next reconnect tries again'),
        );
    }
  });
  const metrics = new Registry();
  const jobs = jobMetrics(metrics);
  // Depth is read on the fail-fast connection: a scrape while Redis is down must not hang.
  const depthReaders = definitions.map(({ pool }) => ({ pool, queue: new Queue(queueName(pool), { connection: redis, prefix: config.QUEUE_PREFIX }) }));
  for (const { queue } of depthReaders) queue.on('error', (error) => log.warn({ err: error.message }, 'queue error'));
  registerQueueDepth(metrics, depthReaders, log);

  try {
    for (const definition of definitions) {
      const pool = definition.pool;
      const poolLog = log.child({ pool });
      const queue = new Queue(queueName(pool), { connection, prefix: config.QUEUE_PREFIX });
      queue.on('error', (error) => poolLog.warn({ err: error.message }, 'queue error'));
      queues.push(queue);
      const registrations = definition.handlers({ config, sql, redis, log: poolLog, now, queue, enqueue });
      checkHandlers(pool, registrations);
      const handlers = new Map(registrations);
      for (const metric of definition.metrics ?? []) metrics.registerMetric(metric);

      const schedules = typeof definition.schedules === 'function' ? definition.schedules(config) : (definition.schedules ?? []);
      for (const schedule of schedules) {
        await upsertSchedule(queue, schedule);
      }
      if (schedules.length > 0) scheduled.push({ pool, queue, schedules, log: poolLog });
      // Schedulers this pool no longer wants (e.g. a source removed from SOURCES) are dropped.
      const wanted = new Set(schedules.map((schedule) => schedule.id));
      for (const existing of await queue.getJobSchedulers()) {
        if (existing.key && !wanted.has(existing.key) && existing.key.startsWith(`${pool}-`)) await queue.removeJobScheduler(existing.key);
      }
      for (const startup of definition.startupJobs ?? []) await enqueueStartupJob(queue, startup, now());

      const worker = new Worker(
        queueName(pool),
        observed(pool, jobs, memory, async (job) => {
          const handler = handlers.get(job.name as JobName);
          if (!handler) throw new UnrecoverableError(`no handler for job ${job.name} in pool ${pool}`);
          let payload: JobPayload<JobName>;
          try {
            payload = parseJobPayload(job.name as JobName, job.data);
          } catch (error) {
            if (error instanceof ZodError) throw new UnrecoverableError(`invalid payload for ${job.name}: ${error.message}`);
            throw error;
          }
          const scheduledAt = new Date(job.timestamp + (job.opts.delay ?? 0));
          return handler(payload as never, { jobId: job.id, attempt: job.attemptsMade + 1, scheduledAt });
        }),
        {
          connection,
          prefix: config.QUEUE_PREFIX,
          concurrency: typeof definition.concurrency === 'function' ? definition.concurrency(config) : (definition.concurrency ?? 1),
          autorun: true,
        },
      );
      worker.on('error', (error) => poolLog.error({ err: error.message }, 'worker error'));
      worker.on('failed', (job, error) => poolLog.warn({ job_id: job?.id, job_name: job?.name, err: error.message }, 'job failed'));
      workers.push(worker);
      heartbeats.push({ workerId: `${hostname()}:${process.pid}:${pool}:${newId()}`, pool, hostname: hostname(), pid: process.pid, startedAt: now() });
      poolLog.info({ jobs: registrations.map(([name]) => name) }, 'pool started');
    }
  } catch (error) {
    // Boot failed (e.g. a registry mismatch): release what was opened so nothing keeps running.
    await Promise.allSettled(workers.map((worker) => worker.close(true)));
    await Promise.allSettled([...queues, ...producers.values(), ...depthReaders.map(({ queue }) => queue)].map((queue) => queue.close()));
    connection.disconnect();
    redis.disconnect();
    await sql.end({ timeout: 5 });
    throw error;
  }

  const beat = async () => {
    for (const heartbeat of heartbeats) {
      await upsertHeartbeat(sql, heartbeat, now()).catch((error: Error) => log.warn({ err: error.message }, 'heartbeat failed'));
    }
  };
  await beat();
  const timer = setInterval(() => void beat(), HEARTBEAT_INTERVAL_MS);

  return {
    metrics,
    async stop(timeoutMs = 10_000) {
      clearInterval(timer);
      const closing = Promise.allSettled(workers.map((worker) => worker.close()));
      const timedOut = await Promise.race([closing.then(() => false), Bun.sleep(timeoutMs).then(() => true)]);
      if (timedOut) {
        log.warn({ timeoutMs }, 'workers did not finish in time; forcing close');
        await Promise.allSettled(workers.map((worker) => worker.close(true)));
      }
      await Promise.allSettled([...queues, ...producers.values(), ...depthReaders.map(({ queue }) => queue)].map((queue) => queue.close()));
      for (const heartbeat of heartbeats) await deleteHeartbeat(sql, heartbeat.workerId).catch(() => undefined);
      connection.disconnect();
      redis.disconnect();
      await sql.end({ timeout: 5 });
    },
  };
}
