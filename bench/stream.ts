/**
 * Price stream benchmark: `npm run bench:stream` (issue 21, docs/design.md §15).
 *
 * In a scratch database with the real catalog, one API process (production mode, its own
 * QUEUE_PREFIX, so its own Redis stream) holds BENCH_STREAM_CLIENTS (default 10 000) keyed
 * GET /v2/prices/stream connections opened by a load generator in its own process (this file with
 * `--clients`). This process then writes ingest runs with writeIngestRun and the ingest pool's
 * relay (it appends to the log in the transaction and relays right after the commit), as a worker does, and times each run from its commit (the moment the relay is
 * called) to each event's arrival at each client:
 *   - a full-catalog run (every catalog item priced, from empty: every row is a change);
 *   - BENCH_STREAM_STEADY_RUNS (3) steady runs, each moving about one price in ten.
 *
 * The client mix: BENCH_STREAM_FIREHOSE (50) clients take every change (no filter, as the keyless
 * stream does); the rest each watch BENCH_STREAM_WATCH (20) catalog ids (`catalog_id` repeated), as
 * trading bots and price pages do. Every client's change count per run is checked against what its
 * filter should have received (nothing lost, nothing repeated); a client the API cuts off for being
 * slow resumes with Last-Event-ID, as EventSource would. Why not 10 000 unfiltered clients: a
 * full-catalog run (~37 650 changes) is ~6 MB of events per unfiltered client and a steady run
 * ~0.6 MB, so 10 000 of them would be ~60 GB / 6 GB through loopback into the load generators on
 * this 2-core machine, which also runs the API, Postgres and Redis; the load generators already
 * spend about twice the API's CPU reading the mix below. They are BENCH_STREAM_GENERATORS (2)
 * processes of this file (`--clients`), each opening its share over plain sockets (node:net, the
 * chunked body decoded by hand: a fetch client costs more CPU per event than the API does).
 *
 * Printed: commit-to-client latency p50/p99 per run kind (target p99 < 1 s for the steady runs),
 * events and changes delivered per second, the API's CPU per run and its RSS before the clients,
 * with them connected and after the runs (target: growth < 300 MB for the 10 000), and the loss check.
 *
 * Afterwards, when bench/inventory-watch.ts exists, its exported `benchInventoryWatch()` runs too
 * (BENCH_STREAM_ONLY=1 skips it): `npm run bench:stream` prints the issue's live-feature figures.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { createLogger } from '../shared/platform/logger.ts';
import { createRequestRedis } from '../shared/platform/redis.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../shared/prices/ingest.ts';
import { compareStreamIds, type PriceStreamEvent, PriceStreamRelay, priceStreamKey } from '../shared/prices/stream.ts';
import {
  cpuMsOf,
  freePort,
  onCleanup,
  positiveInt,
  printChecks,
  removeQueueKeysAtCleanup,
  reportQuietness,
  rssOf,
  runBench,
  say,
  sleep,
  spawnApi,
  table,
  track,
  waitReady,
} from './lib.ts';
import { catalogDatabase, keyAndPricedItems } from './price-fixtures.ts';

const CLIENTS = positiveInt('BENCH_STREAM_CLIENTS', 10_000);
const FIREHOSE = Math.min(CLIENTS, positiveInt('BENCH_STREAM_FIREHOSE', 50));
const WATCH = positiveInt('BENCH_STREAM_WATCH', 20);
const STEADY_RUNS = positiveInt('BENCH_STREAM_STEADY_RUNS', 3);
const GENERATORS = positiveInt('BENCH_STREAM_GENERATORS', 2);
/**
 * BENCH_STREAM_PIN=1 (with taskset): the API on CPU 0, the load generators on CPU 1, Postgres and
 * Redis floating. The nearest this one machine comes to clients on another machine: the API's
 * fan-out then does not wait for the generators' parsing.
 */
