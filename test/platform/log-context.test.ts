import { afterAll, describe, expect, test } from 'bun:test';
import { Queue } from 'bullmq';
import { createApp } from '../../api/app.ts';
import { createDeps } from '../../api/deps.ts';
import { enqueue, queueName } from '../../shared/jobs/queues.ts';
import { createSql } from '../../shared/platform/db.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { handle, type PoolDefinition } from '../../workers/pool.ts';
import { startPools } from '../../workers/runtime.ts';
import { eventually, testConfig } from '../helpers.ts';
import { parseExposition, sampleValue } from '../metrics/prometheus.ts';

/**
 * Issue 13: logs stay pino JSON with the request id on every line written while a request is
 * handled, and the job id and name on every line written while a job runs, whichever logger
 * writes them (shared code holds the process logger, not a per-request one).
 */
type Line = Record<string, unknown> & { msg?: string };

function capturingLogger(name: string) {
  const lines: Line[] = [];
  const log = createLogger({ level: 'debug', name }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  return { log, lines };
}

const sql = createSql(process.env.DATABASE_URL!, { max: 2, application: 'log-context-test' });
afterAll(() => sql.end({ timeout: 5 }));

describe('API log lines', () => {
  test('every line written during a request carries its request id, across concurrent requests that interleave', async () => {
    const { log, lines } = capturingLogger('log-context-api');
    const deps = createDeps(testConfig(), { log });
    // A route that logs through the process logger before and after awaiting Postgres, as shared code does.
    const app = createApp(deps, (base) =>
      base.get('/test/log-context', async ({ request }) => {
        const sent = request.headers.get('x-request-id');
        deps.log.info({ sent }, 'probe before');
        await deps.sql`select pg_sleep(${Math.random() / 50})`;
        deps.log.info({ sent }, 'probe after');
        return { ok: true };
      }),
    );
    const server = app.listen({ port: 0, hostname: '127.0.0.1' }).server!;
    try {
      const ids = Array.from({ length: 20 }, (_, index) => `log-context-${index}-${crypto.randomUUID()}`);
      const responses = await Promise.all(ids.map((id) => fetch(`http://127.0.0.1:${server.port}/test/log-context`, { headers: { 'x-request-id': id } })));
      expect(responses.map((response) => response.status)).toEqual(ids.map(() => 200));
      // Written outside any request: no request id.
      log.info('outside');

      const probes = lines.filter((line) => line.msg?.startsWith('probe'));
      expect(probes).toHaveLength(40);
      for (const probe of probes) expect(probe.request_id).toBe(probe.sent as string);
      expect(lines.find((line) => line.msg === 'outside')!.request_id).toBeUndefined();
      // The access log (debug) too.
      await eventually(async () => (lines.filter((line) => line.msg === 'request').length === 20 ? true : undefined));
      for (const line of lines.filter((entry) => entry.msg === 'request')) expect(ids).toContain(line.request_id as string);
    } finally {
      await app.stop();
      await deps.close();
    }
  });
});

describe('worker log lines and job metrics', () => {
  const config = { ...testConfig(), QUEUE_PREFIX: `logcontext${process.pid}` };
  afterAll(async () => {
    const connection = createWorkerRedis(config.REDIS_URL, 'log-context-test');
    const queue = new Queue(queueName('maintenance'), { connection, prefix: config.QUEUE_PREFIX });
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });

  test("every line a job writes carries the job's id and name; each job is timed by outcome", async () => {
    const { log, lines } = capturingLogger('log-context-workers');
    // The maintenance pool's jobs, with handlers that log through the pool's logger after an await.
    const probePool: PoolDefinition = {
      pool: 'maintenance',
      handlers: ({ sql: poolSql, log: poolLog }) => [
        handle('maintenance.cleanup', async () => {
          await poolSql`select 1`;
          poolLog.info('cleanup probe');
          return {};
        }),
        handle('trade_intents.expire', async () => {
          poolLog.info('expire probe');
          throw new Error('probe failure');
        }),
        handle('maintenance.retention', async () => ({})),
        handle('inventory_watch.read', async () => ({})),
        handle('inventory_watch.tradable', async () => ({})),
        handle('inventory_watch.protection_ended', async () => ({})),
        handle('trade_history.read', async () => ({})),
      ],
    };
    const running = await startPools([probePool], config, log);
    const connection = createWorkerRedis(config.REDIS_URL, 'log-context-test-producer');
    const queue = new Queue(queueName('maintenance'), { connection, prefix: config.QUEUE_PREFIX });
    try {
      await enqueue(queue, 'maintenance.cleanup', {}, { jobId: 'log-context-cleanup' });
      await enqueue(queue, 'trade_intents.expire', {}, { jobId: 'log-context-expire' });
      await eventually(
        async () => (lines.some((line) => line.msg === 'cleanup probe') && lines.some((line) => line.msg === 'job failed') ? true : undefined),
        20_000,
      );

      expect(lines.find((line) => line.msg === 'cleanup probe')).toMatchObject({
        job_id: 'log-context-cleanup',
        job_name: 'maintenance.cleanup',
        pool: 'maintenance',
      });
      expect(lines.find((line) => line.msg === 'expire probe')).toMatchObject({ job_id: 'log-context-expire', job_name: 'trade_intents.expire' });
      expect(lines.find((line) => line.msg === 'job failed')).toMatchObject({
        job_id: 'log-context-expire',
        job_name: 'trade_intents.expire',
        err: 'probe failure',
      });
      // Lines of the process itself belong to no job.
      expect(lines.find((line) => line.msg === 'pool started')!.job_id).toBeUndefined();

      const samples = parseExposition(await running.metrics.metrics());
      expect(sampleValue(samples, 'cs2_job_duration_seconds_count', { pool: 'maintenance', job_name: 'maintenance.cleanup', outcome: 'completed' })).toBe(1);
      expect(sampleValue(samples, 'cs2_job_duration_seconds_count', { pool: 'maintenance', job_name: 'trade_intents.expire', outcome: 'failed' })).toBe(1);
    } finally {
      await queue.close();
      connection.disconnect();
      await running.stop(5_000);
    }
  }, 30_000);
});
