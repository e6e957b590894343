import { afterAll, describe, expect, test } from 'bun:test';
import { z } from 'zod';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { sourcesOfItems } from '../../shared/compat/dataset.ts';
import { steamApisItemsBuilder, steamapisItems } from '../../shared/compat/steamapis.ts';
import type { CompatContext, CompatDataset, CompatItem, CompatSourcePrice, CompatVersion } from '../../shared/compat/types.ts';
import { documentText } from '../../shared/compat/types.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { createTestApp, errorOf } from '../helpers.ts';

/** The format's builder, with texts of its own (kept between this suite's builds only). */
const buildSteamApisItems = steamApisItemsBuilder();

// SteamApis' /market/items/730 body as its documentation's response example shows it (numbers for
// prices, counts and unix-millisecond times; `unstable_reason` a reason string or false), with null
// where we hold no value (SteamApis writes 0 there; docs/design.md §20 never writes 0 for no data).
const n = z.number().nullable();
const unstableReason = z.union([
  z.literal(false),
  z.enum([
    'NO_SALES_WEEK',
    'NO_SALES_MONTH',
    'NO_SALES_3PLUS_MONTHS',
    'NO_SALES_OVERALL',
    'LOW_SALES_WEEK',
    'LOW_SALES_MONTH',
    'LOW_SALES_3PLUS_MONTHS',
    'LOW_SALES_OVERALL',
  ]),
]);
const itemShape = z.object({
  market_hash_name: z.string(),
  updated_at: z.number().int(),
  prices: z.strictObject({
    first_seen: z.number().int().nullable(),
    unstable_reason: unstableReason,
    unstable: z.boolean(),
    sold: z.strictObject({ avg_daily_volume: z.number().int().nullable(), last_90d: n, last_30d: n, last_7d: n, last_24h: n }),
    safe_ts: z.strictObject({ last_90d: n, last_30d: n, last_7d: n, last_24h: n }),
    safe: n,
    median: n,
    mean: n,
    max: n,
    avg: n,
    min: n,
    latest: n,
  }),
});
const fullShape = z.strictObject({ appID: z.literal(730), data: z.array(itemShape) });

const BUILT_AT = Date.parse('2030-01-02T00:00:00Z');
const FIRST_SEEN = Date.parse('2013-09-03T00:00:00Z');
const context: CompatContext = { convert: (usd) => usd, currencies: ['USD'] };

function source(price: string, options: Partial<CompatSourcePrice> = {}): CompatSourcePrice {
  return { price, median_price: null, bid: null, volume_7d: null, quantity: null, source_time_ms: BUILT_AT - 60_000, fresh: true, ...options };
}
function version(parts: Partial<CompatVersion>): CompatVersion {
  return { sources: {}, consensus: null, sales: {}, combined: {}, ...parts };
}
function item(name: string, versions: Record<string, CompatVersion>, firstSeen: number | null = null): CompatItem {
  return { market_hash_name: name, catalog_id: `itm_${name.length}`, first_seen_ms: firstSeen, versions };
}

const REDLINE = 'AK-47 | Redline (Field-Tested)';
const CASE = 'Revolution Case';
const STICKER = 'Sticker | Crown (Foil)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const NOTHING = 'Sealed Graffiti | Sorry (Tiger Orange)';

const withoutSources: Omit<CompatDataset, 'sources'> = {
  built_at_ms: BUILT_AT,
  sales_generation: '0',
  items: [
    item(
      REDLINE,
      {
        default: version({
          sources: { steam: source('13.05', { quantity: 420, source_time_ms: BUILT_AT - 7_200_000 }), skinport: source('10.5') },
          consensus: '10.9',
          // priceoverview: 1234 sold in 24 h at a median of 12.34 (no mean, min or max from Steam).
          sales: {
            steam: { '24h': { median: '12.3400', mean: null, min: null, max: null, volume: 1234 } },
            skinport: { '7d': { median: '10', mean: '10', min: '9', max: '11', volume: 50 } },
          },
        }),
      },
      FIRST_SEEN,
    ),
    // Steam sold none in the last 24 h: safe is our consensus, flagged unstable.
    item(CASE, {
      default: version({
        sources: { steam: source('2.50'), skinport: source('2.31') },
        consensus: '2.40',
        sales: { steam: { '24h': { median: null, mean: null, min: null, max: null, volume: 0 } } },
      }),
    }),
    // No steam data at all, only other markets.
    item(STICKER, { default: version({ sources: { csfloat: source('0.5') }, consensus: '0.5' }) }),
    // A phase-only item: SteamApis has no phases, and we hold no default version.
    item(KARAMBIT, { 'phase-2': version({ sources: { csfloat: source('1200') }, consensus: '1200' }) }),
    // Nothing SteamApis would say (a stale source, no consensus, no steam data).
    item(NOTHING, { default: version({ sources: { csfloat: source('0.03', { fresh: false }) } }) }),
  ].sort((a, b) => (a.market_hash_name < b.market_hash_name ? -1 : 1)),
  rates: null,
};
const dataset: CompatDataset = { ...withoutSources, sources: sourcesOfItems(withoutSources.items) };

