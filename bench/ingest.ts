/**
 * Ingest benchmark: `npm run bench:ingest` (issue 13's restated targets).
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards) with the real catalog synced,
 * the market simulator (in this process, its clock pinned and moved by hand) serves skinport's full
 * catalog snapshot to one real ingest worker process (`bun workers/main.ts ingest`, SOURCES=skinport,
 * a RUN_INTERVAL_SECONDS schedule):
 *
 *  (1) full snapshot: the first run writes every row (an empty database). Its write phase is
 *      writeIngestRun from BEGIN to COMMIT (the sum of the step timings the worker logs).
 *  (2) raw COPY of the same rows into the same target tables, in the same run: the rows the first run
 *      left in price_observations, latest_prices and price_rollups are copied out, then, in one
 *      transaction, the three tables are truncated and the rows COPY'd back in and committed (their
 *      indexes and partitions as the run had them); three times, median. The ratio is COPY time /
 *      write-phase time (target ≥ 50 %): both write the same rows to the same tables; the run also
 *      stages, compares with the stored prices and merges rollups, which a COPY does not.
 *  (3) steady state, two kinds of run, BENCH_STEADY_RUNS (3) of each, each after the simulator's clock
 *      moved and the simulator built its new answer (the upstream's time to answer is not ours):
 *        - one 30 s bucket later: about one row in ten moves (a new `updated_at`; the rest keep
 *          theirs), a little under half of those with a new lowest price;
 *        - two buckets later: about one lowest price in ten changes (a fifth of the rows move).
 *      Each run is timed from its start to `ingest run done` (fetch and parse, catalog mapping,
 *      write, job requests), and its write phase as in (1). Target: < 300 ms (median, each kind).
 *      Fetching and parsing skinport's whole 17.5 MB answer is ~150-200 ms of that on this machine
 *      (and over the internet, the transfer alone is more): so the target is judged on the write
 *      phase, and the run without its upstream request is printed beside it.
 *  (4) the worker's RSS: VmHWM over everything, and 50 ms samples (target < 300 MB).
 *
 * Then the adapter's share in this process for reference: skinport fetch + exact JSON parse, and the
 * catalog mapping, over the same simulator body. Webhooks-pool RSS during a full fan-out is measured
 * by `npm run bench:delivery`.
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_WORKER_LOG_LEVEL (default info),
 * BENCH_STEADY_RUNS (runs of each steady kind, default 3).
 */
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
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
  positiveInt,
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

const TARGETS = { copyShare: 0.5, steadyMs: 300, peakRssMb: 300 };
const MIN_ROWS = 30_000;
// Long enough for a full run plus the COPY baseline between two scheduled runs.
const RUN_INTERVAL_SECONDS = 10;
const STEADY_RUNS = positiveInt('BENCH_STEADY_RUNS', 3);
const RUN_TIMEOUT_MS = 120_000;
const COPY_RUNS = 3;
// The tables a run writes rows to (besides one ingest_runs and one price_sources row): with no
// webhook endpoint subscribed, no outbox rows.
const TARGET_TABLES = ['price_observations', 'latest_prices', 'price_rollups'] as const;
const SIMULATOR_BUCKET_MS = 30_000;
// About one item in ten moves per bucket, but a move often leaves the lowest price as it was: two
// buckets change about 10 % of lowest prices (measured and printed per run).
const STEADY_KINDS = [
  { buckets: 1, label: '1 bucket (~10 % of rows moved)' },
  { buckets: 2, label: '2 buckets (~10 % of prices changed)' },
] as const;

const ms = (value: number) => `${value.toFixed(0)} ms`;
const secs = (value: number) => `${(value / 1000).toFixed(2)} s`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

type RunDone = {
  at: number;
  runId: string;
  ms: number;
  received: number;
  written: number;
  repeated: number;
  changed: number;
  skipped: number;
  phases: Record<string, number>;
  timings: Record<string, number>;
};

