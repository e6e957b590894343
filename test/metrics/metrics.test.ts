import { afterAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { freePort } from '../../scripts/services.ts';
import { enqueue, queueName } from '../../shared/jobs/queues.ts';
import { createSql } from '../../shared/platform/db.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { workerMetricsPort } from '../../workers/metrics-server.ts';
import { createTestApp, errorOf, eventually, testConfig } from '../helpers.ts';
import { parseExposition, type Sample, sampleValue } from './prometheus.ts';

/**
 * Issue 13, observability: GET /metrics in Prometheus text on the API and on each worker process,
 * scraped as Prometheus would (HTTP latency by route template, queue depths, ingest lag, job
 * durations by outcome, process metrics), and its METRICS_TOKEN rule.
 */
const root = join(import.meta.dir, '..', '..');
const sql = createSql(process.env.DATABASE_URL!, { max: 2, application: 'metrics-test' });
afterAll(() => sql.end({ timeout: 5 }));

const METRICS_TOKEN = 'metrics-token-for-the-test-0123';

async function scrape(response: Response): Promise<Sample[]> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toStartWith('text/plain; version=0.0.4');
  return parseExposition(await response.text());
}

describe('GET /metrics on the API', () => {
  test('labels HTTP requests by method, route template and status; unknown routes and methods share one label each', async () => {
    const t = createTestApp();
    try {
      const unknownPath = `/no/such/route/${crypto.randomUUID()}`;
      expect((await t.request('/v2/health')).status).toBe(200);
      expect((await t.request('/v2/health')).status).toBe(200);
      expect((await t.request('/v2/prices/not-a-catalog-id')).status).toBe(400);
      expect((await t.request(unknownPath)).status).toBe(404);
      expect((await t.request('/v2/health', { method: 'PROPFIND' })).status).toBe(404);

      // Each request is observed once its response has gone out, so a scrape may come first: poll.
      const { text, samples } = await eventually(async () => {
        const body = await (await t.request('/metrics')).text();
        const scraped = parseExposition(body);
        const unmatched = scraped.filter((s) => s.name === 'cs2_http_request_duration_seconds_count' && s.labels.route === 'unmatched');
        return unmatched.length === 2 ? { text: body, samples: scraped } : undefined;
      });
      const count = (labels: Record<string, string>) => sampleValue(samples, 'cs2_http_request_duration_seconds_count', labels);
      expect(count({ method: 'GET', route: '/v2/health', status: '200' })).toBe(2);
      expect(count({ method: 'GET', route: '/v2/prices/:catalog_id', status: '400' })).toBe(1);
      expect(count({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
      expect(count({ method: 'other', route: 'unmatched', status: '404' })).toBe(1);
      // Raw paths never become labels: their values are the client's to choose.
      expect(text).not.toContain('not-a-catalog-id');
      expect(text).not.toContain(unknownPath);
      // Buckets are cumulative and end at +Inf with the count.
      const buckets = samples.filter((s) => s.name === 'cs2_http_request_duration_seconds_bucket' && s.labels.route === '/v2/health');
      expect(buckets.at(-1)).toMatchObject({ labels: { le: '+Inf' }, value: 2 });
      expect(buckets.map((s) => s.value)).toEqual([...buckets.map((s) => s.value)].sort((a, b) => a - b));
    } finally {
      await t.close();
    }
  });

  test("reports every pool's queue depth and each enabled source's ingest lag, read when scraped", async () => {
    const fresh = `metricsfresh${process.pid}`;
    const never = `metricsnever${process.pid}`;
    const t = createTestApp({ config: { QUEUE_PREFIX: `metricsdepth${process.pid}`, SOURCES: `${fresh},${never}` } });
    try {
      await t.deps.ready();
      await sql`insert into price_sources (name, last_success_at, last_unknown_names, last_rows_skipped) values (${fresh}, now() - interval '120 seconds', 7, 3)
                on conflict (name) do update set last_success_at = excluded.last_success_at, last_unknown_names = 7, last_rows_skipped = 3`;
      await enqueue(t.deps.queues, 'maintenance.cleanup', {}, { jobId: 'metrics-depth-probe', delay: 3_600_000 });

      const samples = await scrape(await t.request('/metrics'));
      for (const pool of ['ingest', 'index', 'render', 'exports', 'webhooks', 'maintenance']) {
        for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(sampleValue(samples, 'cs2_queue_jobs', { pool, state })).toBeNumber();
      }
      expect(sampleValue(samples, 'cs2_queue_jobs', { pool: 'maintenance', state: 'delayed' })).toBe(1);
      expect(sampleValue(samples, 'cs2_queue_jobs', { pool: 'ingest', state: 'waiting' })).toBe(0);
      const lag = sampleValue(samples, 'cs2_ingest_lag_seconds', { source: fresh })!;
      expect(lag).toBeGreaterThanOrEqual(119);
      expect(lag).toBeLessThan(180);
      // Never succeeded: infinitely late, so a lag alert fires for it too.
      expect(sampleValue(samples, 'cs2_ingest_lag_seconds', { source: never })).toBe(Infinity);
      // The last run's names the catalog does not know and rows skipped (docs/design.md §13); none for a source that never ran.
      expect(sampleValue(samples, 'cs2_ingest_unknown_names', { source: fresh })).toBe(7);
      expect(sampleValue(samples, 'cs2_ingest_rows_skipped', { source: fresh })).toBe(3);
      expect(sampleValue(samples, 'cs2_ingest_unknown_names', { source: never })).toBeUndefined();
    } finally {
      await t.deps.queues.maintenance.obliterate({ force: true });
      await sql`delete from price_sources where name = ${fresh}`;
      await t.close();
    }
  });

  test('still answers when Redis and Postgres are unreachable, without the series it could not read', async () => {
    const [redisPort, postgresPort] = [await freePort(), await freePort()];
    const t = createTestApp({
      config: { REDIS_URL: `redis://127.0.0.1:${redisPort}`, DATABASE_URL: `postgres://postgres@127.0.0.1:${postgresPort}/none`, SOURCES: 'skinport' },
    });
    try {
      const samples = await scrape(await t.request('/metrics'));
      expect(samples.some((s) => s.name === 'cs2_queue_jobs')).toBe(false);
      expect(samples.some((s) => s.name === 'cs2_ingest_lag_seconds')).toBe(false);
      expect(samples.some((s) => s.name === 'cs2_ingest_unknown_names')).toBe(false);
    } finally {
      await t.close();
    }
  });

  test('with METRICS_TOKEN set, needs it as a bearer token: 401 with the shared error body otherwise', async () => {
    const t = createTestApp({ config: { METRICS_TOKEN } });
    try {
      for (const authorization of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${METRICS_TOKEN}x`, METRICS_TOKEN, 'Bearer ']) {
        const response = await t.request('/metrics', { headers: authorization === undefined ? {} : { authorization } });
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
        const error = await errorOf(response);
        expect(error.code).toBe('unauthorized');
        expect(error.request_id).toBe(response.headers.get('x-request-id')!);
      }
      await scrape(await t.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }));
    } finally {
      await t.close();
    }
  });

  test('is not part of the client API document', async () => {
    const t = createTestApp();
    try {
      const document = (await (await t.request('/openapi.json')).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(document.paths).filter((path) => path === '/metrics' || path.startsWith('/admin'))).toEqual([]);
    } finally {
      await t.close();
    }
  });
});

describe('worker metrics ports', () => {
  test('default to 9464 + the position of the first pool, a free port under NODE_ENV=test, or WORKER_METRICS_PORT', () => {
    const production = testConfig({ NODE_ENV: 'production', SIGNING_KEY: 'a-production-signing-key' });
    expect(workerMetricsPort(production, ['ingest'])).toBe(9464);
    expect(workerMetricsPort(production, ['maintenance'])).toBe(9469);
    expect(workerMetricsPort(production, ['render', 'exports'])).toBe(9466);
    expect(workerMetricsPort(testConfig({ NODE_ENV: 'test' }), ['ingest'])).toBe(0);
    expect(workerMetricsPort(testConfig({ NODE_ENV: 'production', SIGNING_KEY: 'a-production-signing-key', WORKER_METRICS_PORT: '9600' }), ['ingest'])).toBe(
      9600,
    );
  });
});

type Spawned = { child: ReturnType<typeof Bun.spawn>; lines: Record<string, unknown>[] };

/** A real process of ours with its JSON log lines collected as they come. */
function spawnBun(args: string[], env: Record<string, string>): Spawned {
  const child = Bun.spawn(['bun', ...args], { cwd: root, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'inherit' });
  const spawned: Spawned = { child, lines: [] };
  void (async () => {
    let rest = '';
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
      const [first, ...more] = (rest + decoder.decode(chunk, { stream: true })).split('\n');
      const complete = more.length > 0 ? [first!, ...more.slice(0, -1)] : [];
      rest = more.length > 0 ? more.at(-1)! : first!;
      for (const line of complete) if (line.startsWith('{')) spawned.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  })();
  return spawned;
}

const logged = (spawned: Spawned, msg: RegExp) => spawned.lines.find((line) => typeof line.msg === 'string' && msg.test(line.msg));

async function stop(spawned: Spawned) {
  spawned.child.kill('SIGTERM');
  await Promise.race([spawned.child.exited, Bun.sleep(15_000).then(() => spawned.child.kill('SIGKILL'))]);
}

describe('GET /metrics of real processes', () => {
  const queuePrefix = `metricse2e${process.pid}`;
  const processes: Spawned[] = [];
  afterAll(async () => {
    await Promise.all(processes.map(stop));
    const connection = createWorkerRedis(process.env.REDIS_URL!, 'metrics-test');
    const queue = new Queue(queueName('maintenance'), { connection, prefix: queuePrefix });
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });

  test('a worker process serves its queue depth, job durations by outcome and process metrics on its own port', async () => {
    const worker = spawnBun(['workers/main.ts', 'maintenance'], { WORKER_METRICS_PORT: '0', QUEUE_PREFIX: queuePrefix, LOG_LEVEL: 'info' });
    processes.push(worker);
    const listening = await eventually(async () => logged(worker, /^metrics listening/), 30_000, 50);
    const port = listening.port as number;
    expect(port).toBeGreaterThan(0);
    // Loopback unless WORKER_METRICS_HOST opens it wider.
    expect(listening.hostname).toBe('127.0.0.1');
    const url = `http://127.0.0.1:${port}/metrics`;

    // The pool's schedulers are new under this prefix, so its first cleanup runs at boot.
    const samples = await eventually(
      async () => {
        const scraped = parseExposition(await (await fetch(url)).text());
        const done = sampleValue(scraped, 'cs2_job_duration_seconds_count', { pool: 'maintenance', job_name: 'maintenance.cleanup', outcome: 'completed' });
        return done !== undefined && done >= 1 ? scraped : undefined;
      },
      30_000,
      100,
    );
    expect(
      sampleValue(samples, 'cs2_job_duration_seconds_sum', { pool: 'maintenance', job_name: 'maintenance.cleanup', outcome: 'completed' }),
    ).toBeGreaterThan(0);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(sampleValue(samples, 'cs2_queue_jobs', { pool: 'maintenance', state })).toBeNumber();
    // The schedulers' next runs wait in `delayed`.
    expect(sampleValue(samples, 'cs2_queue_jobs', { pool: 'maintenance', state: 'delayed' })).toBeGreaterThanOrEqual(1);
    // Only this process's pools: depth of other pools comes from their own processes (and the API).
    expect(samples.some((s) => s.name === 'cs2_queue_jobs' && s.labels.pool !== 'maintenance')).toBe(false);
    expect(sampleValue(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'nodejs_eventloop_lag_seconds')).toBeNumber();

    // The job's own log lines name it (the cleanup logs what it removed).
    const cleanupLines = worker.lines.filter((line) => line.job_name === 'maintenance.cleanup');
    expect(cleanupLines.length).toBeGreaterThanOrEqual(1);
    for (const line of cleanupLines) expect(line.job_id).toBeString();

    const notFound = await fetch(`http://127.0.0.1:${port}/elsewhere`);
    expect(notFound.status).toBe(404);
    expect((await errorOf(notFound)).code).toBe('not_found');
  }, 60_000);

  test('a second process of the pool on a taken port serves on a free one, says where, and keeps METRICS_TOKEN', async () => {
    const first = processes[0];
    if (!first) throw new Error('needs the worker of the previous test');
    const taken = logged(first, /^metrics listening/)!.port as number;
    const second = spawnBun(['workers/main.ts', 'maintenance'], {
      WORKER_METRICS_PORT: String(taken),
      QUEUE_PREFIX: queuePrefix,
      LOG_LEVEL: 'info',
      METRICS_TOKEN,
    });
    processes.push(second);
    const listening = await eventually(async () => logged(second, /^metrics listening/), 30_000, 50);
    expect(logged(second, /^metrics port in use/)).toMatchObject({ level: 40, port: taken });
    const port = listening.port as number;
    expect(port).not.toBe(taken);
    expect(second.child.exitCode).toBeNull();

    const anonymous = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect((await errorOf(anonymous)).code).toBe('unauthorized');
    await scrape(await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }));
    // The token never reaches a log line.
    expect(JSON.stringify(second.lines)).not.toContain(METRICS_TOKEN);
  }, 60_000);

  test('the API process serves its HTTP histograms and process metrics', async () => {
    const port = await freePort();
    const api = spawnBun(['api/main.ts'], { PORT: String(port), QUEUE_PREFIX: queuePrefix, LOG_LEVEL: 'info', METRICS_TOKEN });
    processes.push(api);
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => logged(api, /^API listening/), 30_000, 50);
    expect((await fetch(`${base}/v2/health`)).status).toBe(200);
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    // Observed once the response has gone out, so poll rather than expect it on the next request.
    const samples = await eventually(
      async () => {
        const scraped = await scrape(await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }));
        return sampleValue(scraped, 'cs2_http_request_duration_seconds_count', { method: 'GET', route: '/v2/health', status: '200' }) === 1
          ? scraped
          : undefined;
      },
      10_000,
      50,
    );
    expect(sampleValue(samples, 'cs2_http_request_duration_seconds_count', { method: 'GET', route: '/metrics', status: '401' })).toBe(1);
    expect(sampleValue(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'cs2_queue_jobs', { pool: 'maintenance', state: 'delayed' })).toBeNumber();
  }, 60_000);
});