const built = buildSteamApisItems(dataset);
const stored = JSON.parse(documentText(built)) as unknown;

function request(appId: string, query = '') {
  return steamapisItems(stored, { params: { app_id: appId }, query: new URLSearchParams(query) }, context);
}
function text(appId: string, query = ''): string {
  const answer = request(appId, query);
  expect(answer.status).toBe(200);
  if (answer.status !== 200 || !('body' in answer)) throw new Error('not a 200');
  return answer.body as string;
}

describe('steamapis /market/items/730', () => {
  test('parses with the shape of SteamApis’ documented body', () => {
    const body = fullShape.parse(JSON.parse(text('730')));
    expect(body.data.map((entry) => entry.market_hash_name)).toEqual([REDLINE, CASE, STICKER]);
  });

  test('maps steam’s 24 h sales window to safe_ts.last_24h, sold.last_24h and the overall statistics', () => {
    const body = fullShape.parse(JSON.parse(text('730')));
    const redline = body.data.find((entry) => entry.market_hash_name === REDLINE)!;
    expect(redline).toEqual({
      market_hash_name: REDLINE,
      updated_at: BUILT_AT - 7_200_000,
      prices: {
        first_seen: FIRST_SEEN,
        unstable_reason: false,
        unstable: false,
        sold: { avg_daily_volume: 1234, last_90d: null, last_30d: null, last_7d: null, last_24h: 1234 },
        safe_ts: { last_90d: null, last_30d: null, last_7d: null, last_24h: 12.34 },
        safe: 12.34,
        median: 12.34,
        mean: null,
        max: null,
        avg: null,
        min: null,
        latest: null,
      },
    });
  });

  test('without a steam sale the safe price is the consensus, unstable, NO_SALES_OVERALL; zero sales stay 0, unknown windows null', () => {
    const body = fullShape.parse(JSON.parse(text('730')));
    const revolution = body.data.find((entry) => entry.market_hash_name === CASE)!;
    expect(revolution.prices).toMatchObject({ safe: 2.4, unstable: true, unstable_reason: 'NO_SALES_OVERALL', median: null, first_seen: null });
    expect(revolution.prices.sold).toEqual({ avg_daily_volume: 0, last_90d: null, last_30d: null, last_7d: null, last_24h: 0 });
    const sticker = body.data.find((entry) => entry.market_hash_name === STICKER)!;
    expect(sticker.prices.sold).toEqual({ avg_daily_volume: null, last_90d: null, last_30d: null, last_7d: null, last_24h: null });
    expect(sticker.updated_at).toBe(BUILT_AT);
  });

  test('a consumer reads it the way csgotrader’s price generator did: data[].prices.safe_ts and sold by market_hash_name', () => {
    const response = JSON.parse(text('730')) as { data: { market_hash_name: string; prices: Record<string, Record<string, number | null>> }[] };
    const steamPrices: Record<string, Record<string, Record<string, number | null>>> = {};
    for (const entry of response.data) steamPrices[entry.market_hash_name] = entry.prices;
    expect(steamPrices[REDLINE]!.safe_ts!.last_24h).toBe(12.34);
    expect(steamPrices[REDLINE]!.sold!.last_24h).toBe(1234);
    expect('safe_ts' in steamPrices[CASE]!).toBe(true);
    expect(steamPrices[KARAMBIT]).toBeUndefined();
  });

  test('numbers are the decimal text, exactly', () => {
    expect(text('730')).toContain('"safe_ts":{"last_90d":null,"last_30d":null,"last_7d":null,"last_24h":12.34}');
  });

  test('an unknown format is ignored (the full body); another app is 400 in our error shape', () => {
    expect(text('730', 'format=detailed')).toBe(text('730'));
    expect(request('730', 'format=detailed')).toMatchObject({ memoKey: 'full' });
    expect(request('570')).toEqual({ status: 400, ours: { message: expect.any(String), field: 'app_id' } });
    expect(request('abc', 'format=compact')).toMatchObject({ status: 400 });
  });

  test('X-Source-Age counts the steam source’s time, or the fresh sources behind a consensus', () => {
    expect(built.oldest_source_ms).toBe(BUILT_AT - 7_200_000);
  });
});