/** What the worker said that we care about, with when we saw it (performance.now()). */
type WorkerLog = { poolStartedAt?: number; runs: RunDone[]; failures: string[]; problems: string[] };

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
  if (record.msg === 'pool started') log.poolStartedAt ??= at;
  else if (record.msg === 'ingest run done') {
    log.runs.push({
      at,
      runId: String(record.runId),
      ms: Number(record.ms),
      received: Number(record.received),
      written: Number(record.written),
      repeated: Number(record.repeated),
      changed: Number(record.changed),
      skipped: Number(record.unchanged_skipped ?? 0),
      phases: (record.phases_ms ?? {}) as Record<string, number>,
      timings: (record.timings ?? {}) as Record<string, number>,
    });
  } else if (record.msg === 'ingest run failed') log.failures.push(String(record.error));
  if (typeof record.level === 'number' && record.level >= 40) log.problems.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
}

/** BEGIN to COMMIT of writeIngestRun: the sum of the steps it logs. */
const writePhaseMs = (run: RunDone) => Object.values(run.timings).reduce((sum, value) => sum + value, 0);

async function copyOut(sql: Sql, table: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  // Piped, not read with for-await: after a large COPY TO read that way, postgres.js (3.4.9) left its
  // connection unusable and the next query never ran.
  const collect = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  await pipeline(await sql.unsafe(`copy (select * from ${table}) to stdout`).readable(), collect);
  return Buffer.concat(chunks);
}

