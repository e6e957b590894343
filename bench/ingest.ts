/**
 * Ingest benchmark: `npm run bench:ingest` (issue 13's restated targets, over the nine sources of
 * docs/design.md §13).
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards) with the real catalog synced,
 * the market simulator (in this process, its clock pinned and moved by hand) serves every source's
 * format over the whole catalog. Two parts:
 *
 * Part 1, per source (BENCH_SOURCES, default the six marketplaces csmarket, lisskins, waxpeer,
 * whitemarket, bitskins, csdeals, then skinport for reference; any of those seven may be named).
 * Each source starts from empty target tables (price_observations, latest_prices and price_rollups
 * truncated, its price_sources and ingest_runs rows deleted) and gets its own real ingest worker
 * process (`bun workers/main.ts ingest`, SOURCES=<source>, SOURCE_<NAME>_URL=<simulator>/<source>,
 * SOURCE_<NAME>_INTERVAL_SECONDS=10, its own QUEUE_PREFIX): the worker remembers the rows it wrote,
 * so a fresh process per source keeps each measurement to that source alone. Its QUEUE_PREFIX also
 * holds the source's request budget and Retry-After block (`<QUEUE_PREFIX>:source-budget:…`), so a
 * test running beside the bench that puts the simulator in rate_limit mode never blocks the bench's
 * worker.
 *
 *  (1) full catalog: the first run writes every row (empty tables). Its write phase is writeIngestRun
 *      from BEGIN to COMMIT (the sum of the step timings the worker logs). It must write at least
 *      30 000 rows for skinport and 10 000 for a marketplace (they leave 15-50 % of the catalog out
 *      by design): enough to prove a full-catalog body.
 *  (2) raw COPY of the same rows into the same target tables, in the same run: the rows the first run
 *      left in price_observations, latest_prices and price_rollups are copied out, then, in one
 *      transaction, the three tables are truncated and the rows COPY'd back in and committed (their
 *      indexes and partitions as the run had them); three times, median. An attempt during which the
 *      worker claimed a scheduled run is discarded and repeated after that run (the worker's fetch
 *      and the simulator, in this process, would compete with it for the CPU). The ratio is COPY
 *      time / write-phase time (target ≥ 50 %).
 *  (3) steady state, two kinds of run, BENCH_STEADY_RUNS (3) of each, each after the simulator's clock
 *      moved and the simulator built its new answer (every endpoint of the source, both of waxpeer's,
 *      fetched once beforehand: the upstream's time to build its answer is not ours):
 *        - one 30 s bucket later: about one row in ten moves;
 *        - two buckets later: about one lowest price in ten changes (a fifth of the rows move).
 *      Skinport and csmarket stamp rows with upstream times (skinport per row, csmarket one `time` per
 *      body, which moves every bucket); the other five marketplaces send no time, so every row is
 *      stamped with the fetch time and is new on every run: the worker cannot skip it before staging,
 *      and the unchanged ones only advance their freshness (`repeated`). Each run is timed from its
 *      start to `ingest run done`, and its write phase as in (1). Target: write phase < 300 ms
 *      (median, each kind); the run without its upstream request is printed beside it.
 *  (4) the worker's RSS: VmHWM over everything, and 50 ms samples (target < 300 MB).
 *  Then, in this process over the same body, the adapter's fetch + parse and the catalog mapping.
 *
 * Part 3 (BENCH_SALES=0 skips it): sales windows for the full catalog, bench/ingest-sales.ts.
 *
 * Part 2, the keyless snapshot (docs/design.md §9 and §13) with nine sources and consensus against today's
 * three, in the same run and the same database. From a clean state (target tables truncated,
 * price_sources, ingest_runs and price_snapshots emptied), this process writes one full-catalog run
 * of skinport, steam (its search pages over the whole catalog, 100 names each) and csfloat (pages of 1000, at most 60)
 * with the adapters, mapToCatalog, claimIngestRun and writeIngestRun, each source's stale threshold
 * as `npm start` sets it (sourceSettings for a local URL), all at one pinned simulated instant, and
 * times buildPriceSnapshot; the body is then compressed as the API does (encodeBody, brotli quality
 * SNAPSHOT_BROTLI_QUALITY, gzip 6). Then the six marketplaces are written the same way and the
 * snapshot built again. Target: nine-source brotli body < 1.6 × the three-source one (both in
 * today's format, consensus, bid and volume_7d included; for reference, each list is also re-encoded
 * without those fields, as it was before docs/design.md §13). The built JSON is read back for sanity figures:
 * versions and items with a non-null consensus, outlier entries by source (a few printed), and how
 * many of each source's prices were fresh at the build (freshness decides the consensus: skinport's
 * `updated_at` and csfloat's listing times are when a price last moved, so many of their prices are
 * older than the 90 s threshold).
 *
 * Webhooks-pool RSS during a full fan-out is measured by `npm run bench:delivery`.
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_SOURCES (comma list, or `none` to
 * skip part 1), BENCH_SNAPSHOT (`0` skips part 2), BENCH_WORKER_LOG_LEVEL (default info),
 * BENCH_STEADY_RUNS (runs of each steady kind, default 3).
 */
