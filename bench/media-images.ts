/**
 * The image endpoint's part of `npm run bench:media` (issue 31, docs/design.md §18). `BENCH_MEDIA_PARTS=images`
 * runs it alone.
 *
 *  a. Cached hits of GET /v2/images/{catalog_id}?size=256 (PNG) against the keyless single-item price
 *     route GET /v1/prices/{name}, in one run of one API process (api/main.ts), 50 connections each:
 *     judged by server CPU per request (the price route's µs / the image route's µs ≥ 50 %), req/s
 *     reported too. The image fake counts upstream requests: none may happen during the load.
 *  b. A cold resize: cachedImage on misses in this process (a fresh blob root, nothing in memory), the
 *     fake serving a 512 px image (Steam's `512fx512f` form, 512×384) already built, so the time is ours:
 *     loopback fetch, checks, decode, fit into 512×512, encode, fsync'd blob write. Median judged (< 50 ms).
 *     The fake's images are flat colours; a PNG of random pixels (the encoders' worst case) is reported too.
 *
 * Environment: DATABASE_URL and REDIS_URL (scripts/dev.ts), BENCH_DURATION, BENCH_WARMUP (seconds),
 * BENCH_COLD_RESIZES (default 40).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedImage, ImageCacheState, type ImageFormat } from '../shared/media/images/image-cache.ts';
import { parseConfig } from '../shared/platform/config.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { type ImageFake, startImageFake } from '../test/fakes/images/server.ts';
import {
  CONNECTIONS,
  DURATION_S,
  drainedCpu,
  freePort,
  load,
  loadRuntimeName,
  onCleanup,
  positiveInt,
  removeQueueKeysAtCleanup,
  reportQuietness,
  spawnApi,
  table,
  WARMUP_S,
  waitReady,
  warnAbnormal,
} from './lib.ts';
import { buildSnapshot, catalogDatabase, seedLatestPrices } from './price-fixtures.ts';

const TARGETS = { hitCpuShareOfPrice: 0.5, coldResizeMs: 50 };
const COLD_RESIZES = positiveInt('BENCH_COLD_RESIZES', 40);
const HIT_SIZE = 256;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/** A PNG of random opaque-to-transparent pixels: nothing for an encoder to compress. */
async function noisyPng(width: number, height: number): Promise<Uint8Array> {
  const { default: sharp } = await import('sharp');
  const pixels = Buffer.alloc(width * height * 4);
  let state = 0x9e3779b9;
  for (let at = 0; at < pixels.length; at++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    pixels[at] = state >>> 24;
  }
  return new Uint8Array(
    await sharp(pixels, { raw: { width, height, channels: 4 } })
      .png()
      .toBuffer(),
  );
}

export type ImagesBench = { report: string; checks: [string, boolean, string][] };

