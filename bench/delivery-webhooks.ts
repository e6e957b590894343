/**
 * Webhook delivery benchmark: `bun scripts/dev.ts exec bun bench/delivery-webhooks.ts`.
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards), with real webhooks worker
 * processes (`bun workers/main.ts webhooks`, BENCH_WEBHOOK_WORKERS of them, default 2, their own
 * QUEUE_PREFIX) delivering to a receiver in this process on loopback (WEBHOOK_ALLOW_PRIVATE_TARGETS):
 *
 *  (a) throughput, a full fan-out: 20 endpoints (a workspace's cap) subscribed to price.updated;
 *      2 000 price.updated events are committed to the outbox in one statement (40 000
 *      deliveries). Measured: commit → the last delivery received, deliveries/s, the CPU of the
 *      workers, Postgres and Redis meanwhile, and each worker's RSS sampled every 200 ms (its
 *      median is the steady figure, issue 13: < 150 MB).
 *  (b) latency: 2 other endpoints; 20 ingest runs written through shared/prices/ingest.ts
 *      `writeIngestRun`, one every 1.5 s, each changing 250 prices (a realistic run of the skinport
 *      snapshot between two polls), so 500 deliveries per run. Measured per delivery: the run's
 *      commit → its first receipt; p50/p90/p99/max.
 *
 * Every received body is checked for a valid Standard Webhooks signature (standardwebhooks library)
 * on a sample, and every delivery must end `succeeded` with no duplicate.
 *
 * Targets: ≥ 2 000 deliveries/s; price.updated p99 commit → receipt < 2 s.
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_WEBHOOK_WORKERS.
 */
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { claimIngestRun, writeIngestRun } from '../shared/prices/ingest.ts';
import { newId } from '../shared/util/ids.ts';
import { SecretKeyring } from '../shared/webhooks/secrets.ts';
import { createWebhookEndpoint, removeWebhookEndpoint } from '../shared/webhooks/service.ts';
import {
  cpuMsOf,
  cpuMsOfCommand,
  exitedEarly,
  onCleanup,
  positiveInt,
  printChecks,
  removeQueueKeysAtCleanup,
  repoRoot,
  reportQuietness,
  rssOf,
  runBench,
  type Spawned,
  say,
  scratchDatabase,
  sleep,
  spawnBun,
  table,
} from './lib.ts';

// Issue 21: ≥ 2 000 deliveries/s with 2 workers (was 500; 1 580 measured before batch claiming and recording).
const TARGETS = { deliveriesPerSecond: 2_000, latencyP99Ms: 2_000, steadyRssMb: 150 };
const WORKERS = positiveInt('BENCH_WEBHOOK_WORKERS', 2);
const THROUGHPUT = { endpoints: 20, events: 2_000 };
const RSS_SAMPLE_MS = 200;
const LATENCY = { endpoints: 2, runs: 20, changedPerRun: 250, everyMs: 1_500 };
const BOOT_TIMEOUT_MS = 30_000;
const PHASE_TIMEOUT_MS = 180_000;
const SIGNATURE_SAMPLE = 50;

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

type Receipt = { path: string; eventId: string; at: number };

/** The receiver: records the first receipt of each (endpoint, webhook-id), counts duplicates, verifies a sample of signatures. */
function startReceiver(secretOf: (path: string) => string | undefined) {
  const firsts = new Map<string, Receipt>();
  let total = 0;
  let badSignatures = 0;
  let verified = 0;
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const at = Date.now();
      const path = new URL(request.url).pathname;
      const eventId = request.headers.get('webhook-id') ?? '';
      const body = await request.text();
      total += 1;
      if (total % SIGNATURE_SAMPLE === 1) {
        try {
          new Webhook(secretOf(path) ?? '').verify(body, Object.fromEntries(request.headers.entries()));
          verified += 1;
        } catch {
          badSignatures += 1;
        }
      }
      const key = `${path} ${eventId}`;
      if (!firsts.has(key)) firsts.set(key, { path, eventId, at });
      return new Response(null, { status: 204 });
    },
  });
  onCleanup(() => server.stop(true));
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    firsts: () => [...firsts.values()],
    unique: () => firsts.size,
    stats: () => ({ total, duplicates: total - firsts.size, verified, badSignatures }),
  };
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, workers: Spawned[], timeoutMs = PHASE_TIMEOUT_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    const dead = workers.find(exitedEarly);
    if (dead) throw new Error(`a webhooks worker exited during ${what}:\n${dead.output.last.join('\n')}`);
    if (performance.now() > deadline) throw new Error(`${what} did not finish within ${timeoutMs / 1000} s`);
    await sleep(20);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function cpuOf(pids: number[]): Promise<number> {
  let total = 0;
  for (const pid of pids) total += await cpuMsOf(pid);
  return total;
}

