import { hostname } from 'node:os';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { ZodError } from 'zod';
import type { Config } from '../shared/config.ts';
import { createSql } from '../shared/db.ts';
import { deleteHeartbeat, HEARTBEAT_INTERVAL_MS, upsertHeartbeat } from '../shared/health/heartbeats.ts';
import { newId } from '../shared/ids.ts';
import type { Logger } from '../shared/logger.ts';
import { checkHandlers, enqueue as enqueueOn, JOBS, parseJobPayload, queueName, upsertSchedule, type Enqueue, type JobName, type Pool } from '../shared/queues.ts';
import { createRequestRedis, createWorkerRedis } from '../shared/redis.ts';
import type { PoolDefinition } from './pool.ts';

export type RunningPools = { stop: (timeoutMs?: number) => Promise<void> };

/**
 * Starts the given pools in this process: checks each pool's handlers against the job registry
 * (boot fails on a missing or duplicate handler), upserts schedules, heartbeats to Postgres, and
 * stops in order: workers (bounded), queues, Redis, then Postgres.
 */
export async function startPools(definitions: PoolDefinition[], config: Config, log: Logger): Promise<RunningPools> {
  const sql = createSql(config.DATABASE_URL, { max: 5, application: `workers:${definitions.map((d) => d.pool).join(',')}` });
  const connection = createWorkerRedis(config.REDIS_URL, 'workers');
  connection.on('error', (error) => log.warn({ err: error.message }, 'redis connection error'));
  // Plain commands from job code (budgets, caches) fail fast instead of waiting on a dead Redis.
  const redis = createRequestRedis(config.REDIS_URL, 'workers-commands');
  redis.on('error', (error) => log.warn({ err: error.message }, 'redis command connection error'));
  const now = () => new Date();
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

      const schedules = typeof definition.schedules === 'function' ? definition.schedules(config) : (definition.schedules ?? []);
      for (const schedule of schedules) {
        await upsertSchedule(queue, schedule);
      }
      // Schedulers this pool no longer wants (e.g. a source removed from SOURCES) are dropped.
      const wanted = new Set(schedules.map((schedule) => schedule.id));
      for (const existing of await queue.getJobSchedulers()) {
        if (existing.key && !wanted.has(existing.key) && existing.key.startsWith(`${pool}-`)) await queue.removeJobScheduler(existing.key);
      }

      const worker = new Worker(
        queueName(pool),
        async (job) => {
          const handler = handlers.get(job.name as JobName);
          if (!handler) throw new UnrecoverableError(`no handler for job ${job.name} in pool ${pool}`);
          let payload;
          try {
            payload = parseJobPayload(job.name as JobName, job.data);
          } catch (error) {
            if (error instanceof ZodError) throw new UnrecoverableError(`invalid payload for ${job.name}: ${error.message}`);
            throw error;
          }
          const scheduledAt = new Date(job.timestamp + (job.opts.delay ?? 0));
          return handler(payload as never, { jobId: job.id, attempt: job.attemptsMade + 1, scheduledAt });
        },
        { connection, prefix: config.QUEUE_PREFIX, concurrency: definition.concurrency ?? 1, autorun: true },
      );
      worker.on('error', (error) => poolLog.error({ err: error.message }, 'worker error'));
      worker.on('failed', (job, error) => poolLog.warn({ job: job?.name, id: job?.id, err: error.message }, 'job failed'));
      workers.push(worker);
      heartbeats.push({ workerId: `${hostname()}:${process.pid}:${pool}:${newId()}`, pool, hostname: hostname(), pid: process.pid, startedAt: now() });
      poolLog.info({ jobs: registrations.map(([name]) => name) }, 'pool started');
    }
  } catch (error) {
    // Boot failed (e.g. a registry mismatch): release what was opened so nothing keeps running.
    await Promise.allSettled(workers.map((worker) => worker.close(true)));
    await Promise.allSettled([...queues, ...producers.values()].map((queue) => queue.close()));
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
    async stop(timeoutMs = 10_000) {
      clearInterval(timer);
      const closing = Promise.allSettled(workers.map((worker) => worker.close()));
      const timedOut = await Promise.race([closing.then(() => false), Bun.sleep(timeoutMs).then(() => true)]);
      if (timedOut) {
        log.warn({ timeoutMs }, 'workers did not finish in time; forcing close');
        await Promise.allSettled(workers.map((worker) => worker.close(true)));
      }
      await Promise.allSettled([...queues, ...producers.values()].map((queue) => queue.close()));
      for (const heartbeat of heartbeats) await deleteHeartbeat(sql, heartbeat.workerId).catch(() => undefined);
      connection.disconnect();
      redis.disconnect();
      await sql.end({ timeout: 5 });
    },
  };
}
