/**
 * Keyless price list under slow readers: `npm run bench:prices-memory`.
 *
 * In a scratch database (bench/price-fixtures.ts: the real catalog, 2–3 sources per item, one
 * snapshot), the API (api/main.ts, TRUST_PROXY=true) runs in its own process. After every variant
 * of GET /v1/prices (identity, gzip, br; full and per source) has been fetched once, the API's RSS is
 * the baseline. Then:
 *
 *   1. BENCH_READERS (default 200) slow readers, each from its own address (X-Forwarded-For), ask
 *      for the identity list (the largest body) and stop reading after the first bytes. The figure
 *      is the API's RSS growth while they hang (target < 100 MB).
 *   2. PUBLIC_PRICES_MAX_DOWNLOADS_PER_CLIENT + 2 more slow readers from one further address: how
 *      many are admitted and how many get 429.
 *   3. Every reader disconnects; one request from each address of step 2 shows whether its slots
 *      were released.
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_READERS.
 */
import { connect, type Socket } from 'node:net';
import { freePort, positiveInt, printChecks, removeQueueKeysAtCleanup, reportQuietness, rssOf, runBench, say, sleep, spawnApi, waitReady } from './lib.ts';
import { buildSnapshot, catalogDatabase, kib, seedLatestPrices } from './price-fixtures.ts';

const READERS = positiveInt('BENCH_READERS', 200);
const TARGET_GROWTH_MB = 100;
// The API's default cap (shared/platform/config.ts); the bench does not override it.
const CAP = 4;
const SETTLE_TIMEOUT_MS = 20_000;

type SlowReader = { socket: Socket; status: Promise<number>; received: () => number };

/**
 * One connection that sends GET /v1/prices from `address` and stops reading once the status line
 * has arrived: the kernel buffers fill and the server must hold the rest of the body.
 */
function slowReader(port: number, path: string, address: string, headers: Record<string, string>): SlowReader {
  let received = 0;
  const socket = connect(port, '127.0.0.1');
  const status = new Promise<number>((resolve, reject) => {
    socket.once('connect', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        'host: bench',
        `x-forwarded-for: ${address}`,
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.once('data', (chunk: Buffer) => {
      received += chunk.length;
      socket.pause();
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0));
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(0));
  });
  return { socket, status, received: () => received };
}

/** Polls the API's RSS until five samples in a row lie within 2 MB (or the timeout); returns the last and the highest seen. */
async function settledRss(pid: number): Promise<{ rss: number; max: number }> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  const samples: number[] = [];
  let max = 0;
  for (;;) {
    const { rss } = await rssOf(pid);
    samples.push(rss);
    max = Math.max(max, rss);
    const recent = samples.slice(-5);
    if ((recent.length === 5 && Math.max(...recent) - Math.min(...recent) < 2) || Date.now() > deadline) return { rss, max };
    await sleep(200);
  }
}

const tally = (statuses: number[]) => {
  const counts = new Map<number, number>();
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${count} × ${status || 'closed'}`)
    .join(', ');
};

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const now = new Date();
  const { url, sql } = await catalogDatabase('bench-prices-memory');
  await seedLatestPrices(sql, now);
  const build = await buildSnapshot(sql, now);

  const queuePrefix = `bench${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const port = await freePort();
  const api = spawnApi(port, {
    DATABASE_URL: url,
    REDIS_URL: redisUrl,
    PUBLIC_PRICES_RATE_LIMIT: '1000000000',
    TRUST_PROXY: 'true',
    QUEUE_PREFIX: queuePrefix,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitReady('API', api, `${base}/v2/health`);
  const pid = api.proc.pid;

  // Every variant once, so derived bodies (per source) exist before the baseline is taken.
  for (const query of ['', '?source=skinport', '?source=steam', '?source=csfloat']) {
    for (const encoding of ['identity', 'gzip', 'br']) {
      const response = await fetch(`${base}/v1/prices${query}`, {
        headers: { 'accept-encoding': encoding, 'x-forwarded-for': '192.0.2.1' },
        decompress: false,
      });
      const bytes = (await response.arrayBuffer()).byteLength;
      if (response.status !== 200) throw new Error(`GET /v1/prices${query} (${encoding}) answered ${response.status}`);
      if (query === '') say(`GET /v1/prices ${encoding}: ${kib(bytes)}`);
    }
  }
  await reportQuietness();
  const baseline = await settledRss(pid);
  say(`API pid ${pid}: RSS ${baseline.rss.toFixed(1)} MB after every variant was served once (snapshot ${build.id}, ${build.item_count} items)`);

  // 1. Slow readers, one per address.
  const readers = Array.from({ length: READERS }, (_, index) =>
    slowReader(port, '/v1/prices', `10.${Math.floor(index / 250)}.${index % 250}.${(index % 7) + 1}`, { 'accept-encoding': 'identity' }),
  );
  const statuses = await Promise.all(readers.map((reader) => reader.status));
  const held = await settledRss(pid);
  const growth = held.max - baseline.rss;
  say(`${READERS} slow readers from ${READERS} addresses: ${tally(statuses)}; API RSS ${held.rss.toFixed(1)} MB (highest ${held.max.toFixed(1)} MB)`);

  // 2. More than the cap from one address.
  const crowd = Array.from({ length: CAP + 2 }, () => slowReader(port, '/v1/prices', '10.255.0.1', { 'accept-encoding': 'identity' }));
  const crowdStatuses = await Promise.all(crowd.map((reader) => reader.status));
  say(`${crowd.length} slow readers from one address: ${tally(crowdStatuses)}`);

  // 3. Everyone leaves; the addresses can download again.
  for (const reader of [...readers, ...crowd]) reader.socket.destroy();
  const after = async (address: string) => {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      const response = await fetch(`${base}/v1/prices`, { headers: { 'accept-encoding': 'br', 'x-forwarded-for': address }, decompress: false });
      await response.arrayBuffer();
      if (response.status === 200 || Date.now() > deadline) return response.status;
      await sleep(50);
    }
  };
  const again = await after('10.255.0.1');
  say(`after every reader disconnected, the crowded address gets ${again}`);
  const released = await settledRss(pid);
  say(`API RSS after they left: ${released.rss.toFixed(1)} MB`);

  process.stdout.write(
    `\nAPI RSS: baseline ${baseline.rss.toFixed(1)} MB; with ${READERS} slow readers ${held.max.toFixed(1)} MB (growth ${growth.toFixed(1)} MB, ` +
      `${((growth * 1024) / READERS).toFixed(0)} KiB per reader); after they left ${released.rss.toFixed(1)} MB\n\n`,
  );
  if (api.output.lines > 0) say(`warning: the API logged ${api.output.lines} line(s) at warn or above; the last ones:\n${api.output.last.join('\n')}`);
  const admitted = crowdStatuses.filter((status) => status === 200).length;
  printChecks([
    [
      `${READERS} slow readers add < ${TARGET_GROWTH_MB} MB RSS`,
      growth < TARGET_GROWTH_MB && statuses.every((status) => status === 200),
      `${growth.toFixed(1)} MB; ${tally(statuses)}`,
    ],
    [
      `at most ${CAP} concurrent downloads per address, the rest 429`,
      admitted === CAP && crowdStatuses.filter((status) => status === 429).length === 2,
      tally(crowdStatuses),
    ],
    ['slots are released when readers disconnect', again === 200, `next request: ${again}`],
  ]);
}

await runBench(main);