/** Truncates the target tables and COPYs `data` back into them in one transaction; the COPYs and the commit are timed. */
async function copyIn(sql: Sql, data: Map<string, Buffer>): Promise<number> {
  let started = 0;
  await sql.begin(async (tx) => {
    await tx.unsafe(`truncate ${TARGET_TABLES.join(', ')}`);
    started = performance.now();
    for (const table of TARGET_TABLES) await pipeline(Readable.from([data.get(table)!]), await tx.unsafe(`copy ${table} from stdin`).writable());
  });
  return performance.now() - started;
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

  // 2. The simulator over the real catalog, its clock pinned (moved one bucket before each steady run).
  let simulatedNow = new Date();
  const simulator = startMarketSimulator({ port: 0, hostname: '127.0.0.1', seed: 1, now: () => simulatedNow, items: catalog });
  onCleanup(() => simulator.stop());
  const skinportUrl = `${simulator.url}/skinport`;
  const snapshotUrl = `${skinportUrl}/v1/items?app_id=730&currency=USD`;
  const warm = await fetch(snapshotUrl, { headers: { 'accept-encoding': 'br' }, decompress: false });
  const compressed = await warm.arrayBuffer();
  if (warm.status !== 200) throw new Error(`simulator answered ${warm.status} for ${snapshotUrl}`);
  const snapshotRows = (await (await fetch(snapshotUrl, { headers: { 'accept-encoding': 'br' } })).json()) as { min_price: unknown }[];
  const priced = snapshotRows.filter((row) => row.min_price !== null).length;
  say(`simulator ${simulator.url}: skinport snapshot ${snapshotRows.length} rows, ${priced} priced; ${mib(compressed.byteLength)} br`);
  if (priced < MIN_ROWS) throw new Error(`the skinport snapshot has only ${priced} priced rows; the benchmark needs at least ${MIN_ROWS}`);

  // 3. One real ingest worker process: its scheduler's first job fires at once, then every interval.
  await reportQuietness();
  const queuePrefix = `bench${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const workerLog: WorkerLog = { runs: [], failures: [], problems: [] };
  const worker = spawnBun(
    ['workers/main.ts', 'ingest'],
    {
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl,
      SOURCES: 'skinport',
      SOURCE_SKINPORT_URL: skinportUrl,
      SOURCE_SKINPORT_INTERVAL_SECONDS: String(RUN_INTERVAL_SECONDS),
      LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL || 'info',
      QUEUE_PREFIX: queuePrefix,
    },
    (line) => watchWorkerLine(workerLog, line),
  );
  say(`ingest worker pid ${worker.proc.pid} (QUEUE_PREFIX ${queuePrefix}, SOURCES=skinport, interval ${RUN_INTERVAL_SECONDS} s)`);

  // RSS every 50 ms while the worker runs (VmHWM at the end is the authoritative peak).
  const samples: number[] = [];
  // The largest sample while each run was the latest one seen (index 0: up to the end of the first run).
  const peakByRun: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling && !exitedEarly(worker)) {
      try {
        const { rss } = await rssOf(worker.proc.pid);
        samples.push(rss);
        peakByRun[workerLog.runs.length] = Math.max(peakByRun[workerLog.runs.length] ?? 0, rss);
      } catch {
        // between exit and reap
      }
      await sleep(50);
    }
  })();
  const waitForRuns = async (count: number) => {
    const deadline = performance.now() + RUN_TIMEOUT_MS;
    while (workerLog.runs.length < count) {
      if (exitedEarly(worker)) throw new Error(`the ingest worker exited (${worker.proc.signalCode ?? `code ${worker.proc.exitCode}`}):\n${worker.output.last.join('\n')}`);
      if (workerLog.failures.length > 0) throw new Error(`an ingest run failed: ${workerLog.failures[0]}\n${worker.output.last.join('\n')}`);
      if (performance.now() > deadline) throw new Error(`run ${count} did not finish within ${RUN_TIMEOUT_MS / 1000} s:\n${worker.output.last.join('\n')}`);
      await sleep(10);
    }
    return workerLog.runs[count - 1]!;
  };

  // (1) The full snapshot.
  const full = await waitForRuns(1);
  if (full.written < MIN_ROWS) throw new Error(`the first run wrote ${full.written} rows; the benchmark needs at least ${MIN_ROWS}`);
  const fullWriteMs = writePhaseMs(full);
  say(`full snapshot: received ${full.received}, written ${full.written}; run ${ms(full.ms)} (${JSON.stringify(full.phases)}), write phase ${ms(fullWriteMs)} (${JSON.stringify(full.timings)})`);

  // (2) Raw COPY of the very rows the run left in its target tables, back into those tables.
  const data = new Map<string, Buffer>();
  const rowCounts: string[] = [];
  for (const table of TARGET_TABLES) {
    data.set(table, await copyOut(sql, table));
    const [count] = await sql.unsafe<{ count: number }[]>(`select count(*)::int as count from ${table}`);
    rowCounts.push(`${table} ${count!.count}`);
  }
  const copyMs: number[] = [];
  for (let attempt = 0; attempt < COPY_RUNS; attempt += 1) copyMs.push(await copyIn(sql, data));
  const copyMedianMs = median(copyMs);
  say(`COPY of the same rows (${rowCounts.join(', ')}): ${copyMs.map((value) => ms(value)).join(', ')} (median ${ms(copyMedianMs)})`);

  // (3) Steady state: runs one bucket apart, then two buckets apart.
  const steady = new Map<(typeof STEADY_KINDS)[number], RunDone[]>();
  for (const kind of STEADY_KINDS) {
    const runs: RunDone[] = [];
    for (let index = 0; index < STEADY_RUNS; index += 1) {
      simulatedNow = new Date(simulatedNow.getTime() + kind.buckets * SIMULATOR_BUCKET_MS);
      // The upstream's own time to build its answer is not ours: the simulator builds (and caches)
      // the new body now, before the run asks for it.
      await (await fetch(snapshotUrl, { headers: { 'accept-encoding': 'br' }, decompress: false })).arrayBuffer();
      const run = await waitForRuns(workerLog.runs.length + 1);
      runs.push(run);
      say(
        `steady run, ${kind.label}: received ${run.received}, unchanged and skipped before staging ${run.skipped}, changed ${run.changed}, written ${run.written}, repeated ${run.repeated}; ` +
          `run ${ms(run.ms)} (${JSON.stringify(run.phases)}), write phase ${ms(writePhaseMs(run))} (${JSON.stringify(run.timings)})`,
      );
    }
    steady.set(kind, runs);
  }
  sampling = false;
  await sampler;
  const memory = await rssOf(worker.proc.pid);
  await stopChild(worker.proc);
  untrack(worker.proc);

  // 4. The adapter's share, reproduced in this process (same simulator body): fetch + parse, then mapping.
  const quietLog = createLogger({ level: 'silent', name: 'bench' });
  const fetchStarted = performance.now();
  const fetched = await skinport.fetchSnapshot({ baseUrl: skinportUrl, log: quietLog, timeoutMs: 15_000, acquire: async () => undefined, names: [], now: () => new Date() } satisfies FetchContext);
  const fetchParseMs = performance.now() - fetchStarted;
  const names = await loadCatalogNameMap(sql);
  const mapStarted = performance.now();
  const mapped = mapToCatalog(fetched.observations, names);
  const mapMs = performance.now() - mapStarted;

  // 5. Report.
  const share = copyMedianMs / fullWriteMs;
  const peakMb = Math.max(memory.peak, ...samples);
  const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)} %`;
  const withoutFetch = (run: RunDone) => run.ms - (run.phases.fetch ?? 0);
  const steadyRows = STEADY_KINDS.flatMap((kind) => {
    const runs = steady.get(kind)!;
    return [
      [`steady, ${kind.label}: rows moved / prices changed`, runs.map((run) => `${percent(run.written + run.repeated, run.received)} / ${percent(run.changed, run.received)}`).join(', ')],
      ['  write phase, each / median', `${runs.map((run) => ms(writePhaseMs(run))).join(', ')} / ${ms(median(runs.map(writePhaseMs)))}`],
      ['  run without its upstream request (map, write, requests), median', ms(median(runs.map(withoutFetch)))],
      ['  run (start → done), each / median', `${runs.map((run) => ms(run.ms)).join(', ')} / ${ms(median(runs.map((run) => run.ms)))}`],
    ];
  });
  process.stdout.write('\n');
  process.stdout.write(
    `${table([
      ['measure', 'value'],
      ['full snapshot: rows written (observations)', String(full.written)],
      ['full snapshot: run (start → done)', ms(full.ms)],
      ['full snapshot: write phase (writeIngestRun BEGIN → COMMIT)', ms(fullWriteMs)],
      [`raw COPY of the same rows into the same tables (median of ${COPY_RUNS})`, ms(copyMedianMs)],
      ['ratio: COPY time / write phase', `${(share * 100).toFixed(1)} %`],
      ...steadyRows,
      ['worker peak RSS (VmHWM) / max of 50 ms samples / at the end', `${memory.peak.toFixed(1)} / ${Math.max(0, ...samples).toFixed(1)} / ${memory.rss.toFixed(1)} MB`],
      ['worker RSS, max of samples up to each run\'s end (full, then steady)', peakByRun.map((rss) => rss.toFixed(0)).join(' / ') + ' MB'],
    ])}\n\n`,
  );
  process.stdout.write(
    `for reference, in the bench process over the same body: skinport fetch + exact JSON parse ${ms(fetchParseMs)} (${fetched.observations.length} observations), ` +
      `catalog mapping ${ms(mapMs)} (${mapped.staged.length} staged)\n\n`,
  );
  if (workerLog.problems.length > 0) {
    say(`warning: the worker logged ${workerLog.problems.length} warning/error/unparsed line(s); the last ones:\n${workerLog.problems.slice(-5).join('\n')}`);
  }

  printChecks([
    [`full-snapshot write phase ≥ ${TARGETS.copyShare * 100} % of a raw COPY of the same rows into the same tables`, share >= TARGETS.copyShare, `${(share * 100).toFixed(1)} %: COPY ${ms(copyMedianMs)}, write ${ms(fullWriteMs)}`],
    ...STEADY_KINDS.map((kind): [string, boolean, string] => {
      const runs = steady.get(kind)!;
      const writeMedian = median(runs.map(writePhaseMs));
      return [
        `steady run, ${kind.label}: write phase < ${TARGETS.steadyMs} ms (median)`,
        writeMedian < TARGETS.steadyMs,
        `${ms(writeMedian)}; whole run ${ms(median(runs.map((run) => run.ms)))}, of which the upstream request ${ms(median(runs.map((run) => run.phases.fetch ?? 0)))}`,
      ];
    }),
    [`ingest worker peak RSS < ${TARGETS.peakRssMb} MB`, peakMb < TARGETS.peakRssMb, `${peakMb.toFixed(1)} MB`],
  ]);
}

await runBench(main);