async function cpuSnapshot(workers: Spawned[]) {
  return {
    workers: await cpuOf(workers.map((worker) => worker.proc.pid)),
    postgres: await cpuMsOfCommand('postgres'),
    redis: await cpuMsOfCommand('redis-server'),
    bench: process.cpuUsage(),
  };
}

type CpuSnapshot = Awaited<ReturnType<typeof cpuSnapshot>>;
const cores = (before: CpuSnapshot, after: CpuSnapshot, wallMs: number) => ({
  workers: (after.workers - before.workers) / wallMs,
  postgres: (after.postgres - before.postgres) / wallMs,
  redis: (after.redis - before.redis) / wallMs,
  bench: (after.bench.user + after.bench.system - before.bench.user - before.bench.system) / 1000 / wallMs,
});

/** Items the latency runs reprice: plain rows are enough for the outbox join (name, catalog id). */
async function insertBenchItems(sql: Sql, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `itm_bench_webhooks_${index}`);
  await sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select id, 'Bench Webhooks Item ' || ordinality, 'sticker' from unnest(${ids}::text[]) with ordinality as id`;
  return ids;
}

export async function benchWebhooks(): Promise<[string, boolean, string][]> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const db = await scratchDatabase('webhooks');
  const sql = createSql(db.url, { max: 4, application: 'bench-webhooks' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const workspaceId = newId();
  await sql`insert into workspaces (id, name, tier) values (${workspaceId}, 'bench webhooks', 'enterprise')`;

  // 1. Endpoints on the receiver, secrets sealed under a bench key, created as the API does.
  const secretKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64');
  const keyring = SecretKeyring.fromConfig({ WEBHOOK_SECRET_KEY: secretKey, WEBHOOK_SECRET_KEYS_PREVIOUS: [] });
  const secrets = new Map<string, string>();
  const receiver = startReceiver((path) => secrets.get(path));
  const meta = () => ({ workspaceId, actor: { type: 'admin' as const, id: 'bench' }, requestId: 'bench', now: new Date() });
  const createEndpoints = async (tag: string, count: number) => {
    const created: { id: string; path: string }[] = [];
    for (let index = 0; index < count; index += 1) {
      const path = `/${tag}/${index}`;
      const endpoint = await createWebhookEndpoint(sql, keyring, { allowPrivate: true }, { url: receiver.url(path), eventTypes: ['price.updated'] }, meta());
      secrets.set(path, endpoint.secret);
      created.push({ id: endpoint.id, path });
    }
    return created;
  };

  // 2. Real webhooks workers, booted before any clock starts.
  const queuePrefix = `bench${process.pid}w`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  await reportQuietness();
  const problems: string[] = [];
  const workers = Array.from({ length: WORKERS }, () => {
    let started = false;
    const worker = spawnBun(
      ['workers/main.ts', 'webhooks'],
      {
        DATABASE_URL: db.url,
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: queuePrefix,
        WEBHOOK_SECRET_KEY: secretKey,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        LOG_LEVEL: 'info',
        BUN_JSC_useFTLJIT: '0',
      },
      (line) => {
        try {
          const record = JSON.parse(line) as { msg?: string; level?: number };
          if (record.msg === 'pool started') started = true;
          if (typeof record.level === 'number' && record.level >= 40) problems.push(line);
        } catch {
          if (line.trim()) problems.push(line);
        }
      },
    );
    return Object.assign(worker, { started: () => started });
  });
  await waitFor('worker boot', () => workers.every((worker) => worker.started()), workers, BOOT_TIMEOUT_MS);
  say(`${WORKERS} webhooks worker(s): pids ${workers.map((worker) => worker.proc.pid).join(', ')} (QUEUE_PREFIX ${queuePrefix})`);

  // 3. Throughput: one commit of 2 000 market-wide events, fanned out to 10 endpoints.
  const throughputEndpoints = await createEndpoints('throughput', THROUGHPUT.endpoints);
  const expectedThroughput = THROUGHPUT.endpoints * THROUGHPUT.events;
  const cpuBefore = await cpuSnapshot(workers);
  const rssSamples: number[][] = workers.map(() => []);
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const [index, worker] of workers.entries()) rssSamples[index]!.push((await rssOf(worker.proc.pid)).rss);
      await sleep(RSS_SAMPLE_MS);
    }
  })();
  const committedAt = Date.now();
  await sql`
    insert into event_outbox (id, event_type, payload, created_at)
    select gen_random_uuid(), 'price.updated',
           jsonb_build_object('catalog_id', 'itm_bench_' || n, 'source', 'bench', 'version', 'default', 'price', (n % 997 + 1)::text || '.25',
                              'previous_price', (n % 997 + 1)::text || '.20', 'currency', 'USD', 'source_time', now()),
           now()
    from generate_series(1, ${THROUGHPUT.events}) n`;
  await waitFor('the throughput phase', () => receiver.unique() >= expectedThroughput, workers);
  const lastReceipt = Math.max(...receiver.firsts().map((receipt) => receipt.at));
  const throughputMs = lastReceipt - committedAt;
  const throughputCores = cores(cpuBefore, await cpuSnapshot(workers), throughputMs);
  const throughputRate = (expectedThroughput * 1000) / throughputMs;
  sampling = false;
  await sampler;
  const workerRss = await Promise.all(workers.map((worker) => rssOf(worker.proc.pid)));
  const rssDuring = rssSamples.map((samples) => {
    const sorted = [...samples].sort((a, b) => a - b);
    return { median: percentile(sorted, 50), max: sorted.at(-1) ?? 0 };
  });
  const steadyRss = Math.max(...rssDuring.map((rss) => rss.median));
  for (const endpoint of throughputEndpoints) await removeWebhookEndpoint(sql, endpoint.id, meta());
  say(`throughput: ${expectedThroughput} deliveries in ${secs(throughputMs)}`);

  // 4. Latency: ingest runs through writeIngestRun, commit → receipt per delivery.
  const latencyEndpoints = await createEndpoints('latency', LATENCY.endpoints);
  const items = await insertBenchItems(sql, LATENCY.changedPerRun);
  const commits = new Map<number, number>();
  const source = 'bench_webhooks';
  for (let run = 0; run < LATENCY.runs; run += 1) {
    const ingestedAt = new Date();
    const runId = (await claimIngestRun(sql, source, run + 1, ingestedAt))!;
    const rows = items.map((catalogId, index) => ({
      catalog_id: catalogId,
      version: 'default',
      price: `${10 + index}.${String(run).padStart(2, '0')}`,
      median_price: null,
      quantity: 5,
      source_time: ingestedAt,
    }));
    await writeIngestRun(sql, { runId, source, rows, ingestedAt, staleAfterSeconds: 600, received: rows.length, skipped: 0, unknownNames: 0 });
    commits.set(ingestedAt.getTime(), Date.now());
    if (run < LATENCY.runs - 1) await sleep(Math.max(0, LATENCY.everyMs - (Date.now() - ingestedAt.getTime())));
  }
  const latencyPaths = new Set(latencyEndpoints.map((endpoint) => endpoint.path));
  const expectedLatency = LATENCY.runs * LATENCY.changedPerRun * LATENCY.endpoints;
  const latencyReceipts = () => receiver.firsts().filter((receipt) => latencyPaths.has(receipt.path));
  await waitFor('the latency phase', () => latencyReceipts().length >= expectedLatency, workers);
  const receipts = latencyReceipts();
  const eventTimes = new Map(
    (await sql<{ id: string; created_at: Date }[]>`select id, created_at from event_outbox where id in ${sql(receipts.map((receipt) => receipt.eventId))}`).map(
      (row) => [row.id, row.created_at.getTime()],
    ),
  );
  const latencies = receipts.map((receipt) => receipt.at - commits.get(eventTimes.get(receipt.eventId)!)!).sort((a, b) => a - b);
  const p = (q: number) => percentile(latencies, q);

  // 5. Every delivery settled as succeeded, none twice.
  await waitFor(
    'deliveries to settle',
    async () => {
      const [open] = await sql<{ count: number }[]>`select count(*)::int as count from webhook_deliveries where state in ('pending', 'delivering')`;
      return open!.count === 0;
    },
    workers,
    30_000,
  );
  const states = await sql<{ state: string; count: number }[]>`select state, count(*)::int as count from webhook_deliveries group by state order by state`;
  const succeeded = states.find((row) => row.state === 'succeeded')?.count ?? 0;
  const stats = receiver.stats();
  const allDelivered = succeeded === expectedThroughput + expectedLatency && states.length === 1 && stats.badSignatures === 0;

  process.stdout.write('\n');
  process.stdout.write(
    `${table([
      ['webhook delivery', 'value'],
      ['workers (bun workers/main.ts webhooks, concurrency 64 each)', String(WORKERS)],
      [`throughput: ${THROUGHPUT.events} price.updated × ${THROUGHPUT.endpoints} endpoints`, `${expectedThroughput} deliveries`],
      ['  commit → last delivery received', secs(throughputMs)],
      ['  deliveries/s', throughputRate.toFixed(0)],
      [
        '  CPU cores: workers / postgres / redis / receiver',
        `${throughputCores.workers.toFixed(2)} / ${throughputCores.postgres.toFixed(2)} / ${throughputCores.redis.toFixed(2)} / ${throughputCores.bench.toFixed(2)}`,
      ],
      ['  worker CPU per delivery', `${((throughputCores.workers * throughputMs * 1000) / expectedThroughput).toFixed(0)} µs`],
      [
        `  worker RSS during the phase, median / max (every ${RSS_SAMPLE_MS} ms)`,
        rssDuring.map((rss) => `${rss.median.toFixed(0)} / ${rss.max.toFixed(0)} MB`).join(', '),
      ],
      ['  worker RSS after the phase / peak (VmHWM)', workerRss.map((memory) => `${memory.rss.toFixed(0)} / ${memory.peak.toFixed(0)} MB`).join(', ')],
      [`latency: ${LATENCY.runs} ingest runs × ${LATENCY.changedPerRun} changed prices × ${LATENCY.endpoints} endpoints`, `${expectedLatency} deliveries`],
      ['  ingest commit → receipt p50 / p90 / p99 / max', `${p(50)} / ${p(90)} / ${p(99)} / ${latencies.at(-1)} ms`],
      ['deliveries succeeded / expected', `${succeeded} / ${expectedThroughput + expectedLatency}`],
      ['requests received / duplicates', `${stats.total} / ${stats.duplicates}`],
      ['signatures verified (sample) / bad', `${stats.verified} / ${stats.badSignatures}`],
    ])}\n\n`,
  );
  if (problems.length > 0) say(`warning: the workers logged ${problems.length} warning/error line(s); the last ones:\n${problems.slice(-5).join('\n')}`);

  return [
    [
      `webhook deliveries ≥ ${TARGETS.deliveriesPerSecond}/s (${WORKERS} workers, local receiver)`,
      throughputRate >= TARGETS.deliveriesPerSecond,
      `${throughputRate.toFixed(0)}/s`,
    ],
    [`price.updated ingest commit → receipt p99 < ${TARGETS.latencyP99Ms} ms`, p(99) < TARGETS.latencyP99Ms, `p99 ${p(99)} ms, p50 ${p(50)} ms`],
    [
      `webhooks worker RSS during a full fan-out (median of samples) < ${TARGETS.steadyRssMb} MB`,
      steadyRss < TARGETS.steadyRssMb,
      rssDuring.map((rss) => `median ${rss.median.toFixed(0)} MB, max ${rss.max.toFixed(0)} MB`).join('; '),
    ],
    [
      'every delivery succeeded once, signatures valid',
      allDelivered,
      `${succeeded} succeeded, ${stats.duplicates} duplicates, ${stats.badSignatures} bad signatures`,
    ],
  ];
}

if (import.meta.main) await runBench(async () => printChecks(await benchWebhooks()));
