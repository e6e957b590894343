/**
 * Ingest benchmark: `npm run bench:ingest`.
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards) with the real catalog synced:
 *
 *  (a) end to end: the market simulator (in this process, its clock pinned so every request sees the
 *      same 30 s bucket) serves one full-catalog skinport snapshot; a real ingest worker process
 *      (`bun workers/main.ts ingest`, SOURCES=skinport, a 3600 s interval so its job scheduler fires
 *      exactly once, at start) fetches and writes it. Measured: spawn → run committed (ingest_runs
 *      polled every 20 ms), the run's own started_at → finished_at, spawn → its `ingest run done`
 *      line (which follows the keyless snapshot rebuild), rows written, and the worker's peak RSS
 *      (VmHWM, plus VmRSS sampled every 50 ms). The worker's own per-step timings are printed when
 *      it logs them (any pino line carrying `timings`, e.g. `ingest run done`).
 *  (b) raw COPY baseline: the very rows the run wrote (read back from price_observations by run id)
 *      streamed as TSV through postgres.js `copy … from stdin` into a plain table with the same
 *      columns and no indexes; three times, median reported.
 *
 * Then the adapter's share in this process for reference: skinport fetch + exact JSON parse, and the
 * catalog mapping, over the same simulator snapshot.
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_WORKER_LOG_LEVEL (default info).
 */
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { generateCatalog } from '../shared/catalog/generate.ts';
import { syncCatalog } from '../shared/catalog/repository.ts';
import { createSql, type Sql } from '../shared/db.ts';
import { createLogger } from '../shared/logger.ts';
import { migrate } from '../shared/migrate.ts';
import { loadCatalogNameMap, mapToCatalog } from '../shared/prices/ingest.ts';
import { skinport } from '../shared/sources/skinport.ts';
import type { FetchContext } from '../shared/sources/types.ts';
import { startMarketSimulator } from '../test/fakes/market-simulator.ts';
import {
  exitedEarly,
  onCleanup,
  printChecks,
  removeQueueKeysAtCleanup,
  reportQuietness,
  repoRoot,
  rssOf,
  runBench,
  say,
  scratchDatabase,
  sleep,
  spawnBun,
  stopChild,
  table,
  untrack,
} from './lib.ts';

const TARGETS = { copyShare: 0.25, wallS: 5, peakRssMb: 300 };
const MIN_ROWS = 30_000;
const INTERVAL_SECONDS = 3600;
const RUN_TIMEOUT_MS = 120_000;
const COPY_RUNS = 3;
const COPY_CHUNK_ROWS = 2_000;

const ms = (value: number) => `${value.toFixed(0)} ms`;
const secs = (value: number) => `${(value / 1000).toFixed(2)} s`;
const perSecond = (rows: number, millis: number) => (millis > 0 ? (rows * 1000) / millis : 0);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

type RunRow = {
  id: string;
  status: 'running' | 'succeeded' | 'failed';
  started_at: Date;
  finished_at: Date | null;
  rows_received: number | null;
  rows_written: number | null;
  rows_skipped: number | null;
  unknown_names: number | null;
  error: string | null;
};

/** What the worker said that we care about, with when we saw it (performance.now()). */
type WorkerLog = {
  poolStartedAt?: number;
  runDone?: { at: number; line: Record<string, unknown> };
  runFailed?: { at: number; line: Record<string, unknown> };
  snapshot?: Record<string, unknown>;
  timings: Record<string, unknown>[];
  problems: string[];
};

function watchWorkerLine(log: WorkerLog, line: string): void {
  const at = performance.now();
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    if (line.trim()) log.problems.push(line);
    return;
  }
  if (typeof parsed !== 'object' || parsed === null) return;
  const record = parsed as Record<string, unknown>;
  if (typeof record.msg !== 'string') return;
  if (record.timings && typeof record.timings === 'object') log.timings.push(record.timings as Record<string, unknown>);
  if (record.msg === 'pool started') log.poolStartedAt ??= at;
  else if (record.msg === 'ingest run done') log.runDone ??= { at, line: record };
  else if (record.msg === 'ingest run failed') log.runFailed ??= { at, line: record };
  else if (record.msg === 'price snapshot built') log.snapshot ??= record;
  if (typeof record.level === 'number' && record.level >= 40) log.problems.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
}

/** COPY text format: backslash, tab, newline and carriage return escaped; null is \N. */
function tsvField(value: string | number | null): string {
  if (value === null) return '\\N';
  const text = String(value);
  return /[\\\t\n\r]/.test(text) ? text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : text;
}

type CopyRow = [string, string, string, string, string | null, number | null, string, string, string];