const PIN = process.env.BENCH_STREAM_PIN === '1' && Bun.which('taskset') !== null;
const TARGETS = { steadyP99Ms: 1_000, rssGrowthMb: 300 };
const SOURCE = 'skinport';
const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Load generator (`bun bench/stream.ts --clients <config.json>`): opens the streams, counts each
// client's changes per run, and records each event's arrival time; reports on `report` from stdin.

type ClientsConfig = { url: string; key: string; filters: (string[] | null)[] };
type ClientsReport = {
  connected: number;
  failed: number;
  /** Streams the server ended (a client cut off for being slow), and reconnections that resumed them. */
  ended: number;
  resumed: number;
  /** Per client: run id → changes received. */
  counts: Record<string, number>[];
  /** Per run id: arrival times (ms since epoch) of every event, over every client. */
  arrivals: Record<string, number[]>;
  /** Events that repeated an id the client already had. */
  duplicates: number;
};

async function clientsMain(configPath: string): Promise<void> {
  const config = (await Bun.file(configPath).json()) as ClientsConfig;
  const report: ClientsReport = { connected: 0, failed: 0, ended: 0, resumed: 0, counts: [], arrivals: {}, duplicates: 0 };
  let stopping = false;
  const arrivals = new Map<string, number[]>();
  const RUN_ID = '"run_id":"';
  const CHANGE = '"catalog_id":"';

  const target = new URL(config.url);

  /**
   * One stream over a plain socket (node:net): an HTTP/1.1 GET, then the chunked body decoded by
   * hand, so the generator's CPU goes to the events rather than to a fetch client's machinery.
   * Resolves with the status code, then calls `onText` with the body's text as it arrives, and
   * `onEnd` when the server closes or resets the connection.
   */
  function rawStream(
    path: string,
    headers: Record<string, string>,
    onText: (text: string, at: number) => void,
  ): Promise<{ status: number; ended: Promise<void> }> {
    return new Promise((resolve) => {
      const socket = net.connect(Number(target.port), target.hostname);
      const decoder = new StringDecoder('utf8');
      let head: Buffer | null = Buffer.alloc(0) as Buffer;
      let pending: Buffer = Buffer.alloc(0);
      let chunkLeft = 0; // payload bytes still due in the current chunk, then its CRLF
      let afterChunk = 0;
      let resolveEnded!: () => void;
      const ended = new Promise<void>((done) => (resolveEnded = done));
      let settled = false;
      const finish = () => {
        if (!settled) {
          settled = true;
          resolve({ status: 0, ended });
        }
        resolveEnded();
      };
      socket.on('error', finish);
      socket.on('close', finish);
      socket.on('connect', () => {
        const lines = Object.entries(headers)
          .map(([name, value]) => `${name}: ${value}\r\n`)
          .join('');
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\n${lines}\r\n`);
      });
      socket.on('data', (data: Buffer) => {
        const at = now();
        let bytes = data;
        if (head !== null) {
          head = Buffer.concat([head, bytes]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) return;
          const status = Number(head.subarray(9, 12).toString());
          bytes = head.subarray(end + 4);
          head = null;
          settled = true;
          resolve({ status, ended });
          if (status !== 200) {
            socket.destroy();
            return;
          }
        }
        let text = '';
        pending = pending.length > 0 ? Buffer.concat([pending, bytes]) : bytes;
        let offset = 0;
        while (offset < pending.length) {
          if (afterChunk > 0) {
            const skip = Math.min(afterChunk, pending.length - offset);
            afterChunk -= skip;
            offset += skip;
            continue;
          }
          if (chunkLeft > 0) {
            const take = Math.min(chunkLeft, pending.length - offset);
            text += decoder.write(pending.subarray(offset, offset + take));
            chunkLeft -= take;
            offset += take;
            if (chunkLeft === 0) afterChunk = 2;
            continue;
          }
          const lineEnd = pending.indexOf('\r\n', offset);
          if (lineEnd < 0) break;
          chunkLeft = Number.parseInt(pending.subarray(offset, lineEnd).toString('latin1'), 16);
          offset = lineEnd + 2;
          if (chunkLeft === 0) {
            socket.end();
            break;
          }
        }
        pending = offset < pending.length ? Buffer.from(pending.subarray(offset)) : Buffer.alloc(0);
        if (text) onText(text, at);
      });
    });
  }

  /**
   * One client: counts its changes per run, and like any SSE client resumes with Last-Event-ID when
   * the server ends its stream (a client cut off for being slow is expected to).
   */
  async function client(index: number, filter: string[] | null): Promise<void> {
    const counts: Record<string, number> = {};
    report.counts[index] = counts;
    const query = filter ? `?${filter.map((id) => `catalog_id=${id}`).join('&')}` : '';
    let lastId: string | null = null;
    for (let attempt = 0; ; attempt += 1) {
      const headers: Record<string, string> = { 'x-api-key': config.key, accept: 'text/event-stream' };
      if (lastId) headers['last-event-id'] = lastId;
      let buffer = '';
      const { status, ended } = await rawStream(`/v2/prices/stream${query}`, headers, (text, at) => {
        buffer += text;
        let start = 0;
        let end: number;
        while ((end = buffer.indexOf('\n\n', start)) >= 0) {
          const block = buffer.slice(start, end);
          start = end + 2;
          // `id:` opens an event's block, and follows `retry:` or a heartbeat comment when it moves the position alone.
          let idAt = block.startsWith('id: ') ? 0 : block.indexOf('\nid: ');
          if (idAt < 0) continue;
          if (idAt > 0) idAt += 1;
          const lineEnd = block.indexOf('\n', idAt);
          const id = block.slice(idAt + 4, lineEnd < 0 ? block.length : lineEnd);
          if (block.includes('event: prices')) {
            if (lastId !== null && compareStreamIds(id, lastId) <= 0) {
              report.duplicates += 1;
              continue;
            }
            const runAt = block.indexOf(RUN_ID) + RUN_ID.length;
            const runId = block.slice(runAt, runAt + 36);
            let changes = 0;
            for (let position = block.indexOf(CHANGE); position >= 0; position = block.indexOf(CHANGE, position + CHANGE.length)) changes += 1;
            counts[runId] = (counts[runId] ?? 0) + changes;
            let times = arrivals.get(runId);
            if (!times) arrivals.set(runId, (times = []));
            times.push(at);
          }
          lastId = id;
        }
        buffer = buffer.slice(start);
      });
      if (status !== 200) {
        if (attempt === 0) report.failed += 1;
        return;
      }
      if (attempt === 0) report.connected += 1;
      else report.resumed += 1;
      await ended;
      if (stopping) return;
      // Ended by the server (cut off for being slow): resume below.
      report.ended += 1;
    }
  }

  const input = console[Symbol.asyncIterator]();
  while ((await input.next()).value?.trim() !== 'connect');
  // Opened in waves, so the API's accept queue and key lookups are not one burst of 10 000.
  const WAVE = 250;
  for (let start = 0; start < config.filters.length; start += WAVE) {
    const wave = config.filters.slice(start, start + WAVE).map((filter, offset) => client(start + offset, filter));
    void Promise.all(wave);
    const target = Math.min(config.filters.length, start + WAVE);
    const deadline = Date.now() + 30_000;
    while (report.connected + report.failed < target && Date.now() < deadline) await sleep(10);
  }
  process.stdout.write(`ready ${report.connected} ${report.failed}\n`);
  for (let next = await input.next(); !next.done; next = await input.next()) {
    const line = next.value as string;
    if (line.trim() === 'status')
      process.stdout.write(`status ${JSON.stringify(Object.fromEntries([...arrivals].map(([run, times]) => [run, times.length])))}\n`);
    if (line.trim() !== 'report') continue;
    stopping = true;
    report.arrivals = Object.fromEntries(arrivals);
    const path = `${configPath}.report.json`;
    await Bun.write(path, JSON.stringify(report));
    process.stdout.write(`report ${path}\n`);
    process.exit(0);
  }
}

// ---------------------------------------------------------------------------------------------
// The bench

/** The ingest side's relay, timed: writeIngestRun calls it right after its commit, so that call is the commit instant. */
class TimedRelay extends PriceStreamRelay {
  calledAt = 0;
  override relaySafely(): Promise<number | null> {
    this.calledAt = now();
    return super.relaySafely();
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const mb = (value: number) => `${value.toFixed(0)} MB`;
const msText = (value: number) => `${value.toFixed(0)} ms`;

/** Cumulative counts of the API's cs2_price_stream_fanout_seconds histogram, by upper bound (s). */
type Buckets = Map<number, number>;

async function fanOutBuckets(apiUrl: string): Promise<Buckets> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  const buckets: Buckets = new Map();
  for (const match of text.matchAll(/^cs2_price_stream_fanout_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)) {
    buckets.set(match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]), Number(match[2]));
  }
  return buckets;
}

/** The bucket bound under which `share` of the entries fanned out between two scrapes fell (an upper bound). */
function bucketQuantile(before: Buckets, after: Buckets, share: number): string {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Number.POSITIVE_INFINITY) ?? 0) - (before.get(Number.POSITIVE_INFINITY) ?? 0);
  if (total <= 0) return 'n/a';
  for (const bound of bounds) {
    if ((after.get(bound)! - (before.get(bound) ?? 0)) / total >= share) return Number.isFinite(bound) ? `≤ ${bound * 1000} ms` : '> 30 s';
  }
  return 'n/a';
}

async function streamBench(): Promise<boolean> {
  await reportQuietness();
  const { url: databaseUrl, sql } = await catalogDatabase('bench-stream');
  const redisUrl = process.env.REDIS_URL!;
  const queuePrefix = `benchstream${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const { key } = await keyAndPricedItems(sql, 'bench-stream', new Date(), 0);
  const catalog = (await sql<{ catalog_id: string }[]>`select catalog_id from catalog_items order by catalog_id`).map((row) => row.catalog_id);
  say(`catalog: ${catalog.length} items; ${CLIENTS} clients: ${FIREHOSE} unfiltered, ${CLIENTS - FIREHOSE} watching ${WATCH} catalog ids each`);
  say(
    PIN
      ? 'pinned: the API on CPU 0, the load generators on CPU 1 (Postgres and Redis float)'
      : 'not pinned: the API, the load generators, Postgres and Redis share the cores (BENCH_STREAM_PIN=1 separates the first two)',
  );
  say(
    `why not ${CLIENTS} unfiltered: each would read ~6 MB per full-catalog run (~0.6 MB per steady run), ${((CLIENTS * 6) / 1000).toFixed(0)} GB in all, ` +
      `parsed by ${GENERATORS} load-generator process(es) sharing these 2 cores with the API, Postgres and Redis (BENCH_STREAM_FIREHOSE sets the count)`,
  );

  // Bun's fetch opens at most 256 connections unless told otherwise; 10 000 sockets per process need a higher descriptor limit.
  const hardLimit = Number((await Bun.$`sh -c 'ulimit -Hn'`.text()).trim()) || 20_000;
  const fdLimit = Math.min(hardLimit, 65_536);
  if (fdLimit < CLIENTS + 1_000) say(`warning: the descriptor limit (${fdLimit}) is below ${CLIENTS} clients plus headroom; some connections will fail`);

  const port = await freePort();
  const api = spawnApi(port, { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, QUEUE_PREFIX: queuePrefix, PRICE_CACHE_MS: '0' });
  const apiUrl = `http://127.0.0.1:${port}`;
  await waitReady('API', api, `${apiUrl}/v2/health`);
  // The API was started by spawnApi with the inherited limit; raise it for the process (prlimit) when the tool exists.
  if (Bun.which('prlimit')) await Bun.$`prlimit --pid ${api.proc.pid} --nofile=${fdLimit}:${fdLimit}`.quiet().nothrow();
  const apiPid = api.proc.pid;
  if (PIN) await Bun.$`taskset -a -p -c 0 ${apiPid}`.quiet();
  // A first stream starts the API's reader; its RSS before the clients is the baseline.
  await (await fetch(`${apiUrl}/v2/prices/stream`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(500) }).catch(() => null))?.body
    ?.cancel()
    .catch(() => undefined);
  await sleep(500);
  const baseline = await rssOf(apiPid);

  // Filters: deterministic pseudo-random catalog ids per client.
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const filters: (string[] | null)[] = Array.from({ length: CLIENTS }, (_, index) =>
    index < FIREHOSE ? null : Array.from({ length: WATCH }, () => catalog[Math.floor(random() * catalog.length)]!),
  );
  // The clients are split over GENERATORS processes, so reading them is not one core's work.
  const generators: { from: number; configPath: string }[] = [];
  for (let index = 0; index < GENERATORS; index += 1) {
    const from = Math.floor((index * CLIENTS) / GENERATORS);
    const to = Math.floor(((index + 1) * CLIENTS) / GENERATORS);
    const configPath = join(process.env.TMPDIR ?? '/tmp', `bench-stream-${process.pid}-${index}.json`);
    onCleanup(() => Bun.$`rm -f ${configPath} ${configPath}.report.json`.quiet().nothrow());
    await Bun.write(configPath, JSON.stringify({ url: apiUrl, key, filters: filters.slice(from, to) } satisfies ClientsConfig));
    generators.push({ from, configPath });
  }
  const loadGenerators = await Promise.all(
    generators.map(async ({ from, configPath }) => {
      const proc = track(
        Bun.spawn(
          [
            'sh',
            '-c',
            `ulimit -n ${fdLimit} 2>/dev/null; exec ${PIN ? 'taskset -c 1 ' : ''}"$0" "$@"`,
            process.execPath,
            join(import.meta.dir, 'stream.ts'),
            '--clients',
            configPath,
          ],
          {
            env: { ...process.env },
            stdin: 'pipe',
            stdout: 'pipe',
            stderr: 'inherit',
          },
        ),
      );
      const lines: string[] = [];
      const waiters: (() => void)[] = [];
      void (async () => {
        const decoder = new TextDecoder();
        let buffer = '';
        for await (const chunk of proc.stdout) {
          buffer += decoder.decode(chunk, { stream: true });
          let nl: number;
          while ((nl = buffer.indexOf('\n')) >= 0) {
            lines.push(buffer.slice(0, nl));
            buffer = buffer.slice(nl + 1);
            for (const wake of waiters.splice(0)) wake();
          }
        }
      })();
      const nextLine = async (prefix: string, timeoutMs: number): Promise<string> => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const index = lines.findIndex((line) => line.startsWith(prefix));
          if (index >= 0) return lines.splice(index, 1)[0]!;
          if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`a load generator did not say "${prefix}" (exit ${proc.exitCode})`);
          await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), sleep(200)]);
        }
      };
      const send = (line: string) => {
        proc.stdin.write(`${line}\n`);
        proc.stdin.flush();
      };
      return { from, proc, nextLine, send };
    }),
  );
  const generatorCpuMs = async () => (await Promise.all(loadGenerators.map(({ proc }) => cpuMsOf(proc.pid)))).reduce((sum, ms) => sum + ms, 0);

  const connectStarted = performance.now();
  let connected = 0;
  let failed = 0;
  // One generator at a time, so each opens its streams in waves of its own.
  for (const generator of loadGenerators) {
    generator.send('connect');
    const [, opened, refused] = (await generator.nextLine('ready', 600_000)).split(' ').map(Number) as [number, number, number];
    connected += opened;
    failed += refused;
  }
  say(`${connected} streams open (${failed} failed) from ${GENERATORS} load-generator processes in ${msText(performance.now() - connectStarted)}`);
  await sleep(1_000);
  const withClients = await rssOf(apiPid);

  // The ingest side, as the worker runs it.
  const commands = createRequestRedis(redisUrl, 'bench-stream');
  onCleanup(() => commands.disconnect());
  while (commands.status !== 'ready') await sleep(20);
  const relay = new TimedRelay(sql, commands, priceStreamKey(queuePrefix), 100_000, createLogger({ level: 'warn', name: 'bench-stream' }));
  // The scratch database's log so far, relayed before the clients' first measured run.
  await relay.relay();
  const committedAt = new Map<string, number>();
  const changedIds = new Map<string, string[]>();
  let slot = 0;
  const price = (index: number, generation: number) => (0.03 + ((index * 7_919 + generation * 104_729) % 250_000) / 100).toFixed(2);
  const catalogIndex = new Map(catalog.map((id, index) => [id, index]));
  const runOnce = async (kind: string, items: string[], generation: number): Promise<{ kind: string; runId: string }> => {
    slot += 1;
    const at = new Date();
    const runId = (await claimIngestRun(sql, SOURCE, slot, at))!;
    const rows: StagedObservation[] = items.map((catalogId) => ({
      catalog_id: catalogId,
      version: 'default',
      price: price(catalogIndex.get(catalogId)!, generation),
      median_price: null,
      quantity: 1,
      source_time: at,
    }));
    const result = await writeIngestRun(sql, {
      runId,
      source: SOURCE,
      rows,
      ingestedAt: at,
      staleAfterSeconds: 3_600,
      received: rows.length,
      skipped: 0,
      unknownNames: 0,
      relay,
    });
    committedAt.set(runId, relay.calledAt);
    // The run's changes as its stream entries hold them, in order (for the loss check).
    const entries = await sql<{ data: string }[]>`select data from price_stream where run_id = ${runId} order by position`;
    changedIds.set(
      runId,
      entries.flatMap((entry) => (JSON.parse(entry.data) as PriceStreamEvent).changes.map((change) => change.catalog_id)),
    );
    say(`${kind} run: ${result.changed} changes written (${JSON.stringify(result.timings)})`);
    return { kind, runId };
  };

  /** Waits until the clients' event count for `runId` stops growing (every client has all it will get). */
  const settle = async (runId: string, expectedEvents: number): Promise<void> => {
    const deadline = Date.now() + 300_000;
    let last = -1;
    let still = 0;
    for (;;) {
      let seen = 0;
      for (const generator of loadGenerators) {
        generator.send('status');
        const status = JSON.parse((await generator.nextLine('status', 300_000)).slice(7)) as Record<string, number>;
        seen += status[runId] ?? 0;
      }
      if (seen >= expectedEvents) return;
      still = seen === last ? still + 1 : 0;
      last = seen;
      if (still >= 20 || Date.now() > deadline) {
        say(`warning: run ${runId}: ${seen} of ${expectedEvents} events arrived; carrying on`);
        return;
      }
      await sleep(250);
    }
  };

  /** Events each run should produce over all clients: one per (client, entry with a change it watches). */
  const expectedEvents = (runId: string): number => {
    const changed = changedIds.get(runId)!;
    const entries: Set<string>[] = [];
    for (let start = 0; start < changed.length; start += 500) entries.push(new Set(changed.slice(start, start + 500)));
    let events = 0;
    for (const filter of filters) events += filter === null ? entries.length : entries.filter((entry) => filter.some((id) => entry.has(id))).length;
    return events;
  };

  const runs: { kind: string; runId: string; cpuMs: number; clientCpuMs: number; fanOut: [Buckets, Buckets] }[] = [];
  const measured = async (kind: string, items: string[], generation: number) => {
    const [cpuBefore, clientCpuBefore, fanOutBefore] = [await cpuMsOf(apiPid), await generatorCpuMs(), await fanOutBuckets(apiUrl)];
    const run = await runOnce(kind, items, generation);
    await settle(run.runId, expectedEvents(run.runId));
    runs.push({
      ...run,
      cpuMs: (await cpuMsOf(apiPid)) - cpuBefore,
      clientCpuMs: (await generatorCpuMs()) - clientCpuBefore,
      fanOut: [fanOutBefore, await fanOutBuckets(apiUrl)],
    });
  };

  await measured('full catalog', catalog, 1);
  for (let steady = 0; steady < STEADY_RUNS; steady += 1) {
    // About one price in ten moves.
    const moving = catalog.filter((_, index) => (index * 2_654_435_761 + steady * 97) % 10 === 0);
    await measured('steady', moving, 2 + steady);
  }
  const after = await rssOf(apiPid);

  // The generators' reports, merged: client indexes shifted back to this process's numbering.
  const report: ClientsReport = { connected: 0, failed: 0, ended: 0, resumed: 0, counts: [], arrivals: {}, duplicates: 0 };
  for (const generator of loadGenerators) generator.send('report');
  for (const generator of loadGenerators) {
    const part = (await Bun.file((await generator.nextLine('report', 120_000)).slice(7)).json()) as ClientsReport;
    report.ended += part.ended;
    report.resumed += part.resumed;
    report.duplicates += part.duplicates;
    part.counts.forEach((counts, index) => {
      report.counts[generator.from + index] = counts;
    });
    for (const [runId, times] of Object.entries(part.arrivals)) (report.arrivals[runId] ??= []).push(...times);
  }

  // Loss check: every connected client's change count per run equals what its filter should get.
  let lossyClients = 0;
  let checkedClients = 0;
  let expectedChanges = 0;
  let deliveredChanges = 0;
  const changedSets = new Map([...changedIds].map(([runId, ids]) => [runId, new Set(ids)]));
  filters.forEach((filter, index) => {
    const counts = report.counts[index];
    if (!counts) return;
    checkedClients += 1;
    let ok = true;
    const watched = filter === null ? null : [...new Set(filter)];
    for (const { runId } of runs) {
      const changed = changedSets.get(runId)!;
      // One change per item per run here (default versions only).
      const want = watched === null ? changedIds.get(runId)!.length : watched.filter((id) => changed.has(id)).length;
      const got = counts[runId] ?? 0;
      expectedChanges += want;
      deliveredChanges += got;
      if (got !== want) ok = false;
    }
    if (!ok) lossyClients += 1;
  });

  const figures = runs.map(({ kind, runId, cpuMs, clientCpuMs, fanOut }) => {
    const committed = committedAt.get(runId)!;
    const arrivals = (report.arrivals[runId] ?? []).map((at) => at - committed).sort((a, b) => a - b);
    const changed = changedIds.get(runId)!;
    const delivered = filters.reduce((sum, _filter, index) => sum + (report.counts[index]?.[runId] ?? 0), 0);
    return {
      kind,
      runId,
      changes: changed.length,
      events: arrivals.length,
      p50: percentile(arrivals, 50),
      p99: percentile(arrivals, 99),
      max: arrivals.at(-1) ?? Number.NaN,
      spanMs: arrivals.at(-1) ?? Number.NaN,
      cpuMs,
      clientCpuMs,
      deliveredChanges: delivered,
      fanOutP50: bucketQuantile(fanOut[0], fanOut[1], 0.5),
      fanOutP99: bucketQuantile(fanOut[0], fanOut[1], 0.99),
    };
  });

  process.stdout.write(
    `\nprice stream: ${connected} clients on one API process (${FIREHOSE} unfiltered, ${CLIENTS - FIREHOSE} × ${WATCH} catalog ids), ${catalog.length} catalog items\n`,
  );
  process.stdout.write(
    `${table([
      [
        'run',
        'changes',
        'events delivered',
        'p50',
        'p99',
        'last event',
        'events/s',
        'changes/s delivered',
        'API CPU',
        'load generator CPU',
        'server fan-out p50',
        'p99',
      ],
      ...figures.map((figure) => [
        figure.kind,
        String(figure.changes),
        String(figure.events),
        msText(figure.p50),
        msText(figure.p99),
        msText(figure.max),
        (figure.events / (figure.spanMs / 1000)).toFixed(0),
        (figure.deliveredChanges / (figure.spanMs / 1000)).toFixed(0),
        `${(figure.cpuMs / 1000).toFixed(1)} s`,
        `${(figure.clientCpuMs / 1000).toFixed(1)} s`,
        figure.fanOutP50,
        figure.fanOutP99,
      ]),
    ])}\n`,
  );
  process.stdout.write(
    "p50/p99: commit to the client reading the event (includes the load generators sharing the cores); server fan-out: the entry's append to its frames queued on every connection (cs2_price_stream_fanout_seconds, bucket bound)\n",
  );
  process.stdout.write(
    `API RSS: ${mb(baseline.rss)} before the clients, ${mb(withClients.rss)} with ${connected} open (+${mb(withClients.rss - baseline.rss)}), ${mb(after.rss)} after the runs (peak ${mb(after.peak)}, +${mb(after.peak - baseline.rss)})\n`,
  );
  process.stdout.write(
    `loss check: ${checkedClients - lossyClients} of ${checkedClients} clients got exactly their changes (${deliveredChanges} of ${expectedChanges} changes; ${report.duplicates} repeated events; ${report.ended} streams cut off by the server, ${report.resumed} resumed with Last-Event-ID)\n`,
  );
  const steady = figures.filter((figure) => figure.kind === 'steady');
  const steadyP99 = Math.max(...steady.map((figure) => figure.p99));
  const checks: [string, boolean, string][] = [
    [`steady runs: commit-to-client p99 < ${TARGETS.steadyP99Ms} ms`, steadyP99 < TARGETS.steadyP99Ms, msText(steadyP99)],
    [
      `API RSS growth with ${CLIENTS} clients < ${TARGETS.rssGrowthMb} MB`,
      after.peak - baseline.rss < TARGETS.rssGrowthMb,
      `+${mb(after.peak - baseline.rss)} peak`,
    ],
    [`${CLIENTS} clients connected`, connected === CLIENTS, `${connected}`],
    ['nothing lost or repeated', lossyClients === 0 && report.duplicates === 0 && deliveredChanges === expectedChanges, `${lossyClients} clients off`],
  ];
  printChecks(checks);
  return checks.every(([, ok]) => ok);
}