import { join } from 'node:path';
import { generateCatalog } from '../shared/catalog/generate.ts';
import { syncCatalog } from '../shared/catalog/repository.ts';
import { parseConfig } from '../shared/platform/config.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { SOURCE_NAMES, type SourceName } from '../shared/platform/source-names.ts';
import { type CatalogNameMap, claimIngestRun, loadCatalogNameMap, mapToCatalog, writeIngestRun } from '../shared/prices/ingest.ts';
import { encodeBody, type PublicPriceList, type PublicVersionPrices } from '../shared/prices/public-document.ts';
import { findNewestPriceSnapshot } from '../shared/prices/repository.ts';
import { buildPriceSnapshot, SNAPSHOT_BROTLI_QUALITY } from '../shared/prices/snapshot.ts';
import { ADAPTERS } from '../shared/sources/index.ts';
import { sourceSettings } from '../shared/sources/settings.ts';
import { STEAM_SEARCH_PAGE_SIZE } from '../shared/sources/steam.ts';
import type { FetchContext } from '../shared/sources/types.ts';
import { startMarketSimulator } from '../test/fakes/simulator/server.ts';
import { measureSales, type SalesFigures, salesChecks } from './ingest-sales.ts';
import {
  copyIn,
  copyOut,
  exitedEarly,
  onCleanup,
  positiveInt,
  printChecks,
  removeQueueKeysAtCleanup,
  repoRoot,
  reportQuietness,
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

const TARGETS = { copyShare: 0.5, steadyMs: 300, peakRssMb: 300, snapshotBrotliRatio: 1.6 };
/** The API's brotli quality for the full list before issue 19 (SNAPSHOT_BROTLI_QUALITY now). */
const BROTLI_QUALITY_BEFORE_ISSUE_19 = 5;
// Long enough for a full run plus the COPY baseline between two scheduled runs.
const RUN_INTERVAL_SECONDS = 10;
const STEADY_RUNS = positiveInt('BENCH_STEADY_RUNS', 3);
const RUN_TIMEOUT_MS = 120_000;
const COPY_RUNS = 3;
// COPY attempts discarded because a scheduled run overlapped them, at most, per source.
const COPY_RETRIES = 6;
// Part 2: one adapter fetch, one write, one snapshot build or one compression, at most.
const STEP_TIMEOUT_MS = 180_000;
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
type SteadyKind = (typeof STEADY_KINDS)[number];

const MARKETPLACES = ['csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals'] as const;
const TODAY_SOURCES = ['skinport', 'steam', 'csfloat'] as const;
/** Sources part 1 measures: one full-catalog body per run (steam and csfloat read pages). */
const WORKER_SOURCES = ['skinport', ...MARKETPLACES] as const;
type WorkerSource = (typeof WORKER_SOURCES)[number];
/** What each source's run asks the upstream for, fetched once before each steady run. */
const ENDPOINTS: Record<WorkerSource, { path: string; encoding: 'br' | 'gzip' }[]> = {
  skinport: [{ path: '/v1/items?app_id=730&currency=USD', encoding: 'br' }],
  csmarket: [{ path: '/api/v2/prices/class_instance/USD.json', encoding: 'gzip' }],
  lisskins: [{ path: '/market_export_json/csgo.json', encoding: 'gzip' }],
  waxpeer: [
    { path: '/v1/prices?game=csgo&minified=0', encoding: 'gzip' },
    { path: '/v1/prices/dopplers?game=csgo&phase=any', encoding: 'gzip' },
  ],
  whitemarket: [{ path: '/export/v1/prices/730.json', encoding: 'gzip' }],
  bitskins: [{ path: '/market/insell/730', encoding: 'gzip' }],
  csdeals: [{ path: '/API/IPricing/GetLowestPrices/v1?appid=730', encoding: 'gzip' }],
};
/** Rows a first run must write to count as a full catalog (marketplaces list 50-85 % of it). */
const MIN_ROWS: Record<WorkerSource, number> = {
  skinport: 30_000,
  csmarket: 10_000,
  lisskins: 10_000,
  waxpeer: 10_000,
  whitemarket: 10_000,
  bitskins: 10_000,
  csdeals: 10_000,
};

const ms = (value: number) => `${value.toFixed(0)} ms`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const count = (value: number) => value.toLocaleString('en-US');
const percent = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)} %` : 'n/a');

function benchSources(): WorkerSource[] {
  const raw = process.env.BENCH_SOURCES?.trim();
  if (!raw) return [...MARKETPLACES, 'skinport'];
  if (raw === 'none') return [];
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(WORKER_SOURCES as readonly string[]).includes(name)) {
      throw new Error(`BENCH_SOURCES names ${name}; part 1 measures ${WORKER_SOURCES.join(', ')} (steam and csfloat are written in part 2)`);
    }
  }
  return [...new Set(names)] as WorkerSource[];
}

async function withTimeout<T>(label: string, work: Promise<T>, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label} took more than ${timeoutMs / 1000} s`)), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

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
/** Each write step's median over `runs`, largest first: which step dominates. */
function stepMedians(runs: RunDone[]): string {
  const steps = [...new Set(runs.flatMap((run) => Object.keys(run.timings)))];
  return steps
    .map((step) => [step, median(runs.map((run) => run.timings[step] ?? 0))] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([step, value]) => `${step} ${value}`)
    .join(', ');
}

/** Empty target tables, and no trace of `sources` in price_sources or ingest_runs. */
async function cleanPrices(sql: Sql, sources: readonly string[]): Promise<void> {
  await sql.unsafe(`truncate ${TARGET_TABLES.join(', ')}`);
  await sql`delete from price_sources where name in ${sql(sources)}`;
  await sql`delete from ingest_runs where source in ${sql(sources)}`;
}