describe('steamapis format=compact', () => {
  test('{name: safe price} read the way public scripts do (prices[name])', () => {
    const prices = z.record(z.string(), z.number().nullable()).parse(JSON.parse(text('730', 'format=compact&api_key=ignored')));
    expect(prices).toEqual({ [REDLINE]: 12.34, [CASE]: 2.4, [STICKER]: 0.5 });
    const inventory = [REDLINE, REDLINE, STICKER];
    const total = inventory.reduce((sum, name) => sum + (prices[name] ?? 0), 0);
    expect(total.toFixed(2)).toBe('25.18');
  });

  test('compact_value picks another documented value; an unknown one is ignored', () => {
    expect(JSON.parse(text('730', 'format=compact&compact_value=unstable'))).toEqual({ [REDLINE]: false, [CASE]: true, [STICKER]: true });
    expect(JSON.parse(text('730', 'format=compact&compact_value=safe_ts.last_24h'))).toEqual({ [REDLINE]: 12.34, [CASE]: null, [STICKER]: null });
    expect(JSON.parse(text('730', 'format=compact&compact_value=unstable_reason'))).toEqual({
      [REDLINE]: false,
      [CASE]: 'NO_SALES_OVERALL',
      [STICKER]: 'NO_SALES_OVERALL',
    });
    expect(request('730', 'format=compact&compact_value=first_seen')).toMatchObject({ memoKey: 'compact:safe' });
    expect(request('730', 'format=compact&compact_value=latest')).toMatchObject({ memoKey: 'compact:latest' });
  });
});

describe('end to end through GET /compat/steamapis/market/items/730', () => {
  // The per-address budget counts every suite's keyless requests in a minute: this one's limit is out of the way.
  const t = createTestApp({ config: { PUBLIC_PRICES_RATE_LIMIT: '1000000' } });
  afterAll(() => t.close());
  const name = `STEAMAPIS E2E ${crypto.randomUUID().slice(0, 8)} | Redline (Field-Tested)`;

  test('a consumer reads the compact map by name and the full body’s safe_ts and sold; another app is our 400', async () => {
    const sql = t.deps.sql;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(name)}, ${name}, 'weapon')`;
    await sql`
      insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, 'steam', 'default', 13.05, 420, now(), now(), ${crypto.randomUUID()})
      on conflict (catalog_id, version, source) do update set price = excluded.price`;
    await sql`insert into price_sources (name, last_success_at) values ('steam', now()) on conflict (name) do update set last_success_at = now()`;
    await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, volume, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, 'default', 'steam', '24h', 12.34, 1234, now(), now(), ${crypto.randomUUID()})`;
    await buildPriceSnapshot(sql, new Date());

    const compact = (await (await t.request('/compat/steamapis/market/items/730?format=compact')).json()) as Record<string, number | null>;
    expect(compact[name]).toBe(12.34);
    const full = fullShape.parse(await (await t.request('/compat/steamapis/market/items/730')).json());
    const entry = full.data.find((row) => row.market_hash_name === name)!;
    expect(entry.prices.safe_ts.last_24h).toBe(12.34);
    expect(entry.prices.sold.last_24h).toBe(1234);
    expect(entry.prices.unstable).toBe(false);
    const other = await t.request('/compat/steamapis/market/items/570');
    expect(other.status).toBe(400);
    expect((await errorOf(other)).code).toBe('invalid_request');
  });
});
