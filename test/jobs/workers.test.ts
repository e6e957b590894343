import { afterAll, describe, expect, spyOn, test } from 'bun:test';
import { Queue, Worker } from 'bullmq';
import { checkHandlers, enqueue, enqueueMany, JOBS, POOLS, queueName } from '../../shared/jobs/queues.ts';
import { createSql } from '../../shared/platform/db.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis, Redis } from '../../shared/platform/redis.ts';
import { maintenancePool } from '../../workers/maintenance/index.ts';
import { loadPools } from '../../workers/pools.ts';
import { startPools } from '../../workers/runtime.ts';
import { eventually, testConfig } from '../helpers.ts';

const config = testConfig();
const log = createLogger({ level: 'silent', name: 'workers-test' });
const sql = createSql(config.DATABASE_URL, { max: 2, application: 'workers-test' });
afterAll(() => sql.end({ timeout: 5 }));

const noop = async () => undefined;
// The render pool without its sweep schedule: it starts and stops without taking a job (a sweep
// would enqueue other suites' queued renders and launch Chromium for them).
const [renderPool, webhooksPool] = await loadPools(['render', 'webhooks']);
const quietRenderPool = { ...renderPool!, schedules: [] };
// Queues of their own, so jobs other suites of the run left on the shared queues (renders the API
// enqueued) never reach these pools.
const idleConfig = () => ({ ...config, QUEUE_PREFIX: `${config.QUEUE_PREFIX}-idle` });

describe('checkHandlers', () => {
  test('a pool with exactly one handler per job passes', () => {
    expect(() =>
      checkHandlers('maintenance', [
        ['maintenance.cleanup', noop],
        ['maintenance.retention', noop],
        ['trade_intents.expire', noop],
        ['inventory_watch.read', noop],
        ['inventory_watch.tradable', noop],
        ['inventory_watch.protection_ended', noop],
        ['trade_history.read', noop],
      ]),
    ).not.toThrow();
    expect(() =>
      checkHandlers('render', [
        ['renders.render', noop],
        ['renders.sweep', noop],
      ]),
    ).not.toThrow();
  });

  test('a job without a handler fails boot', () => {
    expect(() => checkHandlers('maintenance', [])).toThrow(/maintenance\.cleanup has no handler/);
  });

  test('a job with two handlers fails boot', () => {
    expect(() =>
      checkHandlers('maintenance', [
        ['maintenance.cleanup', noop],
        ['maintenance.cleanup', noop],
      ]),
    ).toThrow(/maintenance\.cleanup has 2 handlers/);
  });

  test("a handler for another pool's job fails boot", () => {
    expect(() => checkHandlers('render', [['maintenance.cleanup', noop]])).toThrow(/belongs to pool maintenance, not render/);
  });

  test('a handler for an unknown job fails boot', () => {
    expect(() =>
      checkHandlers('maintenance', [
        ['maintenance.cleanup', noop],
        ['maintenance.vacuum', noop],
      ]),
    ).toThrow(/unknown job maintenance\.vacuum/);
  });

  test('every defined pool matches the registry', async () => {
    for (const definition of await loadPools(POOLS)) {
      const registrations = definition.handlers({
        config,
        sql,
        redis: undefined as never,
        log,
        now: () => new Date(),
        queue: undefined as never,
        enqueue: undefined as never,
      });
      expect(() => checkHandlers(definition.pool, registrations)).not.toThrow();
    }
  });
});

describe('enqueue', () => {
  // A prefix of its own: no worker of any test run ever takes these jobs.
  const connection = createWorkerRedis(config.REDIS_URL, 'workers-test-enqueue');
  const indexQueue = new Queue(queueName('index'), { connection, prefix: `${config.QUEUE_PREFIX}-enqueue-${crypto.randomUUID()}` });
  afterAll(async () => {
    await indexQueue.obliterate({ force: true });
    await indexQueue.close();
    connection.disconnect();
  });
  const waiting = () => indexQueue.getJobCountByTypes('waiting', 'delayed');

  test('adds the job with its registry options under its id; the same id again is a no-op', async () => {
    const runId = crypto.randomUUID();
    await enqueue(indexQueue, 'prices.snapshot', { after_run: runId }, { jobId: `snapshot-${runId}` });
    await enqueue({ index: indexQueue }, 'prices.snapshot', { after_run: runId }, { jobId: `snapshot-${runId}` });
    const job = await indexQueue.getJob(`snapshot-${runId}`);
    expect(job?.data).toEqual({ after_run: runId });
    expect(job?.opts.attempts).toBe(JOBS['prices.snapshot'].options.attempts);
    expect(await waiting()).toBe(1);
  });

  test('refuses a payload its job schema rejects, adding nothing (one bad job fails the whole batch)', async () => {
    const before = await waiting();
    await expect(enqueue(indexQueue, 'prices.snapshot', { after_run: 'not-a-uuid' }, { jobId: 'snapshot-bad' })).rejects.toThrow();
    const good = { payload: { marketplace: 'skinport' as const, after_run: crypto.randomUUID() }, options: { jobId: `index-${crypto.randomUUID()}` } };
    const bad = { payload: { marketplace: 'nowhere', after_run: crypto.randomUUID() } as never, options: { jobId: `index-${crypto.randomUUID()}` } };
    await expect(enqueueMany(indexQueue, 'market_index.calculate', [good, bad])).rejects.toThrow();
    expect(await waiting()).toBe(before);
  });

  test("refuses another pool's queue and a job id with ':'", async () => {
    await expect(enqueue(indexQueue, 'maintenance.cleanup', {}, { jobId: 'cleanup-once' })).rejects.toThrow(/belongs on queue maintenance, not index/);
    await expect(enqueue({}, 'prices.snapshot', {}, { jobId: 'snapshot-none' })).rejects.toThrow(/belongs on queue index/);
    await expect(enqueue(indexQueue, 'prices.snapshot', {}, { jobId: 'snapshot:1' })).rejects.toThrow(/contains ':'/);
  });
});