type Bench = {
  sql: Sql;
  dbUrl: string;
  redisUrl: string;
  simulatorUrl: string;
  /** The simulator's clock. */
  clock: { now: Date };
  names: CatalogNameMap;
};

type SourceResult = {
  source: WorkerSource;
  full: RunDone;
  fullWriteMs: number;
  copyMs: number[];
  copyDiscarded: number;
  rowCounts: string[];
  steady: Map<SteadyKind, RunDone[]>;
  memory: { rss: number; peak: number };
  samples: number[];
  peakByRun: number[];
  fetchParseMs: number;
  fetchedRows: number;
  mapMs: number;
  stagedRows: number;
  problems: string[];
};

/** Part 1 for one source: its own worker process, from empty target tables. */
async function measureSource(bench: Bench, source: WorkerSource): Promise<SourceResult> {
  const { sql } = bench;
  const upper = source.toUpperCase();
  const baseUrl = `${bench.simulatorUrl}/${source}`;
  // The simulator builds (and caches) the body of the current bucket now, before a run asks for it.
  const prefetch = async () => {
    for (const endpoint of ENDPOINTS[source]) {
      const response = await fetch(`${baseUrl}${endpoint.path}`, {
        headers: { 'accept-encoding': endpoint.encoding },
        decompress: false,
        signal: AbortSignal.timeout(60_000),
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`simulator answered ${response.status} for ${baseUrl}${endpoint.path}`);
    }
  };
  await cleanPrices(sql, [source]);
  await prefetch();

  const queuePrefix = `bench${process.pid}-${source}`;
  removeQueueKeysAtCleanup(bench.redisUrl, queuePrefix);
  const workerLog: WorkerLog = { runs: [], failures: [], problems: [] };
  const worker = spawnBun(
    ['workers/main.ts', 'ingest'],
    {
      DATABASE_URL: bench.dbUrl,
      REDIS_URL: bench.redisUrl,
      SOURCES: source,
      [`SOURCE_${upper}_URL`]: baseUrl,
      [`SOURCE_${upper}_INTERVAL_SECONDS`]: String(RUN_INTERVAL_SECONDS),
      // The always-on fx source (docs/design.md §14) reads the simulator, never the real ECB.
      FX_URL: `${bench.simulatorUrl}/fx`,
      LOG_LEVEL: process.env.BENCH_WORKER_LOG_LEVEL || 'info',
      QUEUE_PREFIX: queuePrefix,
    },
    (line) => watchWorkerLine(workerLog, line),
  );
  say(`${source}: ingest worker pid ${worker.proc.pid} (QUEUE_PREFIX ${queuePrefix}, SOURCES=${source}, interval ${RUN_INTERVAL_SECONDS} s)`);

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
  const waitForRuns = async (wanted: number) => {
    const deadline = performance.now() + RUN_TIMEOUT_MS;
    while (workerLog.runs.length < wanted) {
      if (exitedEarly(worker))
        throw new Error(`the ${source} ingest worker exited (${worker.proc.signalCode ?? `code ${worker.proc.exitCode}`}):\n${worker.output.last.join('\n')}`);
      if (workerLog.failures.length > 0) throw new Error(`a ${source} ingest run failed: ${workerLog.failures[0]}\n${worker.output.last.join('\n')}`);
      if (performance.now() > deadline)
        throw new Error(`${source} run ${wanted} did not finish within ${RUN_TIMEOUT_MS / 1000} s:\n${worker.output.last.join('\n')}`);
      await sleep(10);
    }
    return workerLog.runs[wanted - 1]!;
  };
  const claimedRuns = async () => (await sql<{ count: number }[]>`select count(*)::int as count from ingest_runs where source = ${source}`)[0]!.count;
  /** Waits for a run the worker has claimed but not finished, if any. */
  const settle = async () => {
    const [running] = await sql<{ count: number }[]>`select count(*)::int as count from ingest_runs where source = ${source} and status = 'running'`;
    if (running!.count > 0) await waitForRuns(workerLog.runs.length + 1);
  };

  try {
    // (1) The full catalog.
    const full = await waitForRuns(1);
    if (full.written < MIN_ROWS[source])
      throw new Error(`the first ${source} run wrote ${full.written} rows; the benchmark needs at least ${MIN_ROWS[source]}`);
    const fullWriteMs = writePhaseMs(full);
    say(
      `${source} full catalog: received ${full.received}, written ${full.written}; run ${ms(full.ms)} (${JSON.stringify(full.phases)}), write phase ${ms(fullWriteMs)} (${JSON.stringify(full.timings)})`,
    );

    // (2) Raw COPY of the very rows the run left in its target tables, back into those tables.
    await settle();
    const data = new Map<string, Buffer>();
    const rowCounts: string[] = [];
    for (const table of TARGET_TABLES) {
      data.set(table, await copyOut(sql, `select * from ${table}`));
      const [row] = await sql.unsafe<{ count: number }[]>(`select count(*)::int as count from ${table}`);
      rowCounts.push(`${table} ${row!.count}`);
    }
    const copyMs: number[] = [];
    let copyDiscarded = 0;
    while (copyMs.length < COPY_RUNS) {
      await settle();
      const claimedBefore = await claimedRuns();
      const doneBefore = workerLog.runs.length;
      const elapsed = await copyIn(sql, TARGET_TABLES, data);
      if ((await claimedRuns()) === claimedBefore && workerLog.runs.length === doneBefore) {
        copyMs.push(elapsed);
        continue;
      }
      copyDiscarded += 1;
      if (copyDiscarded > COPY_RETRIES) throw new Error(`${source}: ${copyDiscarded} COPY attempts overlapped a scheduled run`);
    }
    const copyMedianMs = median(copyMs);
    say(
      `${source} COPY of the same rows (${rowCounts.join(', ')}): ${copyMs.map((value) => ms(value)).join(', ')} (median ${ms(copyMedianMs)})${copyDiscarded ? `; ${copyDiscarded} attempt(s) overlapped a run and were repeated` : ''}`,
    );

    // (3) Steady state: runs one bucket apart, then two buckets apart.
    const steady = new Map<SteadyKind, RunDone[]>();
    for (const kind of STEADY_KINDS) {
      const runs: RunDone[] = [];
      for (let index = 0; index < STEADY_RUNS; index += 1) {
        // A run already under way fetched the old bucket: let it finish before the clock moves.
        await settle();
        bench.clock.now = new Date(bench.clock.now.getTime() + kind.buckets * SIMULATOR_BUCKET_MS);
        await prefetch();
        const run = await waitForRuns(workerLog.runs.length + 1);
        runs.push(run);
        say(
          `${source} steady run, ${kind.label}: received ${run.received}, skipped before staging ${run.skipped}, written ${run.written}, repeated ${run.repeated}, changed ${run.changed}; ` +
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

    // (4) The adapter's share, reproduced in this process (same simulator body): fetch + parse, then mapping.
    const quietLog = createLogger({ level: 'silent', name: 'bench' });
    const fetchStarted = performance.now();
    const fetched = await ADAPTERS[source].fetchSnapshot({
      baseUrl,
      log: quietLog,
      timeoutMs: 60_000,
      acquire: async () => undefined,
      names: [],
      now: () => new Date(),
    } satisfies FetchContext);
    const fetchParseMs = performance.now() - fetchStarted;
    const mapStarted = performance.now();
    const mapped = mapToCatalog(fetched.observations, bench.names);
    const mapMs = performance.now() - mapStarted;
    return {
      source,
      full,
      fullWriteMs,
      copyMs,
      copyDiscarded,
      rowCounts,
      steady,
      memory,
      samples,
      peakByRun,
      fetchParseMs,
      fetchedRows: fetched.observations.length,
      mapMs,
      stagedRows: mapped.staged.length,
      problems: workerLog.problems,
    };
  } finally {
    sampling = false;
    await stopChild(worker.proc);
    untrack(worker.proc);
  }
}

function sourceTable(result: SourceResult): string {
  const { full, fullWriteMs } = result;
  const copyMedianMs = median(result.copyMs);
  const withoutFetch = (run: RunDone) => run.ms - (run.phases.fetch ?? 0);
  const steadyRows = STEADY_KINDS.flatMap((kind) => {
    const runs = result.steady.get(kind)!;
    return [
      [
        `steady, ${kind.label}: rows new / repeated (freshness only) / prices changed`,
        runs.map((run) => `${percent(run.written, run.received)} / ${percent(run.repeated, run.received)} / ${percent(run.changed, run.received)}`).join(', '),
      ],
      ['  rows skipped by the worker before staging (same as it last wrote)', runs.map((run) => percent(run.skipped, run.received)).join(', ')],
      ['  write phase, each / median', `${runs.map((run) => ms(writePhaseMs(run))).join(', ')} / ${ms(median(runs.map(writePhaseMs)))}`],
      ['  write steps, median each (ms, largest first)', stepMedians(runs)],
      ['  run without its upstream request (map, write, requests), median', ms(median(runs.map(withoutFetch)))],
      ['  run (start → done), each / median', `${runs.map((run) => ms(run.ms)).join(', ')} / ${ms(median(runs.map((run) => run.ms)))}`],
    ];
  });
  return table([
    [`${result.source}: measure`, 'value'],
    ['full catalog: rows received / written (observations)', `${full.received} / ${full.written}`],
    [
      'full catalog: run (start → done)',
      `${ms(full.ms)} (fetch ${ms(full.phases.fetch ?? 0)}, map ${ms(full.phases.map ?? 0)}, write ${ms(full.phases.write ?? 0)})`,
    ],
    ['full catalog: write phase (writeIngestRun BEGIN → COMMIT)', ms(fullWriteMs)],
    ['  write steps (ms, largest first)', stepMedians([full])],
    [`raw COPY of the same rows into the same tables (median of ${COPY_RUNS})`, ms(copyMedianMs)],
    ['ratio: COPY time / write phase', percent(copyMedianMs, fullWriteMs)],
    ...steadyRows,
    [
      'worker peak RSS (VmHWM) / max of 50 ms samples / at the end',
      `${result.memory.peak.toFixed(1)} / ${Math.max(0, ...result.samples).toFixed(1)} / ${result.memory.rss.toFixed(1)} MB`,
    ],
    ["worker RSS, max of samples up to each run's end (full, then steady)", `${result.peakByRun.map((rss) => (rss ?? 0).toFixed(0)).join(' / ')} MB`],
    [
      'in the bench process, same body: fetch + parse / catalog mapping',
      `${ms(result.fetchParseMs)} (${result.fetchedRows} rows) / ${ms(result.mapMs)} (${result.stagedRows} staged)`,
    ],
  ]);
}

function sourceChecks(result: SourceResult): [string, boolean, string][] {
  const share = median(result.copyMs) / result.fullWriteMs;
  const peakMb = Math.max(result.memory.peak, ...result.samples);
  return [
    [
      `${result.source}: first run wrote a full catalog (≥ ${count(MIN_ROWS[result.source])} rows)`,
      result.full.written >= MIN_ROWS[result.source],
      `${result.full.written} rows`,
    ],
    [
      `${result.source}: full-catalog write phase ≥ ${TARGETS.copyShare * 100} % of a raw COPY of the same rows into the same tables`,
      share >= TARGETS.copyShare,
      `${(share * 100).toFixed(1)} %: COPY ${ms(median(result.copyMs))}, write ${ms(result.fullWriteMs)}`,
    ],
    ...STEADY_KINDS.map((kind): [string, boolean, string] => {
      const runs = result.steady.get(kind)!;
      const writeMedian = median(runs.map(writePhaseMs));
      return [
        `${result.source}: steady run, ${kind.label}: write phase < ${TARGETS.steadyMs} ms (median)`,
        writeMedian < TARGETS.steadyMs,
        `${ms(writeMedian)} (${stepMedians(runs)}); whole run ${ms(median(runs.map((run) => run.ms)))}, of which the upstream request ${ms(median(runs.map((run) => run.phases.fetch ?? 0)))}`,
      ];
    }),
    [`${result.source}: ingest worker peak RSS < ${TARGETS.peakRssMb} MB`, peakMb < TARGETS.peakRssMb, `${peakMb.toFixed(1)} MB`],
  ];
}

// ---------------------------------------------------------------------------------------------
// Part 2: the keyless snapshot, three sources against nine.

type SourceWrite = {
  source: SourceName;
  requests: number;
  observations: number;
  staged: number;
  written: number;
  fetchMs: number;
  writeMs: number;
  staleAfterSeconds: number;
};

type SnapshotFigures = {
  sources: readonly SourceName[];
  latestPrices: number;
  buildMs: number;
  phases: Record<string, number>;
  items: number;
  jsonBytes: number;
  brBytes: number;
  /** The same body at BROTLI_QUALITY_BEFORE_ISSUE_19. */
  brBytesServedBefore: number;
  gzipBytes: number;
  encodeMs: number;
  versions: number;
  versionsWithConsensus: number;
  itemsWithConsensus: number;
  consensusSources: number;
  outliers: Map<string, number>;
  /** A few outlier entries, for a look: name, version, source and price against the consensus. */
  outlierSamples: string[];
  /** The same list without docs/design.md §13's fields (consensus, bid, volume_7d, outlier), brotli q5 as above. */
  brBytesWithout13: number;
  entries: Map<string, number>;
  fresh: Map<string, number>;
};

/** Writes one full-catalog run of `source` from this process, as the worker would, at the simulated instant. */
async function writeSourceRun(bench: Bench, source: SourceName, catalogNames: string[]): Promise<SourceWrite> {
  const adapter = ADAPTERS[source];
  const baseUrl = `${bench.simulatorUrl}/${source}`;
  const env = Object.fromEntries(SOURCE_NAMES.map((name) => [`SOURCE_${name.toUpperCase()}_URL`, `${bench.simulatorUrl}/${name}`]));
  // As `npm start` configures a source pointed at a local simulator (interval, stale threshold, paging).
  const settings = sourceSettings(parseConfig(env), adapter);
  const at = bench.clock.now;
  const fetchStarted = performance.now();
  const fetched = await withTimeout(
    `${source} fetch`,
    adapter.fetchSnapshot({
      baseUrl,
      log: createLogger({ level: 'silent', name: 'bench' }),
      timeoutMs: 60_000,
      acquire: async () => undefined,
      // Steam prices from its search pages (docs/design.md §19): enough of them for the whole catalog in one run,
      // and no priceoverview (its names give sales, not prices).
      names: [],
      now: () => at,
      ...settings.paging,
      ...(source === 'steam' ? { maxPages: Math.ceil(catalogNames.length / STEAM_SEARCH_PAGE_SIZE) + 1 } : {}),
    }),
  );
  const fetchMs = performance.now() - fetchStarted;
  const mapped = mapToCatalog(fetched.observations, bench.names);
  const intervalMs = settings.intervalSeconds * 1000;
  const slot = Math.floor(at.getTime() / intervalMs);
  const runId = await claimIngestRun(bench.sql, source, slot, new Date(slot * intervalMs), at);
  if (!runId) throw new Error(`${source}: slot ${slot} already claimed`);
  const writeStarted = performance.now();
  const result = await withTimeout(
    `${source} write`,
    writeIngestRun(bench.sql, {
      runId,
      source,
      rows: mapped.staged,
      ingestedAt: at,
      staleAfterSeconds: settings.staleAfterSeconds,
      received: fetched.observations.length + fetched.skipped,
      skipped: fetched.skipped + mapped.unknownVersions,
      unknownNames: mapped.unknownNames.length + fetched.unknown,
    }),
  );
  const written: SourceWrite = {
    source,
    requests: fetched.requests,
    observations: fetched.observations.length,
    staged: mapped.staged.length,
    written: result.written,
    fetchMs,
    writeMs: performance.now() - writeStarted,
    staleAfterSeconds: settings.staleAfterSeconds,
  };
  say(
    `snapshot input ${source}: ${written.requests} request(s), ${written.observations} observations, ${written.staged} staged, ${written.written} written; ` +
      `fetch ${ms(fetchMs)}, write ${ms(written.writeMs)}; stale after ${settings.staleAfterSeconds} s`,
  );
  return written;
}

/** Builds the keyless snapshot at the simulated instant, compresses it as the API does, and reads it back. */
async function measureSnapshot(bench: Bench, sources: readonly SourceName[], staleAfter: Map<string, number>): Promise<SnapshotFigures> {
  const now = bench.clock.now;
  const [prices] = await bench.sql<{ count: number }[]>`select count(*)::int as count from latest_prices`;
  await bench.sql`analyze latest_prices`;
  const build = await withTimeout('buildPriceSnapshot', buildPriceSnapshot(bench.sql, now));
  if (build.unchanged) throw new Error('the snapshot build found an unchanged body');
  const record = await findNewestPriceSnapshot(bench.sql);
  if (!record || record.id !== build.id) throw new Error(`snapshot ${build.id} is not the newest stored one`);
  const encodeStarted = performance.now();
  const encoded = await withTimeout('encodeBody', encodeBody(record.body, { brotliQuality: SNAPSHOT_BROTLI_QUALITY }));
  const encodeMs = performance.now() - encodeStarted;
  const brBytesServedBefore = (await withTimeout('encodeBody', encodeBody(record.body, { brotliQuality: BROTLI_QUALITY_BEFORE_ISSUE_19 }))).br.length;

  // BENCH_SNAPSHOT_DUMP=<dir> keeps each built body (snapshot-<n>-sources.json) for a closer look.
  const dump = process.env.BENCH_SNAPSHOT_DUMP;
  if (dump) await Bun.write(join(dump, `snapshot-${sources.length}-sources.json`), record.body);

  const list = JSON.parse(record.body.toString('utf8')) as PublicPriceList;
  const figures: SnapshotFigures = {
    sources,
    latestPrices: prices!.count,
    buildMs: build.duration_ms,
    phases: build.phases_ms,
    items: list.item_count,
    jsonBytes: record.body.length,
    brBytes: encoded.br.length,
    brBytesServedBefore,
    gzipBytes: encoded.gzip.length,
    encodeMs,
    versions: 0,
    versionsWithConsensus: 0,
    itemsWithConsensus: 0,
    consensusSources: 0,
    outliers: new Map(),
    outlierSamples: [],
    brBytesWithout13: 0,
    entries: new Map(),
    fresh: new Map(),
  };
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const nowMs = now.getTime();
  for (const item of list.items) {
    const versions: PublicVersionPrices[] = [];
    if (Object.keys(item.sources).length > 0) versions.push(item);
    versions.push(...Object.values(item.versions ?? {}));
    let withConsensus = false;
    for (const version of versions) {
      figures.versions += 1;
      if (version.consensus) {
        figures.versionsWithConsensus += 1;
        figures.consensusSources += version.consensus.sources;
        withConsensus = true;
      }
      for (const [name, price] of Object.entries(version.sources)) {
        bump(figures.entries, name);
        if (price.outlier) {
          bump(figures.outliers, name);
          if (figures.outlierSamples.length < 6) {
            const versionName = version === item ? 'default' : Object.entries(item.versions ?? {}).find(([, other]) => other === version)?.[0];
            figures.outlierSamples.push(
              `${item.market_hash_name} [${versionName}] ${name} ${price.price} (consensus ${version.consensus?.price}, min ${version.min}, max ${version.max})`,
            );
          }
        }
        // The list's own rule: whole seconds since source_time within the source's threshold.
        if (Math.max(0, Math.floor((nowMs - Date.parse(price.source_time)) / 1000)) <= (staleAfter.get(name) ?? Number.POSITIVE_INFINITY))
          bump(figures.fresh, name);
      }
    }
    if (withConsensus) figures.itemsWithConsensus += 1;
  }
  // For reference: the list as it was before docs/design.md §13 (no consensus, bid, volume_7d or outlier), same encoding.
  const strip = (prices: PublicVersionPrices) => {
    delete (prices as Partial<PublicVersionPrices>).consensus;
    for (const price of Object.values(prices.sources)) {
      const entry = price as Partial<typeof price>;
      delete entry.bid;
      delete entry.volume_7d;
      delete entry.outlier;
    }
  };
  for (const item of list.items) {
    strip(item);
    for (const version of Object.values(item.versions ?? {})) strip(version);
  }
  figures.brBytesWithout13 = (await withTimeout('encodeBody', encodeBody(JSON.stringify(list), { brotliQuality: SNAPSHOT_BROTLI_QUALITY }))).br.length;
  say(
    `snapshot of ${sources.length} sources: ${count(figures.items)} items, ${count(figures.latestPrices)} latest prices; build ${ms(figures.buildMs)} (${JSON.stringify(figures.phases)}); ` +
      `JSON ${kib(figures.jsonBytes)}, brotli q${SNAPSHOT_BROTLI_QUALITY} ${kib(figures.brBytes)}, gzip ${kib(figures.gzipBytes)} (encodeBody ${ms(encodeMs)})`,
  );
  return figures;
}

async function measureSnapshots(bench: Bench, catalogNames: string[]): Promise<{ three: SnapshotFigures; nine: SnapshotFigures; writes: SourceWrite[] }> {
  await cleanPrices(bench.sql, SOURCE_NAMES);
  await bench.sql`delete from price_snapshots`;
  // One pinned instant for every write and both builds: freshness is judged as of it.
  bench.clock.now = new Date(Math.ceil((bench.clock.now.getTime() + 1) / SIMULATOR_BUCKET_MS) * SIMULATOR_BUCKET_MS + 5_000);
  const writes: SourceWrite[] = [];
  for (const source of TODAY_SOURCES) writes.push(await writeSourceRun(bench, source, catalogNames));
  const staleAfter = new Map(writes.map((write) => [write.source as string, write.staleAfterSeconds]));
  const three = await measureSnapshot(bench, TODAY_SOURCES, staleAfter);
  for (const source of MARKETPLACES) writes.push(await writeSourceRun(bench, source, catalogNames));
  for (const write of writes) staleAfter.set(write.source, write.staleAfterSeconds);
  const nine = await measureSnapshot(bench, SOURCE_NAMES, staleAfter);
  return { three, nine, writes };
}

function snapshotTable(three: SnapshotFigures, nine: SnapshotFigures, writes: SourceWrite[], steamNames: number): string {
  const both = (value: (figures: SnapshotFigures) => string) => [value(three), value(nine)];
  const bySource = (figures: SnapshotFigures, map: Map<string, number>) => figures.sources.map((name) => `${name} ${count(map.get(name) ?? 0)}`).join(', ');
  const outlierTotal = (figures: SnapshotFigures) => [...figures.outliers.values()].reduce((sum, value) => sum + value, 0);
  const entryTotal = (figures: SnapshotFigures) => [...figures.entries.values()].reduce((sum, value) => sum + value, 0);
  const rows: string[][] = [
    ['keyless snapshot (GET /v1/prices)', `${three.sources.length} sources`, `${nine.sources.length} sources`],
    ['latest prices (rows read)', ...both((f) => count(f.latestPrices))],
    ['items in the list', ...both((f) => count(f.items))],
    ['buildPriceSnapshot (query+JSON / join+hash / store)', ...both((f) => `${ms(f.buildMs)} (${f.phases.query} / ${f.phases.assemble} / ${f.phases.store})`)],
    ['body: JSON', ...both((f) => `${count(f.jsonBytes)} B (${mib(f.jsonBytes)})`)],
    [`body: brotli q${SNAPSHOT_BROTLI_QUALITY} (the API's)`, ...both((f) => `${count(f.brBytes)} B (${mib(f.brBytes)})`)],
    [
      `body: brotli q${BROTLI_QUALITY_BEFORE_ISSUE_19} (the API's before issue 19)`,
      ...both((f) => `${count(f.brBytesServedBefore)} B (${mib(f.brBytesServedBefore)})`),
    ],
    ['body: gzip -6', ...both((f) => `${count(f.gzipBytes)} B (${mib(f.gzipBytes)})`)],
    ['encodeBody (brotli + gzip, thread pool, wall)', ...both((f) => ms(f.encodeMs))],
    [
      'versions with a non-null consensus / all versions',
      ...both((f) => `${count(f.versionsWithConsensus)} / ${count(f.versions)} (${percent(f.versionsWithConsensus, f.versions)})`),
    ],
    ['items with a non-null consensus (any version) / items', ...both((f) => `${count(f.itemsWithConsensus)} / ${count(f.items)}`)],
    [
      'consensus sources per version with one, mean',
      ...both((f) => (f.versionsWithConsensus ? (f.consensusSources / f.versionsWithConsensus).toFixed(2) : 'n/a')),
    ],
    [
      `for reference: brotli q${SNAPSHOT_BROTLI_QUALITY} of the same list without docs/design.md §13's fields`,
      ...both((f) => `${count(f.brBytesWithout13)} B (${mib(f.brBytesWithout13)})`),
    ],
    [
      'outlier source entries / all source entries',
      ...both((f) => `${count(outlierTotal(f))} / ${count(entryTotal(f))} (${percent(outlierTotal(f), entryTotal(f))})`),
    ],
  ];
  const lines = [
    table(rows),
    '',
    `nine / three sources: JSON ${(nine.jsonBytes / three.jsonBytes).toFixed(2)} ×, brotli ${(nine.brBytes / three.brBytes).toFixed(2)} ×, gzip ${(nine.gzipBytes / three.gzipBytes).toFixed(2)} ×, build ${(nine.buildMs / three.buildMs).toFixed(2)} ×`,
  ];
  lines.push(
    `steam priced every catalog name (${count(steamNames)} names) from its search pages of ${STEAM_SEARCH_PAGE_SIZE}; csfloat: pages of 1000, at most 60`,
  );
  lines.push(
    '',
    table([
      ['source (nine-source build)', 'requests', 'observations', 'written', 'fetch', 'write', 'stale after', 'fresh at build', 'outliers'],
      ...writes.map((write) => [
        write.source,
        count(write.requests),
        count(write.observations),
        count(write.written),
        ms(write.fetchMs),
        ms(write.writeMs),
        `${write.staleAfterSeconds} s`,
        `${count(nine.fresh.get(write.source) ?? 0)} (${percent(nine.fresh.get(write.source) ?? 0, nine.entries.get(write.source) ?? 0)})`,
        count(nine.outliers.get(write.source) ?? 0),
      ]),
    ]),
  );
  lines.push(`three-source build: fresh at build ${bySource(three, three.fresh)}; outliers ${bySource(three, three.outliers)}`);
  lines.push(
    `nine-source brotli body against the three-source one without docs/design.md §13's fields (consensus, bid, volume_7d): ${(nine.brBytes / three.brBytesWithout13).toFixed(2)} ×`,
  );
  for (const figures of [three, nine]) {
    if (figures.outlierSamples.length > 0)
      lines.push(
        `outliers (${figures.sources.length} sources), first ${figures.outlierSamples.length}:`,
        ...figures.outlierSamples.map((sample) => `  ${sample}`),
      );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  // The workers' queues and request budgets live under each worker's own QUEUE_PREFIX.
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const sources = benchSources();
  const snapshotPart = process.env.BENCH_SNAPSHOT !== '0';

  // Scratch database, schema, the real catalog.
  const db = await scratchDatabase();
  const sql = createSql(db.url, { max: 4, application: 'bench-ingest' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const catalogStarted = performance.now();
  const catalog = generateCatalog();
  const synced = await syncCatalog(sql, catalog);
  const variants = catalog.length + catalog.reduce((sum, item) => sum + item.phases.length, 0);
  say(
    `catalog: ${synced.total} items (${catalog.reduce((sum, item) => sum + item.phases.length, 0)} phase versions) synced in ${ms(performance.now() - catalogStarted)}`,
  );

  // The simulator over the real catalog, its clock pinned (moved by hand).
  const clock = { now: new Date() };
  const simulator = startMarketSimulator({ port: 0, hostname: '127.0.0.1', seed: 1, now: () => clock.now, items: catalog });
  onCleanup(() => simulator.stop());
  const skinportUrl = `${simulator.url}/skinport/v1/items?app_id=730&currency=USD`;
  const warm = await fetch(skinportUrl, { headers: { 'accept-encoding': 'br' }, decompress: false });
  const compressed = await warm.arrayBuffer();
  if (warm.status !== 200) throw new Error(`simulator answered ${warm.status} for ${skinportUrl}`);
  say(`simulator ${simulator.url}: skinport snapshot ${mib(compressed.byteLength)} br; catalog variants (items and phases) ${count(variants)}`);

  const bench: Bench = { sql, dbUrl: db.url, redisUrl, simulatorUrl: simulator.url, clock, names: await loadCatalogNameMap(sql) };
  await reportQuietness();

  // Part 1: one worker per source.
  say(`part 1: ${sources.length ? sources.join(', ') : 'skipped (BENCH_SOURCES=none)'}`);
  const results: SourceResult[] = [];
  for (const source of sources) results.push(await measureSource(bench, source));

  // Part 2: the keyless snapshot, three sources against nine.
  const catalogNames = catalog.map((item) => item.market_hash_name);
  let snapshots: Awaited<ReturnType<typeof measureSnapshots>> | undefined;
  if (snapshotPart) {
    say('part 2: keyless snapshot, skinport + steam + csfloat, then all nine sources');
    snapshots = await measureSnapshots(bench, catalogNames);
  }

  // Part 3: sales windows (bench/ingest-sales.ts); the keyed read needs part 2's latest prices.
  let sales: SalesFigures | undefined;
  if (process.env.BENCH_SALES !== '0') {
    say('part 3: sales windows for the full catalog');
    sales = await measureSales({ sql, dbUrl: db.url, simulatorUrl: simulator.url, clock, names: bench.names, read: snapshotPart });
  }

  // Report.
  process.stdout.write('\n');
  for (const result of results) {
    process.stdout.write(`${sourceTable(result)}\n\n`);
    if (result.copyDiscarded > 0)
      process.stdout.write(`(${result.source}: ${result.copyDiscarded} COPY attempt(s) overlapped a scheduled run and were repeated)\n\n`);
    if (result.problems.length > 0) {
      say(
        `warning: the ${result.source} worker logged ${result.problems.length} warning/error/unparsed line(s); the last ones:\n${result.problems.slice(-5).join('\n')}`,
      );
    }
  }
  if (snapshots) process.stdout.write(`${snapshotTable(snapshots.three, snapshots.nine, snapshots.writes, catalogNames.length)}\n\n`);

  const checks = results.flatMap(sourceChecks);
  if (snapshots) {
    // What a client downloads: the nine-source list as the API serves it now against the three-source
    // list as it was served before issue 19 (brotli q5). The same-quality ratio is printed beside it.
    const ratio = snapshots.nine.brBytes / snapshots.three.brBytesServedBefore;
    checks.push([
      `keyless snapshot, nine sources with consensus as served (brotli q${SNAPSHOT_BROTLI_QUALITY}) < ${TARGETS.snapshotBrotliRatio} × the three-source one as served before (q${BROTLI_QUALITY_BEFORE_ISSUE_19})`,
      ratio < TARGETS.snapshotBrotliRatio,
      `${ratio.toFixed(3)} ×: ${kib(snapshots.nine.brBytes)} against ${kib(snapshots.three.brBytesServedBefore)}; ` +
        `at one quality: q${SNAPSHOT_BROTLI_QUALITY} ${(snapshots.nine.brBytes / snapshots.three.brBytes).toFixed(3)} ×, ` +
        `q${BROTLI_QUALITY_BEFORE_ISSUE_19} ${(snapshots.nine.brBytesServedBefore / snapshots.three.brBytesServedBefore).toFixed(3)} ×`,
    ]);
  }
  if (sales) checks.push(...salesChecks(sales));
  printChecks(checks);
}

await runBench(main);
