import { afterAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import type { PublicItemPrices, PublicPriceList } from '../../shared/prices/public-document.ts';
import { assemblePriceList, PriceListJsonBuilder } from '../../shared/prices/public-document.ts';
import type { SnapshotInputRow } from '../../shared/prices/repository.ts';
import { buildPriceSnapshot, PRICE_SNAPSHOT_CHANNEL, PRICE_SNAPSHOTS_KEPT, snapshotJob } from '../../shared/prices/snapshot.ts';
import { PriceSnapshotCache } from '../../shared/prices/snapshot-cache.ts';
import { snapshotIntervalSeconds } from '../../shared/sources/settings.ts';
import { createTestApp, errorOf, eventually, seedFreshFxRates, type TestApp, testClock, testConfig } from '../helpers.ts';
import { freePort } from '../private-redis.ts';

const t = createTestApp();
const sql = t.deps.sql;
const opened: TestApp[] = [];
afterAll(async () => {
  await Promise.all(opened.map((app) => app.close()));
  await t.close();
});

function app(options: Parameters<typeof createTestApp>[0]) {
  const created = createTestApp(options);
  opened.push(created);
  return created;
}

let addressCounter = 0;
/** A client address of its own, so per-address limits of one test never meet another's. */
const uniqueAddress = () => `198.51.${Math.floor(Math.random() * 250)}.${(addressCounter += 1) % 250}`;

function get(target: TestApp, path: string, headers: Record<string, string> = {}) {
  return target.request(path, { headers: { 'x-forwarded-for': uniqueAddress(), ...headers } });
}

async function insertItem(name: string) {
  const catalogId = catalogIdFor(name);
  await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'knife')`;
  return { catalog_id: catalogId, market_hash_name: name };
}

async function setPrice(
  catalogId: string,
  source: string,
  price: string,
  options: { version?: string; sourceTime?: string; bid?: string; volume7d?: number; quantity?: number } = {},
) {
  await sql`
    insert into latest_prices (catalog_id, source, version, price, bid, volume_7d, quantity, source_time, ingested_at, run_id)
    values (${catalogId}, ${source}, ${options.version ?? 'default'}, ${price}::numeric, ${options.bid ?? null}::numeric, ${options.volume7d ?? null},
            ${options.quantity ?? null}, ${options.sourceTime ?? '2030-01-01T00:00:00.000Z'}, now(), ${crypto.randomUUID()})
    on conflict (catalog_id, version, source) do update set
      price = excluded.price, bid = excluded.bid, volume_7d = excluded.volume_7d, quantity = excluded.quantity, source_time = excluded.source_time`;
  // As an ingest run leaves it: the source succeeded as of the write (a price is never fresh while its source is stale).
  await sql`
    insert into price_sources (name, last_success_at) values (${source}, now())
    on conflict (name) do update set last_success_at = greatest(price_sources.last_success_at, excluded.last_success_at)`;
}

const uniqueName = (label: string) => `★ Test ${label} | Doppler ${crypto.randomUUID()} (Factory New)`;
const publish = (id: number) => t.deps.redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id));

/** Builds a snapshot, announces it, and waits until the suite's app serves it. */
async function buildAndServe() {
  const build = await buildPriceSnapshot(sql, new Date(), { publish });
  await eventually(async () => ((await get(t, '/v1/prices')).headers.get('etag') === build.etag ? true : undefined));
  return build;
}

async function list(target: TestApp, query = ''): Promise<{ response: Response; body: PublicPriceList }> {
  const response = await get(target, `/v1/prices${query}`);
  if (response.status !== 200) throw new Error(`list failed: ${response.status} ${await response.text()}`);
  return { response, body: (await response.json()) as PublicPriceList };
}

describe('before any snapshot exists', () => {
  test('GET /v1/prices and GET /v1/prices/{name} are 503 prices_unavailable, not cacheable', async () => {
    await sql`delete from price_snapshots`;
    const fresh = app({});
    for (const path of ['/v1/prices', `/v1/prices/${encodeURIComponent('AK-47 | Redline (Field-Tested)')}`]) {
      const response = await get(fresh, path);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('prices_unavailable');
      expect(response.headers.get('retry-after')).toBe('5');
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });
});

describe('GET /v1/prices', () => {
  test('lists every priced item with exact decimal strings, per-source prices and min/median/max', async () => {
    const doppler = await insertItem(uniqueName('list'));
    const steamOnly = await insertItem(uniqueName('steam-only'));
    const phasesOnly = await insertItem(uniqueName('phases-only'));
    const unpriced = await insertItem(uniqueName('unpriced'));
    await setPrice(doppler.catalog_id, 'skinport', '2.30', { sourceTime: '2030-01-01T00:00:01.000Z', bid: '2.25', volume7d: 17 });
    await setPrice(doppler.catalog_id, 'steam', '0.0001', { sourceTime: '2030-01-01T00:00:02.000Z' });
    await setPrice(doppler.catalog_id, 'csfloat', '123456789.12', { sourceTime: '2030-01-01T00:00:03.000Z' });
    await setPrice(doppler.catalog_id, 'skinport', '1500.00', { version: 'ruby' });
    await setPrice(doppler.catalog_id, 'csfloat', '1400.5', { version: 'ruby' });
    await setPrice(doppler.catalog_id, 'skinport', '900.10', { version: 'phase-2' });
    await setPrice(steamOnly.catalog_id, 'steam', '10', { sourceTime: '1990-01-01T00:00:00.000Z' });
    await setPrice(phasesOnly.catalog_id, 'csfloat', '77.70', { version: 'phase-4' });
    const build = await buildPriceSnapshot(sql, new Date(), { publish });
    expect(build.unchanged).toBe(false);

    const { response, body } = await eventually(async () => {
      const current = await list(t);
      return current.response.headers.get('etag') === build.etag ? current : undefined;
    });
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('public, max-age=30');
    expect(response.headers.get('vary')).toBe('Accept-Encoding');
    expect(response.headers.get('last-modified')).toBeString();

    expect(body.currency).toBe('USD');
    expect(body.item_count).toBe(body.items.length);
    expect(body.oldest_input_at).toBe('1990-01-01T00:00:00.000Z');
    const names = body.items.map((item) => item.market_hash_name);
    expect(names).toEqual([...names].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1)));
    const byName = new Map(body.items.map((item) => [item.market_hash_name, item]));
    expect(byName.get(doppler.market_hash_name)).toEqual({
      market_hash_name: doppler.market_hash_name,
      catalog_id: doppler.catalog_id,
      sources: {
        // Three fresh sources: m0 = 2.30, so 123456789.12 (> 3 × m0) and 0.0001 (3 × p < m0) are outliers.
        csfloat: { price: '123456789.12', source_time: '2030-01-01T00:00:03.000Z', outlier: true },
        skinport: { price: '2.30', source_time: '2030-01-01T00:00:01.000Z', bid: '2.25', volume_7d: 17 },
        steam: { price: '0.0001', source_time: '2030-01-01T00:00:02.000Z', outlier: true },
      },
      min: '0.0001',
      median: '2.30',
      max: '123456789.12',
      consensus: { price: '2.30', best_ask: '2.30', best_bid: '2.25', sources: 1, outliers: ['csfloat', 'steam'], spread: '0.0217' },
      versions: {
        'phase-2': {
          sources: { skinport: { price: '900.10', source_time: '2030-01-01T00:00:00.000Z' } },
          min: '900.10',
          median: '900.10',
          max: '900.10',
          consensus: { price: '900.10', best_ask: '900.10', best_bid: null, sources: 1, outliers: [], spread: null },
        },
        ruby: {
          sources: {
            csfloat: { price: '1400.5', source_time: '2030-01-01T00:00:00.000Z' },
            skinport: { price: '1500.00', source_time: '2030-01-01T00:00:00.000Z' },
          },
          min: '1400.5',
          median: '1450.25',
          max: '1500.00',
          consensus: { price: '1450.25', best_ask: '1400.5', best_bid: null, sources: 2, outliers: [], spread: null },
        },
      },
    });
    expect(byName.get(steamOnly.market_hash_name)).toEqual({
      market_hash_name: steamOnly.market_hash_name,
      catalog_id: steamOnly.catalog_id,
      sources: { steam: { price: '10', source_time: '1990-01-01T00:00:00.000Z' } },
      min: '10',
      median: '10',
      max: '10',
      // Its only source is stale when the list is built.
      consensus: null,
    });
    expect(byName.get(phasesOnly.market_hash_name)).toMatchObject({
      sources: {},
      min: null,
      median: null,
      max: null,
      versions: { 'phase-4': { min: '77.70' } },
    });
    expect(byName.has(unpriced.market_hash_name)).toBe(false);
    await sql`delete from latest_prices where catalog_id = ${steamOnly.catalog_id}`;
  });

  test('the ETag is the quoted SHA-256 of the JSON; If-None-Match answers 304 without a body', async () => {
    await buildAndServe();
    const { response } = await list(t);
    const etag = response.headers.get('etag')!;
    const identity = await (await get(t, '/v1/prices')).arrayBuffer();
    expect(etag).toBe(`"${createHash('sha256').update(Buffer.from(identity)).digest('hex')}"`);

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const notModified = await get(t, '/v1/prices', { 'if-none-match': ifNoneMatch, 'accept-encoding': 'br' });
      expect(notModified.status).toBe(304);
      expect(await notModified.text()).toBe('');
      expect(notModified.headers.get('etag')).toBe(etag);
      expect(notModified.headers.get('cache-control')).toBe('public, max-age=30');
      expect(notModified.headers.get('vary')).toBe('Accept-Encoding');
      expect(notModified.headers.get('content-encoding')).toBeNull();
    }
    expect((await get(t, '/v1/prices', { 'if-none-match': '"stale-etag"' })).status).toBe(200);
  });

  test('br is preferred, then gzip, else identity; every encoding decodes to the same JSON', async () => {
    await buildAndServe();
    const identityResponse = await get(t, '/v1/prices');
    const identity = Buffer.from(await identityResponse.arrayBuffer());
    const etag = identityResponse.headers.get('etag');
    const cases: [string | null, string | null][] = [
      ['gzip, deflate, br', 'br'],
      ['br', 'br'],
      ['*', 'br'],
      ['gzip', 'gzip'],
      ['br;q=0, gzip;q=0.5', 'gzip'],
      ['x-gzip', 'gzip'],
      ['deflate', null],
      ['identity', null],
      ['br;q=0, gzip;q=0', null],
      [null, null],
    ];
    for (const [acceptEncoding, expected] of cases) {
      const response = await get(t, '/v1/prices', acceptEncoding === null ? {} : { 'accept-encoding': acceptEncoding });
      expect([acceptEncoding, response.status, response.headers.get('content-encoding')]).toEqual([acceptEncoding, 200, expected]);
      expect(response.headers.get('etag')).toBe(etag);
      const raw = Buffer.from(await response.arrayBuffer());
      const decoded = expected === 'br' ? brotliDecompressSync(raw) : expected === 'gzip' ? gunzipSync(raw) : raw;
      expect(decoded.equals(identity)).toBe(true);
      if (expected) expect(raw.length).toBeLessThan(identity.length);
    }
  });

  test('max-age follows INGEST_INTERVAL_SECONDS', async () => {
    await buildPriceSnapshot(sql, new Date());
    const configured = app({ config: { INGEST_INTERVAL_SECONDS: '45' } });
    const response = await get(configured, '/v1/prices');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=45');
  });

  test('?source= keeps one source per item and version, drops the rest, and has its own ETag and 304', async () => {
    const both = await insertItem(uniqueName('both'));
    const steamOnly = await insertItem(uniqueName('steam'));
    await setPrice(both.catalog_id, 'skinport', '3.10');
    await setPrice(both.catalog_id, 'steam', '3.50');
    await setPrice(both.catalog_id, 'steam', '800.00', { version: 'phase-1' });
    await setPrice(steamOnly.catalog_id, 'steam', '1.00');
    const build = await buildAndServe();

    const { response, body } = await list(t, '?source=skinport');
    expect(body.source).toBe('skinport');
    expect(body.item_count).toBe(body.items.length);
    for (const item of body.items) {
      expect(Object.keys(item.sources).every((source) => source === 'skinport')).toBe(true);
      for (const version of Object.values(item.versions ?? {})) expect(Object.keys(version.sources)).toEqual(['skinport']);
    }
    expect(body.items.find((item) => item.market_hash_name === both.market_hash_name)).toEqual({
      market_hash_name: both.market_hash_name,
      catalog_id: both.catalog_id,
      sources: { skinport: { price: '3.10', source_time: '2030-01-01T00:00:00.000Z' } },
      min: '3.10',
      median: '3.10',
      max: '3.10',
      // The consensus stays the cross-market one (skinport and steam), to read the source against.
      consensus: { price: '3.30', best_ask: '3.10', best_bid: null, sources: 2, outliers: [], spread: null },
    });
    expect(body.items.some((item) => item.market_hash_name === steamOnly.market_hash_name)).toBe(false);

    const steam = await list(t, '?source=steam');
    expect(steam.body.items.find((item) => item.market_hash_name === both.market_hash_name)).toMatchObject({
      sources: { steam: { price: '3.50' } },
      versions: { 'phase-1': { sources: { steam: { price: '800.00' } } } },
    });

    const etag = response.headers.get('etag')!;
    expect(etag).not.toBe(build.etag);
    const brotli = await get(t, '/v1/prices?source=skinport', { 'accept-encoding': 'br' });
    expect(brotli.headers.get('content-encoding')).toBe('br');
    expect(JSON.parse(brotliDecompressSync(Buffer.from(await brotli.arrayBuffer())).toString())).toEqual(body);
    expect((await get(t, '/v1/prices?source=skinport', { 'if-none-match': etag })).status).toBe(304);
    // The full list's ETag does not validate a filtered one.
    expect((await get(t, '/v1/prices?source=skinport', { 'if-none-match': build.etag })).status).toBe(200);
  });

  test.each([['buff'], ['SKINPORT'], ['']])('source %p is a 400 naming the allowed sources', async (source) => {
    const response = await get(t, `/v1/prices?source=${source}`);
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.[0]?.field).toBe('query.source');
    expect(error.details?.[0]?.message).toContain('skinport, steam, csfloat');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  test('an unknown query parameter is a 400', async () => {
    expect((await get(t, '/v1/prices?marketplace=steam')).status).toBe(400);
  });
});

describe('GET /v1/prices/{market_hash_name}', () => {
  test('carries the item’s image: the newest Steam icon seen for the name (docs/design.md §18)', async () => {
    const item = await insertItem(uniqueName('imaged'));
    await sql`insert into item_icons (market_hash_name, version, icon_url, first_seen_at, last_seen_at) values (${item.market_hash_name}, 'default', 'keylessIcon1', now(), now())`;
    await setPrice(item.catalog_id, 'skinport', '12.00');
    await buildAndServe();
    const response = await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as PublicItemPrices;
    expect(body.image).toEqual({ url: `${t.deps.config.STEAM_IMAGE_URL}/economy/image/keylessIcon1`, source: 'steam' });
    // The full keyless list stays as it is.
    const listed = (await list(t)).body.items.find((entry) => entry.market_hash_name === item.market_hash_name)!;
    expect('image' in listed).toBe(false);
  });

  test('returns every stored version of the exactly named item, default first, with its sales windows and liquidity', async () => {
    const item = await insertItem(uniqueName('single'));
    await setPrice(item.catalog_id, 'skinport', '812.40', { quantity: 12 });
    await setPrice(item.catalog_id, 'steam', '830.00', { quantity: 3 });
    // docs/design.md §19: combined windows as the sales writer stores them.
    await sql`
      insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at) values
        (${item.catalog_id}, 'default', '7d', 800.00, 805.5, 790, 840.10, 10, ${['skinport', 'steam']}, now()),
        (${item.catalog_id}, 'default', '24h', null, null, null, null, 0, ${['skinport']}, now())`;
    await setPrice(item.catalog_id, 'skinport', '2100.00', { version: 'sapphire' });
    await setPrice(item.catalog_id, 'skinport', '1000.0001', { version: 'phase-1' });
    await buildAndServe();

    const response = await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}`, { 'accept-encoding': 'gzip' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-encoding')).toBe('gzip');
    expect(response.headers.get('cache-control')).toBe('public, max-age=30');
    const raw = gunzipSync(Buffer.from(await response.arrayBuffer()));
    expect(response.headers.get('etag')).toBe(`"${createHash('sha256').update(raw).digest('hex')}"`);
    const body = JSON.parse(raw.toString()) as PublicItemPrices;
    expect(body).toEqual({
      market_hash_name: item.market_hash_name,
      catalog_id: item.catalog_id,
      // docs/design.md §18: a made-up item neither Steam nor cs2-lib has an image of.
      image: null,
      currency: 'USD',
      versions: [
        {
          version: 'default',
          sources: {
            skinport: { price: '812.40', source_time: '2030-01-01T00:00:00.000Z' },
            steam: { price: '830.00', source_time: '2030-01-01T00:00:00.000Z' },
          },
          min: '812.40',
          median: '821.20',
          max: '830.00',
          consensus: { price: '821.20', best_ask: '812.40', best_bid: null, sources: 2, outliers: [], spread: null },
          sales: {
            '24h': { median: null, mean: null, min: null, max: null, volume: 0, sources: ['skinport'] },
            '7d': { median: '800.00', mean: '805.5', min: '790', max: '840.10', volume: 10, sources: ['skinport', 'steam'] },
            '30d': null,
            '90d': null,
          },
          // 15 listings at 10 sales a week: 10.5 days.
          liquidity: { listings: 15, sales_7d: 10, days_to_sell: '10.5' },
        },
        {
          version: 'phase-1',
          sources: { skinport: { price: '1000.0001', source_time: '2030-01-01T00:00:00.000Z' } },
          min: '1000.0001',
          median: '1000.0001',
          max: '1000.0001',
          consensus: { price: '1000.0001', best_ask: '1000.0001', best_bid: null, sources: 1, outliers: [], spread: null },
          sales: { '24h': null, '7d': null, '30d': null, '90d': null },
          liquidity: { listings: null, sales_7d: null, days_to_sell: null },
        },
        {
          version: 'sapphire',
          sources: { skinport: { price: '2100.00', source_time: '2030-01-01T00:00:00.000Z' } },
          min: '2100.00',
          median: '2100.00',
          max: '2100.00',
          consensus: { price: '2100.00', best_ask: '2100.00', best_bid: null, sources: 1, outliers: [], spread: null },
          sales: { '24h': null, '7d': null, '30d': null, '90d': null },
          liquidity: { listings: null, sales_7d: null, days_to_sell: null },
        },
      ],
    });
    // The list carries the 7-day window only, as {median, volume}, and only where there is one.
    const listed = (await list(t)).body.items.find((entry) => entry.market_hash_name === item.market_hash_name)!;
    expect(listed.sales_7d).toEqual({ median: '800.00', volume: 10 });
    expect('sales_7d' in listed.versions!['phase-1']!).toBe(false);
    // ?currency= converts every sales price (the mean included), never the volumes.
    await seedFreshFxRates(sql);
    const converted = (await (await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}?currency=JPY`)).json()) as PublicItemPrices;
    expect(converted.versions[0]!.sales['7d']).toMatchObject({ volume: 10, sources: ['skinport', 'steam'] });
    expect(converted.versions[0]!.sales['7d']!.mean).toMatch(/^[0-9]+$/);
    expect(converted.versions[0]!.sales['7d']!.mean).not.toBe('805.5');
    const notModified = await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}`, { 'if-none-match': response.headers.get('etag')! });
    expect(notModified.status).toBe(304);
    expect(await notModified.text()).toBe('');
  });

  test('unknown names, names differing only in case, and items without prices are 404', async () => {
    const item = await insertItem(uniqueName('case'));
    await setPrice(item.catalog_id, 'steam', '5.00');
    const unpriced = await insertItem(uniqueName('unpriced'));
    await buildAndServe();
    expect((await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}`)).status).toBe(200);
    for (const name of [`No such item ${crypto.randomUUID()}`, item.market_hash_name.toUpperCase(), unpriced.market_hash_name, `${item.market_hash_name} `]) {
      const response = await get(t, `/v1/prices/${encodeURIComponent(name)}`);
      expect(response.status).toBe(404);
      expect((await errorOf(response)).code).toBe('not_found');
    }
  });

  test('a malformed percent-encoding is a 400', async () => {
    await buildPriceSnapshot(sql, new Date());
    const response = await get(t, '/v1/prices/%E0%A4%A');
    expect(response.status).toBe(400);
  });
});

describe('snapshots', () => {
  test('a new build reaches running API processes: at once when announced, within the poll interval when not', async () => {
    const item = await insertItem(uniqueName('refresh'));
    await setPrice(item.catalog_id, 'skinport', '1.00');
    const first = await buildPriceSnapshot(sql, new Date(), { publish });
    const price = async () => {
      const response = await get(t, `/v1/prices/${encodeURIComponent(item.market_hash_name)}`);
      if (response.status !== 200) return undefined;
      return ((await response.json()) as PublicItemPrices).versions[0]!.min;
    };
    expect(await eventually(async () => ((await price()) === '1.00' ? '1.00' : undefined))).toBe('1.00');

    await setPrice(item.catalog_id, 'skinport', '1.25');
    const announced = await buildPriceSnapshot(sql, new Date(), { publish });
    expect(announced.id).toBeGreaterThan(first.id);
    expect(await eventually(async () => ((await price()) === '1.25' ? '1.25' : undefined), 1_500)).toBe('1.25');

    await setPrice(item.catalog_id, 'skinport', '1.50');
    await buildPriceSnapshot(sql, new Date()); // no announcement: the poll finds it
    expect(await eventually(async () => ((await price()) === '1.50' ? '1.50' : undefined), 5_000)).toBe('1.50');
    const { response } = await list(t);
    expect(response.headers.get('etag')).not.toBe(announced.etag);
  });

  test('an unchanged price set keeps its snapshot and ETag; only the newest few snapshots are kept', async () => {
    const item = await insertItem(uniqueName('keep'));
    await setPrice(item.catalog_id, 'csfloat', '4.00');
    const built = await buildPriceSnapshot(sql, new Date());
    const again = await buildPriceSnapshot(sql, new Date());
    expect(again).toMatchObject({ id: built.id, etag: built.etag, unchanged: true, bytes: null });
    for (const price of ['4.01', '4.02', '4.03', '4.04']) {
      await setPrice(item.catalog_id, 'csfloat', price);
      const next = await buildPriceSnapshot(sql, new Date());
      expect(next.unchanged).toBe(false);
      expect(next.bytes!.json).toBeGreaterThan(0);
    }
    const [count] = await sql<{ count: number }[]>`select count(*)::int as count from price_snapshots`;
    expect(count!.count).toBe(PRICE_SNAPSHOTS_KEPT);
    const [stored] = await sql<
      { etag: string; body: Buffer; body_gzip: Buffer | null; body_br: Buffer | null; oldest_input_at: Date | null; item_count: number }[]
    >`
      select etag, body, body_gzip, body_br, oldest_input_at, item_count from price_snapshots order by id desc limit 1`;
    // Stored uncompressed: API processes compress a snapshot when they first serve it.
    expect(stored!.body_gzip).toBeNull();
    expect(stored!.body_br).toBeNull();
    const document = JSON.parse(stored!.body.toString()) as PublicPriceList;
    expect(stored!.etag).toBe(`"${createHash('sha256').update(stored!.body).digest('hex')}"`);
    expect(stored!.item_count).toBe(document.item_count);
    expect(stored!.oldest_input_at?.toISOString() ?? null).toBe(document.oldest_input_at);
  });
});

describe('per-address limit', () => {
  test('over the per-minute budget an address gets 429 rate_limited with Retry-After; both endpoints share it; others are unaffected', async () => {
    await buildPriceSnapshot(sql, new Date());
    // A fixed clock keeps every request in one minute window.
    const limited = app({ config: { PUBLIC_PRICES_RATE_LIMIT: '3' }, now: testClock('2031-02-03T04:05:06.000Z').now });
    await limited.deps.ready();
    const address = uniqueAddress();
    const headers = { 'x-forwarded-for': address };
    const seen: [number, string | null][] = [];
    for (const path of ['/v1/prices', '/v1/prices/nothing-by-this-name', '/v1/prices?source=steam']) {
      const response = await limited.request(path, { headers });
      seen.push([response.status, response.headers.get('ratelimit')]);
    }
    expect(seen).toEqual([
      [200, '"ip-minute";r=2;t=54'],
      [404, '"ip-minute";r=1;t=54'],
      [200, '"ip-minute";r=0;t=54'],
    ]);
    const refused = await limited.request('/v1/prices', { headers });
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).code).toBe('rate_limited');
    expect(refused.headers.get('retry-after')).toBe('54');
    expect(refused.headers.get('ratelimit-policy')).toBe('"ip-minute";q=3;w=60');
    expect(refused.headers.get('ratelimit')).toBe('"ip-minute";r=0;t=54');
    expect(refused.headers.get('cache-control')).toBe('no-store');
    expect((await limited.request(`/v1/prices/${encodeURIComponent('AK-47 | Redline (Field-Tested)')}`, { headers })).status).toBe(429);
    // Another address has its own budget.
    expect((await limited.request('/v1/prices', { headers: { 'x-forwarded-for': uniqueAddress() } })).status).toBe(200);
  });

  test('without Redis the keyless price list is served unlimited (fail open)', async () => {
    await buildPriceSnapshot(sql, new Date());
    const closedPort = await freePort();
    const noRedis = app({ config: { REDIS_URL: `redis://127.0.0.1:${closedPort}`, PUBLIC_PRICES_RATE_LIMIT: '1' } });
    for (let i = 0; i < 3; i += 1) {
      const response = await noRedis.request('/v1/prices', { headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit')).toBeNull();
    }
  });
});

describe('snapshot builds and idle API processes', () => {
  test("requests within one interval share one build job at the interval's end; the next interval gets its own", () => {
    const interval = 30_000;
    const start = Date.UTC(2030, 0, 1, 12, 0, 0);
    const first = snapshotJob(new Date(start + 1_000), interval);
    const second = snapshotJob(new Date(start + 29_999), interval);
    expect(second.jobId).toBe(first.jobId);
    expect(first.delay).toBe(29_000);
    expect(second.delay).toBe(1);
    const next = snapshotJob(new Date(start + 30_000), interval);
    expect(next.jobId).not.toBe(first.jobId);
    expect(next.delay).toBe(30_000);
    expect(first.jobId).not.toContain(':');
  });

  test('the build interval is PRICE_SNAPSHOT_INTERVAL_SECONDS, else the shortest interval of the enabled sources (a local default at least 60 s)', () => {
    expect(
      snapshotIntervalSeconds(
        testConfig({
          SOURCES: 'skinport,steam',
          SOURCE_SKINPORT_URL: 'http://127.0.0.1:1/skinport',
          SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam',
          SOURCE_STEAM_INTERVAL_SECONDS: '7',
        }),
      ),
    ).toBe(7);
    // Against a local simulator the per-item source (steam) runs every 30 s, bulk sources every 300 s,
    // and the list is rebuilt at most once a minute unless an interval is configured.
    expect(snapshotIntervalSeconds(testConfig({ SOURCES: 'skinport', SOURCE_SKINPORT_URL: 'http://127.0.0.1:1/skinport' }))).toBe(300);
    expect(
      snapshotIntervalSeconds(
        testConfig({ SOURCES: 'skinport,steam', SOURCE_SKINPORT_URL: 'http://127.0.0.1:1/skinport', SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam' }),
      ),
    ).toBe(60);
    expect(snapshotIntervalSeconds(testConfig({ SOURCES: 'steam', SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam', SOURCE_STEAM_INTERVAL_SECONDS: '20' }))).toBe(
      20,
    );
    expect(snapshotIntervalSeconds(testConfig({ SOURCES: 'skinport', PRICE_SNAPSHOT_INTERVAL_SECONDS: '120' }))).toBe(120);
  });

  test('an idle process drops its snapshot when a newer one is announced and loads the newest at the next request; a busy one loads it at once', async () => {
    const item = await insertItem(uniqueName('idle'));
    await setPrice(item.catalog_id, 'skinport', '10.00');
    const log = createLogger({ level: 'silent', name: 'test' });
    const idle = new PriceSnapshotCache(sql, log, { idleAfterMs: 0 });
    const busy = new PriceSnapshotCache(sql, log, { idleAfterMs: 60_000 });
    const first = await buildPriceSnapshot(sql, new Date());
    expect((await idle.current())?.id).toBe(first.id);
    expect((await busy.current())?.id).toBe(first.id);

    await setPrice(item.catalog_id, 'skinport', '11.00');
    const second = await buildPriceSnapshot(sql, new Date());
    expect(second.id).toBeGreaterThan(first.id);
    await Bun.sleep(1); // the idle cache's last request is now older than its 0 ms threshold
    idle.notify();
    busy.notify();
    expect(idle.loadedId).toBeNull();
    await eventually(async () => (busy.loadedId === second.id ? true : undefined));
    expect((await idle.current())?.id).toBe(second.id);
  });
});

describe('the snapshot document built item by item', () => {
  test('rows fed in any chunks give exactly JSON.stringify of the whole list', () => {
    const row = fc.record({
      item: fc.integer({ min: 0, max: 30 }),
      version: fc.constantFrom('default', 'phase-1', 'ruby'),
      source: fc.constantFrom('csfloat', 'skinport', 'steam'),
      price: fc.constantFrom('0.03', '2.30', '15', '812.40'),
      at: fc.integer({ min: 0, max: 1e9 }),
      bid: fc.constantFrom(null, '0.02', '2.2'),
      volume: fc.constantFrom(null, 0, 12),
    });
    fc.assert(
      fc.property(fc.array(row, { maxLength: 120 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }), (drawn, chunkSizes) => {
        // The snapshot query's order and uniqueness: one row per (item, version, source).
        const unique = new Map(drawn.map((r) => [`${r.item}/${r.version}/${r.source}`, r]));
        const rows: SnapshotInputRow[] = [...unique.values()]
          .sort(
            (a, b) =>
              a.item - b.item ||
              Number(a.version !== 'default') - Number(b.version !== 'default') ||
              a.version.localeCompare(b.version) ||
              a.source.localeCompare(b.source),
          )
          .map((r) => ({
            market_hash_name: `Item ${String(r.item).padStart(2, '0')}`,
            catalog_id: `itm_${r.item}`,
            version: r.version,
            source: r.source,
            price: r.price,
            bid: r.bid,
            volume_7d: r.volume,
            source_time: new Date(1.7e12 + r.at).toISOString(),
            observed_ms: 1.7e12 + r.at,
          }));
        // Some rows fresh, some stale at this build time (csfloat's threshold is shorter; steam has never succeeded).
        const now = 1.7e12 + 5e8;
        const freshness = {
          now: new Date(now),
          sources: new Map([
            ['csfloat', { lastSuccessMs: now, staleAfterSeconds: 100_000 }],
            ['skinport', { lastSuccessMs: now, staleAfterSeconds: 600 }],
          ]),
        };
        const builder = new PriceListJsonBuilder(freshness);
        let at = 0;
        for (let chunk = 0; at < rows.length; chunk += 1) {
          const size = chunkSizes[chunk % chunkSizes.length]!;
          builder.add(rows.slice(at, at + size));
          at += size;
        }
        const built = builder.finish();
        const whole = assemblePriceList(rows, freshness);
        expect(built.json.toString('utf8')).toBe(JSON.stringify(whole));
        expect(built.item_count).toBe(whole.item_count);
        expect(built.oldest_input_at).toBe(whole.oldest_input_at);
      }),
      { seed: 1313, numRuns: 300 },
    );
  });
});