export async function benchImages(): Promise<ImagesBench> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is not set; run this through `npm run bench:media`');
  const fake: ImageFake = startImageFake();
  onCleanup(() => fake.stop());
  const blobDir = mkdtempSync(join(tmpdir(), 'bench-images-'));
  onCleanup(() => rmSync(blobDir, { recursive: true, force: true }));
  // The fake's images are two flat colours, which PNG and WebP encode fast and small. A 512×384 PNG of
  // random pixels (the worst case for both encoders and for the bytes sent; real icons sit between)
  // stands in for cs2-lib's images (ITEM_ASSETS_URL, any path), reported apart from the judged figures.
  const noisy = await noisyPng(512, 384);
  let noisyRequests = 0;
  const noisyServer = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => {
      noisyRequests += 1;
      return new Response(noisy, { headers: { 'content-type': 'image/png' } });
    },
  });
  onCleanup(() => noisyServer.stop(true));
  const noisyOrigin = `http://127.0.0.1:${noisyServer.port}`;
  const checks: [string, boolean, string][] = [];
  let report = '';

  // ---------------------------------------------------------------------------------------------
  // a. Cached hits vs the keyless single-item price.
  const { url: dbUrl, sql } = await catalogDatabase('bench-media-images');
  const now = new Date();
  await seedLatestPrices(sql, now);
  await buildSnapshot(sql, now);
  const queuePrefix = `benchimg${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const apiPort = await freePort();
  const api = spawnApi(apiPort, {
    DATABASE_URL: dbUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    STEAM_IMAGE_URL: fake.url,
    ITEM_ASSETS_URL: noisyOrigin,
    BLOB_DIR: blobDir,
    // The load comes from one address: the per-address limit must not answer it.
    PUBLIC_PRICES_RATE_LIMIT: '1000000000',
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  await waitReady('API', api, `${apiBase}/v2/health`);
  // Two priced weapon skins: the judged one with a Steam icon seen (the fake's flat image), the other
  // with cs2-lib's image (the random-pixel PNG). Each first request is the miss that stores it.
  const [item, noisyItem] = await sql<{ catalog_id: string; market_hash_name: string }[]>`
    select c.catalog_id, c.market_hash_name from catalog_items c
    where c.type = 'weapon' and c.paint_index is not null and exists (select 1 from latest_prices l where l.catalog_id = c.catalog_id)
    order by md5(c.catalog_id || 'bench-images') limit 2`;
  if (!item || !noisyItem) throw new Error('the catalog has fewer than 2 priced weapon skins');
  await sql`
    insert into item_icons (market_hash_name, version, icon_url, first_seen_at, last_seen_at)
    values (${item.market_hash_name}, 'default', ${`bench-icon-${process.pid}`}, now(), now())`;
  const imageUrl = `${apiBase}/v2/images/${item.catalog_id}?size=${HIT_SIZE}`;
  const noisyUrl = `${apiBase}/v2/images/${noisyItem.catalog_id}?size=${HIT_SIZE}`;
  const priceUrl = `${apiBase}/v1/prices/${encodeURIComponent(item.market_hash_name)}`;
  const sizes: Record<string, number> = {};
  for (const url of [priceUrl, imageUrl, noisyUrl]) {
    const response = await fetch(url);
    sizes[url] = (await response.arrayBuffer()).byteLength;
    if (response.status !== 200) throw new Error(`${url} answered ${response.status} before the load`);
  }
  const upstreamBefore = fake.requests.length + noisyRequests;
  await reportQuietness();
  // As browsers send them; the image is not compressed again, the price body may be.
  const headers = { 'accept-encoding': 'gzip, deflate, br' };
  const price = await load('GET /v1/prices/{name}', api.proc.pid, priceUrl, headers);
  const image = await load(
    `GET /v2/images/{id}?size=${HIT_SIZE} (cached; the fake's ${(sizes[imageUrl]! / 1024).toFixed(1)} KiB PNG)`,
    api.proc.pid,
    imageUrl,
    headers,
  );
  const worst = await load(
    `GET /v2/images/{id}?size=${HIT_SIZE} (cached; random pixels, ${(sizes[noisyUrl]! / 1024).toFixed(0)} KiB PNG; not judged)`,
    api.proc.pid,
    noisyUrl,
    headers,
  );
  // The same targets fetched by curl, which drains a body as fast as loopback allows (autocannon's
  // one thread reads a 177 KiB body slowly, in many small writes the server pays for).
  const scratch = mkdtempSync(join(tmpdir(), 'bench-images-curl-'));
  onCleanup(() => rmSync(scratch, { recursive: true, force: true }));
  const drained = await drainedCpu(
    [
      ['price', api.proc.pid, priceUrl],
      ['image', api.proc.pid, imageUrl],
      ['worst', api.proc.pid, noisyUrl],
    ],
    scratch,
    { requests: 2_000, parallel: 20, rounds: 3 },
  );
  const upstreamDuring = fake.requests.length + noisyRequests - upstreamBefore;
  const results = [price, image, worst];
  report +=
    `\nimages a. cached hits vs the keyless single-item price, ${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up; loopback; autocannon on ${loadRuntimeName}\n` +
    `${table([
      ['target', 'req/s (avg)', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'CPU share of the price route', 'MB/s', 'non-2xx'],
      ...results.map((result) => [
        result.name,
        result.rps.toFixed(0),
        String(result.p50),
        String(result.p99),
        result.cpuUsPerRequest.toFixed(1),
        `${((price.cpuUsPerRequest / result.cpuUsPerRequest) * 100).toFixed(1)} %`,
        (result.throughputBytes / 1e6).toFixed(1),
        String(result.non2xx),
      ]),
    ])}\n` +
    (drained
      ? `server CPU per request with curl --parallel 20 draining the bodies (2 000 requests × 3 rounds, taking turns): price ${drained.price!.toFixed(1)} µs, ` +
        `image ${drained.image!.toFixed(1)} µs (${((drained.price! / drained.image!) * 100).toFixed(1)} % of the price route's throughput), random-pixel image ${drained.worst!.toFixed(1)} µs (${((drained.price! / drained.worst!) * 100).toFixed(1)} %)\n`
      : 'curl is not installed: no drained-client figures\n') +
    `upstream requests during the load: ${upstreamDuring}\n`;
  warnAbnormal(results);
  const cpuShare = price.cpuUsPerRequest / image.cpuUsPerRequest;
  checks.push([
    `cached image hits >= ${TARGETS.hitCpuShareOfPrice * 100} % of GET /v1/prices/{name}'s throughput (server CPU per request, same run)`,
    cpuShare >= TARGETS.hitCpuShareOfPrice && image.non2xx === 0 && upstreamDuring === 0,
    `${(cpuShare * 100).toFixed(1)} % (${image.cpuUsPerRequest.toFixed(1)} vs ${price.cpuUsPerRequest.toFixed(1)} µs/req); req/s ${((image.rps / price.rps) * 100).toFixed(1)} % of the price route; ${upstreamDuring} upstream requests`,
  ]);

  // ---------------------------------------------------------------------------------------------
  // b. Cold resizes of a 512 px image, in this process.
  const coldRoot = mkdtempSync(join(tmpdir(), 'bench-images-cold-'));
  onCleanup(() => rmSync(coldRoot, { recursive: true, force: true }));
  const config = parseConfig({ ...process.env, STEAM_IMAGE_URL: fake.url, ITEM_ASSETS_URL: noisyOrigin, BLOB_DIR: coldRoot });
  const deps = { config, log: createLogger({ level: 'silent', name: 'bench-images' }), state: new ImageCacheState() };
  const rows: string[][] = [['case', 'median ms', 'p90 ms', 'max ms', 'n']];
  let judged = Number.NaN;
  let round = 0;
  const cases: [string, number, ImageFormat, (index: number) => string][] = [
    ['fake 512×384 PNG → 512×512 png (judged)', 512, 'png', (index) => `${fake.url}/economy/image/bench-cold-${process.pid}-${round}-${index}/512fx512f`],
    ['fake 512×384 PNG → 512×512 webp', 512, 'webp', (index) => `${fake.url}/economy/image/bench-cold-${process.pid}-${round}-${index}/512fx512f`],
    ['fake 512×384 PNG → 256×256 png', 256, 'png', (index) => `${fake.url}/economy/image/bench-cold-${process.pid}-${round}-${index}/512fx512f`],
    [
      `random-pixel 512×384 PNG (${(noisy.byteLength / 1024).toFixed(0)} KiB) → 512×512 png`,
      512,
      'png',
      (index) => `${noisyOrigin}/noisy-${round}-${index}.png`,
    ],
    ['random-pixel 512×384 PNG → 512×512 webp', 512, 'webp', (index) => `${noisyOrigin}/noisy-${round}-${index}.png`],
  ];
  for (const [label, size, format, urlOf] of cases) {
    const urls = Array.from({ length: COLD_RESIZES + 2 }, (_, index) => urlOf(index));
    round += 1;
    // The fake builds each body once: built before the timing, so only our side is measured.
    await Promise.all(urls.map(async (url) => (await fetch(url)).arrayBuffer()));
    const times: number[] = [];
    for (const [index, url] of urls.entries()) {
      const started = performance.now();
      await cachedImage(deps, { url, size, format });
      // The first two load sharp and warm libvips: not judged.
      if (index >= 2) times.push(performance.now() - started);
    }
    rows.push([label, median(times).toFixed(1), percentile(times, 90).toFixed(1), Math.max(...times).toFixed(1), String(times.length)]);
    if (Number.isNaN(judged)) judged = median(times);
  }
  report +=
    `\nimages b. cold resize: cachedImage on a miss (loopback fetch of a built 512×384 PNG, SSRF check, sharp decode + fit + encode, fsync'd blob write), one at a time after 2 warm-up misses\n` +
    `${table(rows)}\n`;
  checks.push([
    `cold resize of a 512 px image < ${TARGETS.coldResizeMs} ms (median of ${COLD_RESIZES})`,
    judged < TARGETS.coldResizeMs,
    `${judged.toFixed(1)} ms`,
  ]);
  return { report, checks };
}
