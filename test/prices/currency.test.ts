import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import Decimal from 'decimal.js';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { saveRateDays } from '../../shared/fx/repository.ts';
import { forgetCachedRates } from '../../shared/prices/currency.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { errorOf, eventually, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * `?currency=` (docs/design.md §14) on the price-bearing answers: keyed prices and history, both keyless
 * lists, the market summary. On a database of its own: the latest stored rates are global, and the
 * first test needs none at all.
 */

let t: TestApp;
let headers: Record<string, string>;
let item: { catalog_id: string; market_hash_name: string };
let address = 0;
const keyless = (path: string, extra: Record<string, string> = {}) =>
  t.request(path, { headers: { 'x-forwarded-for': `203.0.113.${(address += 1) % 250}`, ...extra } });
const keyed = (path: string) => t.request(path, { headers });
// Answers are read as plain JSON and checked field by field.
// biome-ignore lint/suspicious/noExplicitAny: answers of many shapes read field by field, each field checked by an expect; a declared type per answer would restate what the expects check
const read = (response: Response): Promise<any> => response.json();

// The ECB file of 2026-11-24 (units per EUR), the realistic set.
const DAY_1 = {
  date: '2026-11-24',
  rates: new Map([
    ['USD', '1.0834'],
    ['JPY', '162.41'],
    ['GBP', '0.84290'],
    ['ISK', '150.10'],
    ['KRW', '1523.06'],
  ]),
};
// A later set with round rates, for the rounding ties: 1 USD = 0.5 GBP = 100 JPY.
const DAY_2 = {
  date: '2026-11-25',
  rates: new Map([
    ['USD', '2'],
    ['GBP', '1'],
    ['JPY', '200'],
  ]),
};

/** What the answer must say: amount × rate(X) / rate(USD), half-even to `places`, by an independent computation. */
const expected = (usd: string, rate: string, usdRate: string, places: number) =>
  new Decimal(usd).times(rate).dividedBy(usdRate).toDecimalPlaces(places, Decimal.ROUND_HALF_EVEN).toFixed(places);

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'currency' });
  headers = (await workspaceWithKey(t, { scopes: ['prices:read', 'market:read', 'trade:read', 'inventory:read'], tier: 'pro' })).keyHeaders;
  const name = `★ Currency Test Knife | Fade ${crypto.randomUUID()} (Factory New)`;
  item = { catalog_id: catalogIdFor(name), market_hash_name: name };
  await t.deps.sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${item.catalog_id}, ${name}, 'knife')`;
  const now = new Date();
  for (const [source, price, bid] of [
    ['skinport', '10.00', null],
    ['steam', '12.34', null],
    ['csmarket', '11.005', '9.871'],
  ] as const) {
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, bid, source_time, ingested_at, run_id)
      values (${item.catalog_id}, ${source}, 'default', ${price}::numeric, ${bid}::numeric, ${now}, ${now}, ${crypto.randomUUID()})`;
    // As an ingest run leaves it: the source succeeded as of the write, so its price is fresh.
    await t.deps.sql`insert into price_sources (name, last_success_at) values (${source}, ${now})`;
  }
  await t.deps.sql`
    insert into price_rollups (catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at)
    values (${item.catalog_id}, 'skinport', 'default', 'hourly', date_trunc('hour', ${now}::timestamptz), 10.00, 12.50, 9.99, 10.00, 3, ${now}, ${now})`;
  await buildPriceSnapshot(t.deps.sql, now);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('?currency= before any exchange rates', () => {
  test('503 fx_unavailable everywhere a conversion is asked for; USD answers are unaffected', async () => {
    for (const path of [
      `/v2/prices/${item.catalog_id}?currency=EUR`,
      `/v2/prices/${item.catalog_id}/history?marketplace=skinport&granularity=hourly&currency=EUR`,
      '/v2/market/summary?currency=EUR',
      // Valuations are converted too: the rates are checked before any Steam or database work.
      '/v2/inventories/76561198012345678?valuation=skinport&currency=EUR',
      '/v2/trade-intents?currency=EUR',
      `/v2/trade-intents/${crypto.randomUUID()}?currency=EUR`,
    ]) {
      const response = await keyed(path);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('fx_unavailable');
    }
    const list = await keyless('/v1/prices?currency=EUR');
    expect(list.status).toBe(503);
    expect(list.headers.get('cache-control')).toBe('no-store');
    expect((await errorOf(list)).code).toBe('fx_unavailable');
    expect((await keyed(`/v2/prices/${item.catalog_id}`)).status).toBe(200);
    expect((await keyed(`/v2/prices/${item.catalog_id}?currency=USD`)).status).toBe(200);
  });
});