type HeartbeatRow = { worker_id: string; pool: string; pid: number; last_seen_at: Date };

async function heartbeats(pool: string): Promise<HeartbeatRow[]> {
  return sql<HeartbeatRow[]>`select worker_id, pool, pid, last_seen_at from worker_heartbeats where pool = ${pool} and pid = ${process.pid}`;
}

/** Heartbeat rows of `pool` from this process that were not there before. */
async function newHeartbeats(pool: string, before: HeartbeatRow[]): Promise<HeartbeatRow[]> {
  const known = new Set(before.map((row) => row.worker_id));
  return (await heartbeats(pool)).filter((row) => !known.has(row.worker_id));
}

/**
 * Removes the cleanup job scheduler, so the pool's boot creates it afresh and its first job runs at
 * once (an existing scheduler would keep its next run up to ten minutes away).
 */
async function resetCleanupSchedule(): Promise<void> {
  const connection = createWorkerRedis(config.REDIS_URL, 'workers-test');
  const queue = new Queue(queueName('maintenance'), { connection, prefix: config.QUEUE_PREFIX });
  try {
    const schedules = typeof maintenancePool.schedules === 'function' ? maintenancePool.schedules(config) : (maintenancePool.schedules ?? []);
    for (const schedule of schedules) await queue.removeJobScheduler(schedule.id);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

describe('startPools', () => {
  test('the maintenance pool heartbeats, runs its scheduled cleanup, and stops within its timeout', async () => {
    const workspaceId = crypto.randomUUID();
    const expiredKey = `expired-${crypto.randomUUID()}`;
    const liveKey = `live-${crypto.randomUUID()}`;
    const past = new Date(Date.now() - 25 * 3_600_000);
    await sql`
      insert into idempotency_records (workspace_id, operation, key_digest, fingerprint, state, response_status, locked_until, created_at, expires_at)
      values (${workspaceId}, 'keys.create', ${expiredKey}, 'f', 'completed', 201, ${past}, ${past}, ${new Date(Date.now() - 3_600_000)}),
             (${workspaceId}, 'keys.create', ${liveKey}, 'f', 'completed', 201, ${past}, ${past}, ${new Date(Date.now() + 3_600_000)})`;
    const before = await heartbeats('maintenance');
    await resetCleanupSchedule();

    const running = await startPools([maintenancePool], config, log);
    let stopped = false;
    try {
      const [beat] = await newHeartbeats('maintenance', before);
      // startPools beats once before it returns.
      expect(beat).toBeDefined();
      expect(Date.now() - beat!.last_seen_at.getTime()).toBeLessThan(60_000);

      await eventually(async () => {
        const rows = await sql`select 1 from idempotency_records where workspace_id = ${workspaceId} and key_digest = ${expiredKey}`;
        return rows.length === 0 ? true : undefined;
      }, 20_000);
      const [live] = await sql`select 1 from idempotency_records where workspace_id = ${workspaceId} and key_digest = ${liveKey}`;
      expect(live).toBeDefined();

      const timeoutMs = 5_000;
      const started = performance.now();
      await running.stop(timeoutMs);
      stopped = true;
      // Bounded: the worker close timeout plus closing queues, Redis and Postgres.
      expect(performance.now() - started).toBeLessThan(timeoutMs + 5_000);
      expect(await newHeartbeats('maintenance', before)).toEqual([]);
    } finally {
      if (!stopped) await running.stop(1_000);
      await sql`delete from idempotency_records where workspace_id = ${workspaceId}`;
    }
  });

  test('an idle pool starts, heartbeats and stops cleanly', async () => {
    const before = await heartbeats('render');
    const running = await startPools([quietRenderPool], idleConfig(), log);
    const beats = await newHeartbeats('render', before);
    expect(beats).toHaveLength(1);
    const started = performance.now();
    await running.stop(2_000);
    expect(performance.now() - started).toBeLessThan(7_000);
    expect(await newHeartbeats('render', before)).toEqual([]);
  });

  test('several pools in one process each get their own heartbeat', async () => {
    const before = [...(await heartbeats('render')), ...(await heartbeats('webhooks'))];
    const running = await startPools([quietRenderPool, webhooksPool!], idleConfig(), log);
    try {
      expect((await newHeartbeats('render', before)).length).toBe(1);
      expect((await newHeartbeats('webhooks', before)).length).toBe(1);
    } finally {
      await running.stop(2_000);
    }
    expect([...(await newHeartbeats('render', before)), ...(await newHeartbeats('webhooks', before))]).toEqual([]);
  });

  test('a pool whose handlers do not match the registry fails to start and releases what it opened', async () => {
    const before = await heartbeats('maintenance');
    const broken = { ...maintenancePool, schedules: [], handlers: () => [] };
    const closedWorkers = spyOn(Worker.prototype, 'close');
    const disconnects = spyOn(Redis.prototype, 'disconnect');
    try {
      // A healthy pool first, so a worker is already running when the broken one is checked.
      await expect(startPools([quietRenderPool, broken], idleConfig(), log)).rejects.toThrow(/maintenance\.cleanup has no handler/);
      expect(closedWorkers).toHaveBeenCalledTimes(1);
      expect(disconnects).toHaveBeenCalled();
    } finally {
      closedWorkers.mockRestore();
      disconnects.mockRestore();
    }
    expect(await newHeartbeats('maintenance', before)).toEqual([]);
  });
});