async function copyOnce(sql: Sql, table: string, rows: CopyRow[]): Promise<number> {
  await sql.unsafe(`drop table if exists ${table}`);
  await sql.unsafe(`create table ${table} (
    catalog_id text not null, source text not null, version text not null, price numeric not null, median_price numeric,
    quantity integer, source_time timestamptz not null, ingested_at timestamptz not null, run_id uuid not null)`);
  const started = performance.now();
  function* chunks() {
    for (let start = 0; start < rows.length; start += COPY_CHUNK_ROWS) {
      let chunk = '';
      for (const row of rows.slice(start, start + COPY_CHUNK_ROWS)) chunk += `${row.map(tsvField).join('\t')}\n`;
      yield chunk;
    }
  }
  const writable = await sql
    .unsafe(`copy ${table} (catalog_id, source, version, price, median_price, quantity, source_time, ingested_at, run_id) from stdin`)
    .writable();
  await pipeline(Readable.from(chunks()), writable);
  const elapsed = performance.now() - started;
  const [count] = await sql.unsafe<{ count: number }[]>(`select count(*)::int as count from ${table}`);
  if (count!.count !== rows.length) throw new Error(`COPY wrote ${count!.count} rows, expected ${rows.length}`);
  return elapsed;
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

  // 1. Scratch database, schema, the real catalog.
  const db = await scratchDatabase();
  const sql = createSql(db.url, { max: 4, application: 'bench-ingest' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const catalogStarted = performance.now();
  const catalog = generateCatalog();
  const synced = await syncCatalog(sql, catalog);
  say(`catalog: ${synced.total} items (${catalog.reduce((sum, item) => sum + item.phases.length, 0)} phase versions) synced in ${ms(performance.now() - catalogStarted)}`);

  // 2. The simulator over the real catalog, its clock pinned: one bucket, one body, built once (warmed here).
  const pinnedNow = new Date();
  const simulator = startMarketSimulator({
    port: 0,
    hostname: '127.0.0.1',
    seed: 1,
    now: () => pinnedNow,
    // Catalog items carry every field the simulator reads.
    items: catalog,
  });
  onCleanup(() => simulator.stop());
  const skinportUrl = `${simulator.url}/skinport`;
  const snapshotUrl = `${skinportUrl}/v1/items?app_id=730&currency=USD`;
  const warmStarted = performance.now();
  const warm = await fetch(snapshotUrl, { headers: { 'accept-encoding': 'br' }, decompress: false });
  const compressed = await warm.arrayBuffer();
  const buildMs = performance.now() - warmStarted;
  if (warm.status !== 200) throw new Error(`simulator answered ${warm.status} for ${snapshotUrl}`);
  const snapshotRows = (await (await fetch(snapshotUrl, { headers: { 'accept-encoding': 'br' } })).json()) as { min_price: unknown }[];
  const priced = snapshotRows.filter((row) => row.min_price !== null).length;
  say(`simulator ${simulator.url}: skinport snapshot ${snapshotRows.length} rows, ${priced} priced; ${mib(compressed.byteLength)} br (built in ${ms(buildMs)}, then cached)`);
  if (priced < MIN_ROWS) throw new Error(`the skinport snapshot has only ${priced} priced rows; the benchmark needs at least ${MIN_ROWS}`);

  // 3. One real ingest worker process; its scheduler's first job fires at once.
  await reportQuietness();
  const queuePrefix = `bench${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const workerLog: WorkerLog = { timings: [], problems: [] };
  const worker = spawnBun(
    ['workers/main.ts', 'ingest'],
    {
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl,
      SOURCES: 'skinport',
      SOURCE_SKINPORT_URL: skinportUrl,
      SOURCE_SKINPORT_INTERVAL_SECONDS: String(INTERVAL_SECONDS),
      LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL || 'info',
      QUEUE_PREFIX: queuePrefix,
    },
    (line) => watchWorkerLine(workerLog, line),
  );
  say(`ingest worker pid ${worker.proc.pid} (QUEUE_PREFIX ${queuePrefix}, SOURCES=skinport, interval ${INTERVAL_SECONDS} s)`);

  // RSS every 50 ms while the worker runs (VmHWM at the end is the authoritative peak).
  const samples: { at: number; rss: number }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling && !exitedEarly(worker)) {
      try {
        samples.push({ at: performance.now(), rss: (await rssOf(worker.proc.pid)).rss });
      } catch {
        // between exit and reap
      }
      await sleep(50);
    }
  })();

  let run: RunRow | undefined;
  let committedAt = 0;
  const deadline = performance.now() + RUN_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (exitedEarly(worker)) throw new Error(`the ingest worker exited (${worker.proc.signalCode ?? `code ${worker.proc.exitCode}`}):\n${worker.output.last.join('\n')}`);
    const [row] = await sql<RunRow[]>`
      select id, status, started_at, finished_at, rows_received, rows_written, rows_skipped, unknown_names, error
      from ingest_runs where source = 'skinport' order by started_at limit 1`;
    if (row && row.status !== 'running') {
      committedAt = performance.now();
      run = row;
      break;
    }
    await sleep(20);
  }
  if (!run) throw new Error(`no skinport run finished within ${RUN_TIMEOUT_MS / 1000} s:\n${worker.output.last.join('\n')}`);
  if (run.status !== 'succeeded') throw new Error(`the ingest run failed: ${run.error}\n${worker.output.last.join('\n')}`);
  // The run row commits before the keyless snapshot rebuild; the job is over at `ingest run done`.
  while (!workerLog.runDone && !workerLog.runFailed && performance.now() < deadline && !exitedEarly(worker)) await sleep(10);
  sampling = false;
  await sampler;
  const memory = await rssOf(worker.proc.pid);
  const stopStarted = performance.now();
  await stopChild(worker.proc);
  untrack(worker.proc);
  const stopMs = performance.now() - stopStarted;
  const exit = worker.proc.signalCode ?? `code ${worker.proc.exitCode}`;

  const peakOf = (from: number, to: number) => Math.max(0, ...samples.filter((sample) => sample.at >= from && sample.at <= to).map((sample) => sample.rss));
  const sampledPeakMb = peakOf(0, Number.POSITIVE_INFINITY);
  const bootRss = workerLog.poolStartedAt === undefined ? undefined : samples.find((sample) => sample.at >= workerLog.poolStartedAt!)?.rss;
  const rows = run.rows_written ?? 0;
  const wallMs = committedAt - worker.startedAt;
  const runMs = run.finished_at!.getTime() - run.started_at.getTime();
  const doneMs = workerLog.runDone ? workerLog.runDone.at - worker.startedAt : null;
  const bootMs = workerLog.poolStartedAt ? workerLog.poolStartedAt - worker.startedAt : null;
  const [written] = await sql<{ observations: number; latest: number; rollups: number; events: number; snapshots: number }[]>`
    select (select count(*)::int from price_observations where run_id = ${run.id}) as observations,
           (select count(*)::int from latest_prices where run_id = ${run.id}) as latest,
           (select count(*)::int from price_rollups) as rollups,
           (select count(*)::int from event_outbox) as events,
           (select count(*)::int from price_snapshots) as snapshots`;
  say(
    `run ${run.id}: received ${run.rows_received}, written ${rows}, skipped ${run.rows_skipped}, unknown names ${run.unknown_names}; ` +
      `rows now in price_observations ${written!.observations}, latest_prices ${written!.latest}, price_rollups ${written!.rollups}, event_outbox ${written!.events}, price_snapshots ${written!.snapshots}`,
  );
  say(`worker stopped (SIGTERM → exit ${exit}) in ${ms(stopMs)}`);
  if (rows < MIN_ROWS) throw new Error(`the run wrote ${rows} rows; the benchmark needs at least ${MIN_ROWS}`);

  // 4. Raw COPY of the same rows into a plain table with no indexes.
  const copyRows = (
    await sql<{ catalog_id: string; source: string; version: string; price: string; median_price: string | null; quantity: number | null; source_time: string; ingested_at: string; run_id: string }[]>`
      select catalog_id, source, version, price::text as price, median_price::text as median_price, quantity,
             source_time::text as source_time, ingested_at::text as ingested_at, run_id::text as run_id
      from price_observations where run_id = ${run.id}`
  ).map((row): CopyRow => [row.catalog_id, row.source, row.version, row.price, row.median_price, row.quantity, row.source_time, row.ingested_at, row.run_id]);
  const copyMs: number[] = [];
  for (let attempt = 0; attempt < COPY_RUNS; attempt += 1) copyMs.push(await copyOnce(sql, 'bench_copy_baseline', copyRows));
  await sql`drop table if exists bench_copy_baseline`;
  const copyMedianMs = median(copyMs);
  say(`COPY of ${copyRows.length} rows: ${copyMs.map((value) => ms(value)).join(', ')} (median ${ms(copyMedianMs)})`);

  // 5. The adapter's share, reproduced in this process (same simulator body, cached): fetch + parse, then mapping.
  const quietLog = createLogger({ level: 'silent', name: 'bench' });
  const fetchStarted = performance.now();
  const fetched = await skinport.fetchSnapshot({
    baseUrl: skinportUrl,
    log: quietLog,
    timeoutMs: 15_000,
    acquire: async () => undefined,
    names: [],
    now: () => new Date(),
  } satisfies FetchContext);
  const fetchParseMs = performance.now() - fetchStarted;
  const names = await loadCatalogNameMap(sql);
  const mapStarted = performance.now();
  const mapped = mapToCatalog(fetched.observations, names);
  const mapMs = performance.now() - mapStarted;

  // 6. Report.
  const ingestRate = perSecond(rows, runMs);
  const wallRate = perSecond(rows, wallMs);
  const copyRate = perSecond(copyRows.length, copyMedianMs);
  const share = ingestRate / copyRate;
  const peakMb = Math.max(memory.peak, sampledPeakMb);
  process.stdout.write('\n');
  process.stdout.write(
    `${table([
      ['measure', 'value'],
      ['rows (observations written by the run)', String(rows)],
      ['ingest wall: worker spawn → run committed', secs(wallMs)],
      ['  of which worker boot: spawn → "pool started"', bootMs === null ? 'n/a' : secs(bootMs)],
      ['ingest run: started_at → finished_at', secs(runMs)],
      ['ingest rows/s (run)', ingestRate.toFixed(0)],
      ['ingest rows/s (wall)', wallRate.toFixed(0)],
      ['COPY s (median of 3)', secs(copyMedianMs)],
      ['COPY rows/s', copyRate.toFixed(0)],
      ['ratio: ingest rows/s (run) / COPY rows/s', `${(share * 100).toFixed(1)} %`],
      ['spawn → "ingest run done" (after snapshot rebuild)', doneMs === null ? 'n/a' : secs(doneMs)],
      ['worker peak RSS (VmHWM)', `${memory.peak.toFixed(1)} MB`],
      ['worker RSS: max of 50 ms samples / at the end', `${sampledPeakMb.toFixed(1)} MB / ${memory.rss.toFixed(1)} MB`],
      ['  RSS samples: after boot / max to commit / max after (snapshot)', `${bootRss?.toFixed(1) ?? 'n/a'} / ${peakOf(0, committedAt).toFixed(1)} / ${peakOf(committedAt, Number.POSITIVE_INFINITY).toFixed(1)} MB`],
    ])}\n\n`,
  );

  process.stdout.write('where the run went (worker logs):\n');
  const done = workerLog.runDone?.line;
  if (done) {
    process.stdout.write(`  ingest run done: ms ${String(done.ms)} (run start → after the snapshot rebuild), received ${String(done.received)}, written ${String(done.written)}, changed ${String(done.changed)}\n`);
  } else {
    process.stdout.write('  no `ingest run done` line seen\n');
  }
  const writeTimings = workerLog.timings.at(-1);
  if (writeTimings) {
    const sum = (entries: [string, unknown][]) => entries.reduce<number>((total, [, value]) => total + (typeof value === 'number' ? value : 0), 0);
    const entries = Object.entries(writeTimings);
    const total = sum(entries);
    // finished_at is stamped inside the write transaction, before the health upsert and the commit.
    const beforeFinish = sum(entries.filter(([name]) => name !== 'health' && name !== 'commit'));
    process.stdout.write(`  writeIngestRun per step (ms): ${entries.map(([name, value]) => `${name} ${String(value)}`).join(', ')}; total ${total}\n`);
    process.stdout.write(`  run s − write steps up to finished_at = ${Math.max(0, runMs - beforeFinish)} ms: claim, partitions, fetch, parse, catalog mapping\n`);
  } else {
    process.stdout.write('  (the worker logged no per-statement timings)\n');
  }
  if (workerLog.snapshot) {
    process.stdout.write(`  price snapshot built: ms ${String(workerLog.snapshot.ms)}, phases ${JSON.stringify(workerLog.snapshot.phases_ms)}, items ${String(workerLog.snapshot.items)}\n`);
  }
  process.stdout.write(
    `  for reference, in the bench process over the same body: skinport fetch + exact JSON parse ${ms(fetchParseMs)} (${fetched.observations.length} observations), ` +
      `catalog mapping ${ms(mapMs)} (${mapped.staged.length} staged)\n\n`,
  );

  if (workerLog.problems.length > 0) {
    say(`warning: the worker logged ${workerLog.problems.length} warning/error/unparsed line(s); the last ones:\n${workerLog.problems.slice(-5).join('\n')}`);
  }

  printChecks([
    [`ingest >= ${TARGETS.copyShare * 100} % of raw COPY rows/s`, share >= TARGETS.copyShare, `${(share * 100).toFixed(1)} %: ${ingestRate.toFixed(0)} vs ${copyRate.toFixed(0)} rows/s`],
    [`ingest wall < ${TARGETS.wallS} s`, wallMs < TARGETS.wallS * 1000, secs(wallMs)],
    [`worker peak RSS < ${TARGETS.peakRssMb} MB`, peakMb < TARGETS.peakRssMb, `${peakMb.toFixed(1)} MB`],
  ]);
}

await runBench(main);
