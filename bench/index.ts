/**
 * Market analytics benchmark: `npm run bench:index`.
 *
 * In a scratch database (dropped afterwards) with the real catalog synced and every item and phase
 * version priced by skinport (plus a share by steam and csfloat, for the summary):
 *
 *  (a) index: a real index worker process (`bun workers/main.ts index`) calculates
 *      cs2.chain-equal-weight.v1 for skinport after each of RUNS ingest runs written through the
 *      real ingest write path (run 1: every segment's inception; later runs: about 10 % of prices
 *      move, every price is observed again). Per run: the job's own duration (from its log line),
 *      enqueue → done, calculations succeeded/failed, and the worker's RSS after the run (VmRSS) and
 *      peak (VmHWM). "Flat memory": RSS after the last run against after the second.
 *  (b) summary: GET /v2/market/summary through a real API process at 50 connections over a rotation
 *      of query variants (the API's per-process cache at its default PRICE_CACHE_MS), and the
 *      uncached query itself (computeMarketSummary in this process, each variant repeatedly).
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_DURATION / BENCH_WARMUP.
 */
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { generateCatalog } from '../shared/catalog/generate.ts';
import { syncCatalog } from '../shared/catalog/repository.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { enqueue, JOBS, queueName } from '../shared/jobs/queues.ts';
import { computeMarketSummary, type MarketSummaryQuery } from '../shared/market/summary.ts';
import { createSql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { createWorkerRedis } from '../shared/platform/redis.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../shared/prices/ingest.ts';
import {
  CONNECTIONS,
  exitedEarly,
  freePort,
  harFile,
  load,
  onCleanup,
  printChecks,
  removeQueueKeysAtCleanup,
  repoRoot,
  reportQuietness,
  rssOf,
  runBench,
  say,
  scratchDatabase,
  sleep,
  spawnApi,
  spawnBun,
  table,
  waitReady,
  warnAbnormal,
} from './lib.ts';

const TARGETS = { runWallMs: 2_000, rssGrowthMb: 25, summaryP99Ms: 20 };
const RUNS = 6;
const JOB_TIMEOUT_MS = 60_000;
const SUMMARY_REPEATS = 15;

const ms = (value: number) => `${value.toFixed(0)} ms`;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

/** Deterministic cents for (item index, run): about 10 % of items move per run. */
function cents(index: number, run: number): number {
  let value = 50 + ((index * 7_919) % 250_000);
  for (let step = 1; step <= run; step += 1) {
    if ((index * 31 + step * 17) % 10 === 0) value += ((index + step) % 7) - 3 + Math.floor(value / 50) * (((index + step) % 3) - 1);
  }
  return Math.max(3, value);
}
const money = (value: number) => `${Math.floor(value / 100)}.${String(value % 100).padStart(2, '0')}`;

type LogLine = {
  msg?: string;
  ms?: number;
  succeeded?: number;
  failed?: number;
  inceptions?: number;
  priced?: number;
  timings?: Record<string, number>;
  after_run?: string;
  level?: number;
};

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const db = await scratchDatabase();
  const sql = createSql(db.url, { max: 4, application: 'bench-index' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const catalog = generateCatalog();
  await syncCatalog(sql, catalog);
  const variants = catalog.flatMap((item) => ['default', ...item.phases].map((version) => ({ catalog_id: item.catalog_id, version })));
  say(`catalog: ${catalog.length} items, ${variants.length} (item, version) pairs`);

  const start = Date.now() - (RUNS + 1) * 60_000;
  let slot = 0;
  async function ingestRun(source: string, run: number, share: number): Promise<string> {
    const at = new Date(start + run * 60_000);
    const runId = (await claimIngestRun(sql, source, (slot += 1), at))!;
    const rows: StagedObservation[] = [];
    variants.forEach((variant, index) => {
      if (index % share !== 0) return;
      rows.push({ ...variant, price: money(cents(index, run)), median_price: null, quantity: 1 + (index % 40), source_time: at });
    });
    await writeIngestRun(sql, { runId, source, rows, ingestedAt: at, staleAfterSeconds: 3_600, received: rows.length, skipped: 0, unknownNames: 0 });
    return runId;
  }
  // Other marketplaces price part of the catalog (the summary sums across them).
  await ingestRun('steam', 0, 3);
  await ingestRun('csfloat', 0, 6);

  // (a) A real index worker.
  const queuePrefix = `bench${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const done = new Map<string, { at: number; line: LogLine }>();
  const problems: string[] = [];
  const worker = spawnBun(['workers/main.ts', 'index'], { DATABASE_URL: db.url, REDIS_URL: redisUrl, LOG_LEVEL: 'info', QUEUE_PREFIX: queuePrefix }, (text) => {
    try {
      const line = JSON.parse(text) as LogLine;
      if (line.msg === 'market index calculated' && line.after_run) done.set(line.after_run, { at: performance.now(), line });
      if ((line.level ?? 0) >= 40) problems.push(text.slice(0, 300));
    } catch {
      if (text.trim()) problems.push(text.slice(0, 300));
    }
  });
  const connection = createWorkerRedis(redisUrl, 'bench-index');
  const queue = new Queue(queueName(JOBS['market_index.calculate'].queue), { connection, prefix: queuePrefix });
  onCleanup(async () => {
    await queue.close();
    connection.disconnect();
  });
  await reportQuietness();

  const runs: { run: number; jobMs: number; waitMs: number; line: LogLine; rss: number; peak: number }[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const runId = await ingestRun('skinport', run, 1);
    const enqueued = performance.now();
    await enqueue(queue, 'market_index.calculate', { marketplace: 'skinport', after_run: runId }, { jobId: `index-${runId}` });
    while (!done.has(runId)) {
      if (exitedEarly(worker)) throw new Error(`the index worker exited:\n${worker.output.last.join('\n')}`);
      if (performance.now() - enqueued > JOB_TIMEOUT_MS)
        throw new Error(`no index calculation for run ${run} within ${JOB_TIMEOUT_MS / 1000} s:\n${worker.output.last.join('\n')}`);
      await sleep(10);
    }
    const finished = done.get(runId)!;
    const memory = await rssOf(worker.proc.pid);
    runs.push({ run: run + 1, jobMs: finished.line.ms ?? Number.NaN, waitMs: finished.at - enqueued, line: finished.line, rss: memory.rss, peak: memory.peak });
  }
  const [stored] = await sql<{ calculations: number; prices: number }[]>`
    select (select count(*)::int from market_index_calculations) as calculations, (select count(*)::int from market_index_prices) as prices`;

  // (b) The summary through a real API process.
  const workspace = await adminCreateWorkspace(sql, { name: `bench-index-${Date.now()}`, tier: 'enterprise' });
  await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
  const key = await adminCreateKey(sql, { workspaceId: workspace.id, label: 'bench-index', scopes: ['market:read'] });
  const apiPort = await freePort();
  const api = spawnApi(apiPort, {
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  await waitReady('API', api, `${apiBase}/v2/health`);
  const queries: [string, MarketSummaryQuery][] = [
    ['', { marketplace: null, segment: null, freshOnly: false }],
    ['fresh_only=true', { marketplace: null, segment: null, freshOnly: true }],
    ['marketplace=skinport', { marketplace: 'skinport', segment: null, freshOnly: false }],
    ['marketplace=steam&fresh_only=true', { marketplace: 'steam', segment: null, freshOnly: true }],
    ['segment=weapon&value=AK-47', { marketplace: null, segment: { segment: 'weapon', value: 'AK-47' }, freshOnly: false }],
    ['segment=type&value=sticker', { marketplace: null, segment: { segment: 'type', value: 'sticker' }, freshOnly: false }],
    ['segment=rarity&value=covert&marketplace=csfloat', { marketplace: 'csfloat', segment: { segment: 'rarity', value: 'covert' }, freshOnly: false }],
    ['segment=exterior&value=factory-new&fresh_only=true', { marketplace: null, segment: { segment: 'exterior', value: 'factory-new' }, freshOnly: true }],
  ];
  const keyed = { 'x-api-key': key.key };
  const urls = queries.map(([query]) => `${apiBase}/v2/market/summary${query ? `?${query}` : ''}`);
  for (const url of urls) {
    const response = await fetch(url, { headers: keyed });
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  }
  const har = await harFile(join('/tmp', `bench-index-${process.pid}.har`), urls, keyed);
  onCleanup(() =>
    Bun.file(har)
      .delete()
      .catch(() => undefined),
  );
  const summary = await load(`GET /v2/market/summary (${urls.length} queries)`, api.proc.pid, urls[0]!, keyed, { har });
  warnAbnormal([summary]);

  const uncached: { query: string; p50: number; p99: number; max: number }[] = [];
  for (const [text, query] of queries) {
    const times: number[] = [];
    for (let repeat = 0; repeat < SUMMARY_REPEATS; repeat += 1) {
      const began = performance.now();
      await computeMarketSummary(sql, query, new Date());
      times.push(performance.now() - began);
    }
    uncached.push({ query: text || '(all)', p50: percentile(times, 50), p99: percentile(times, 99), max: Math.max(...times) });
  }

  // Report.
  process.stdout.write('\nindex runs (skinport, every segment), index worker process:\n\n');
  process.stdout.write(
    `${table([
      ['run', 'priced', 'succeeded', 'failed', 'inceptions', 'job ms', 'enqueue → done ms', 'steps (ms)', 'worker RSS MB', 'peak MB'],
      ...runs.map((entry) => [
        String(entry.run),
        String(entry.line.priced),
        String(entry.line.succeeded),
        String(entry.line.failed),
        String(entry.line.inceptions),
        entry.jobMs.toFixed(0),
        entry.waitMs.toFixed(0),
        Object.entries(entry.line.timings ?? {})
          .map(([name, value]) => `${name} ${value}`)
          .join(', '),
        entry.rss.toFixed(1),
        entry.peak.toFixed(1),
      ]),
    ])}\n\n`,
  );
  process.stdout.write(`stored after ${RUNS} runs: ${stored!.calculations} calculations, ${stored!.prices} index price rows\n\n`);
  process.stdout.write(`GET /v2/market/summary, ${CONNECTIONS} connections over ${urls.length} query variants (API cache at its default PRICE_CACHE_MS):\n`);
  process.stdout.write(
    `  ${summary.rps.toFixed(0)} req/s, p50 ${summary.p50} ms, p90 ${summary.p90} ms, p99 ${summary.p99} ms, max ${summary.max} ms; server CPU ${summary.cpuUsPerRequest.toFixed(0)} µs/req\n\n`,
  );
  process.stdout.write(`the summary query uncached (computeMarketSummary in this process, ${SUMMARY_REPEATS} times each, sequential):\n\n`);
  process.stdout.write(
    `${table([['query', 'p50 ms', 'p99 ms', 'max ms'], ...uncached.map((entry) => [entry.query, entry.p50.toFixed(1), entry.p99.toFixed(1), entry.max.toFixed(1)])])}\n\n`,
  );
  if (problems.length > 0) say(`warning: the worker logged ${problems.length} warning/error/unparsed line(s):\n${problems.slice(-5).join('\n')}`);

  const linkRuns = runs.slice(1);
  const slowest = Math.max(...runs.map((entry) => entry.jobMs));
  const growth = runs.at(-1)!.rss - runs[1]!.rss;
  printChecks([
    [
      `index run < ${TARGETS.runWallMs} ms (slowest of ${RUNS}, inception included)`,
      slowest < TARGETS.runWallMs,
      `slowest ${ms(slowest)}; link runs ${linkRuns.map((entry) => entry.jobMs.toFixed(0)).join(', ')} ms`,
    ],
    [
      `flat memory: worker RSS after run ${RUNS} within ${TARGETS.rssGrowthMb} MB of after run 2`,
      growth < TARGETS.rssGrowthMb,
      `${runs[1]!.rss.toFixed(1)} → ${runs.at(-1)!.rss.toFixed(1)} MB (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB); peak ${Math.max(...runs.map((entry) => entry.peak)).toFixed(1)} MB`,
    ],
    [
      `GET /v2/market/summary p99 < ${TARGETS.summaryP99Ms} ms at ${CONNECTIONS} connections`,
      summary.p99 < TARGETS.summaryP99Ms && summary.non2xx === 0,
      `p99 ${summary.p99} ms`,
    ],
  ]);
}

await runBench(main);