describe('?currency= with rates', () => {
  beforeAll(async () => {
    await saveRateDays(t.deps.sql, [DAY_1], new Date());
    forgetCachedRates(t.deps.sql);
  });

  test('keyed prices: every price, bid, min/median/max and consensus converted exactly; currency and fx say how', async () => {
    const usd = await read(await keyed(`/v2/prices/${item.catalog_id}`));
    const response = await keyed(`/v2/prices/${item.catalog_id}?currency=EUR`);
    expect(response.status).toBe(200);
    const eur = await read(response);
    expect(usd.currency).toBe('USD');
    expect(usd.fx).toBeUndefined();
    expect(eur.currency).toBe('EUR');
    expect(eur.fx).toEqual({ base: 'USD', quote: 'EUR', rate: expected('1', '1', '1.0834', 8), as_of: '2026-11-24', source: 'ecb' });
    const toEur = (value: string) => expected(value, '1', '1.0834', 2);
    const [usdVersion] = usd.versions;
    const [eurVersion] = eur.versions;
    expect(eurVersion.min).toBe(toEur(usdVersion.min));
    expect(eurVersion.median).toBe(toEur(usdVersion.median));
    expect(eurVersion.max).toBe(toEur(usdVersion.max));
    expect(eurVersion.consensus.price).toBe(toEur(usdVersion.consensus.price));
    expect(eurVersion.consensus.best_ask).toBe(toEur(usdVersion.consensus.best_ask));
    expect(eurVersion.consensus.best_bid).toBe(toEur('9.871'));
    // The spread is a ratio: the same in every currency.
    expect(eurVersion.consensus.spread).toBe(usdVersion.consensus.spread);
    const csmarket = eurVersion.sources.find((source: { source: string }) => source.source === 'csmarket');
    expect(csmarket.price).toBe('10.16'); // 11.005 / 1.0834 = 10.1578…
    expect(csmarket.bid).toBe('9.11'); // 9.871 / 1.0834 = 9.1111…
    expect(eurVersion.sources.find((source: { source: string }) => source.source === 'skinport').price).toBe('9.23');
    // Everything else is the USD answer unchanged.
    expect(eurVersion.sources.map((source: { age_seconds: number; freshness: string }) => source.freshness)).toEqual(
      usdVersion.sources.map((source: { freshness: string }) => source.freshness),
    );
  });

  test('currencies without minor units (JPY, KRW, ISK) are whole numbers', async () => {
    for (const [currency, rate] of [
      ['JPY', '162.41'],
      ['KRW', '1523.06'],
      ['ISK', '150.10'],
    ] as const) {
      const body = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=${currency}`));
      const skinport = body.versions[0].sources.find((source: { source: string }) => source.source === 'skinport');
      expect(skinport.price).toBe(expected('10.00', rate, '1.0834', 0));
      expect(skinport.price).not.toContain('.');
    }
  });

  test('an unsupported, lower-case, empty or malformed currency is a 400 naming the field', async () => {
    for (const value of ['XYZ', 'eur', '', 'EURO', 'E%00R', '%F0%9F%92%B6']) {
      const response = await keyed(`/v2/prices/${item.catalog_id}?currency=${value}`);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_request');
      expect(error.details?.[0]?.field).toContain('currency');
    }
    const unknown = await errorOf(await keyed(`/v2/prices/${item.catalog_id}?currency=XYZ`));
    expect(unknown.message).toContain('XYZ');
    expect(unknown.message).toContain('EUR');
    const list = await keyless('/v1/prices?currency=XYZ');
    expect(list.status).toBe(400);
    expect(list.headers.get('cache-control')).toBe('no-store');
  });

  test('history: open/high/low/close converted, with currency and fx', async () => {
    const usd = await read(await keyed(`/v2/prices/${item.catalog_id}/history?marketplace=skinport&granularity=hourly`));
    const gbp = await read(await keyed(`/v2/prices/${item.catalog_id}/history?marketplace=skinport&granularity=hourly&currency=GBP`));
    expect(usd.data[0].points.length).toBeGreaterThan(0);
    const [point] = gbp.data[0].points;
    const [usdPoint] = usd.data[0].points;
    for (const field of ['open', 'high', 'low', 'close'] as const) expect(point[field]).toBe(expected(usdPoint[field], '0.84290', '1.0834', 2));
    expect(point.samples).toBe(usdPoint.samples);
    expect(gbp.currency).toBe('GBP');
    expect(gbp.fx.quote).toBe('GBP');
  });

  test('market summary: sums converted once each', async () => {
    const usd = await read(await keyed('/v2/market/summary'));
    const eur = await read(await keyed('/v2/market/summary?currency=EUR'));
    expect(eur.currency).toBe('EUR');
    expect(eur.totals.lowest_price_sum).toBe(expected(usd.totals.lowest_price_sum, '1', '1.0834', 2));
    expect(eur.totals.listings).toBe(usd.totals.listings);
    for (const [index, marketplace] of usd.marketplaces.entries()) {
      expect(eur.marketplaces[index].lowest_price_sum).toBe(expected(marketplace.lowest_price_sum, '1', '1.0834', 2));
    }
  });

  test('keyless list and item: one body per currency with its own ETag, answering 304 to it', async () => {
    const usd = await eventually(async () => {
      const response = await keyless('/v1/prices');
      return response.status === 200 ? response : undefined;
    });
    const usdBody = await read(usd);
    const eurResponse = await keyless('/v1/prices?currency=EUR');
    expect(eurResponse.status).toBe(200);
    const eurEtag = eurResponse.headers.get('etag')!;
    expect(eurEtag).not.toBe(usd.headers.get('etag'));
    const eur = await read(eurResponse);
    expect(eur.currency).toBe('EUR');
    expect(eur.fx.as_of).toBe('2026-11-24');
    const usdItem = usdBody.items.find((entry: { catalog_id: string }) => entry.catalog_id === item.catalog_id);
    const eurItem = eur.items.find((entry: { catalog_id: string }) => entry.catalog_id === item.catalog_id);
    expect(eurItem.sources.skinport.price).toBe('9.23');
    expect(eurItem.sources.csmarket.bid).toBe('9.11');
    expect(eurItem.median).toBe(expected(usdItem.median, '1', '1.0834', 2));
    expect(eurItem.sources.skinport.source_time).toBe(usdItem.sources.skinport.source_time);
    expect((await keyless('/v1/prices?currency=EUR', { 'if-none-match': eurEtag })).status).toBe(304);
    const filtered = await read(await keyless('/v1/prices?currency=EUR&source=csmarket'));
    expect(filtered.source).toBe('csmarket');
    expect(filtered.items.find((entry: { catalog_id: string }) => entry.catalog_id === item.catalog_id).sources.csmarket.price).toBe('10.16');
    const single = await read(await keyless(`/v1/prices/${encodeURIComponent(item.market_hash_name)}?currency=EUR`));
    expect(single.currency).toBe('EUR');
    expect(single.versions[0].sources.skinport.price).toBe('9.23');
  });

  test('rounding is half-even at the minor unit, on the exact product (a newer rate set)', async () => {
    await saveRateDays(t.deps.sql, [DAY_2], new Date());
    forgetCachedRates(t.deps.sql);
    // 10.00 USD at 0.5 GBP per USD is exactly 5.00; 11.005 is 5.5025 → 5.50; 9.871 is 4.9355 → 4.94 (half-even: 4.9355 is no tie).
    const body = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=GBP`));
    const sources = Object.fromEntries(
      body.versions[0].sources.map((source: { source: string; price: string; bid: string | null }) => [source.source, source]),
    );
    expect(sources.skinport.price).toBe('5.00');
    expect(sources.csmarket.price).toBe('5.50');
    expect(sources.csmarket.bid).toBe('4.94');
    // 11.005 USD at 100 JPY per USD is 1100.5 → 1100 (tie to even); 12.34 is 1234.
    const jpy = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=JPY`));
    const jpySources = Object.fromEntries(jpy.versions[0].sources.map((source: { source: string; price: string }) => [source.source, source]));
    expect(jpySources.csmarket.price).toBe('1100');
    expect(jpySources.steam.price).toBe('1234');
    expect(jpy.fx).toEqual({ base: 'USD', quote: 'JPY', rate: '100.00000000', as_of: '2026-11-25', source: 'ecb' });
  });
});