/**
 * The other live-feature bench of issue 21, run after this one when its file exists:
 * bench/inventory-watch.ts's `benchInventoryWatch()` (Steam requests per minute within the budget),
 * which prints its own figures and checks. BENCH_STREAM_ONLY=1 skips it.
 */
export async function runExtraBenches(): Promise<boolean> {
  const inventoryWatch = join(import.meta.dir, 'inventory-watch.ts');
  if (process.env.BENCH_STREAM_ONLY === '1' || !existsSync(inventoryWatch)) return true;
  const module = (await import(inventoryWatch)) as { benchInventoryWatch?: () => Promise<{ checks: [string, boolean, string][] }> };
  if (typeof module.benchInventoryWatch !== 'function') {
    say('bench/inventory-watch.ts exports no benchInventoryWatch(); skipped');
    return true;
  }
  process.stdout.write('\ninventory watch (bench/inventory-watch.ts):\n');
  const { checks } = await module.benchInventoryWatch();
  return checks.every(([, ok]) => ok);
}

/** The stream part alone (true when every target was met), for a caller that runs several benches. */
export async function runStreamBench(): Promise<boolean> {
  return streamBench();
}

if (import.meta.main) {
  const clientsAt = process.argv.indexOf('--clients');
  if (clientsAt >= 0) {
    await clientsMain(process.argv[clientsAt + 1]!);
  } else {
    await runBench(async () => {
      const streamOk = await streamBench();
      const othersOk = await runExtraBenches();
      if (!streamOk || !othersOk) process.exitCode = 1;
    });
  }
}
