import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { catalogIdFor, versionFromPhaseLabel } from '../../shared/catalog/identity.ts';
import { sourcesOfItems } from '../../shared/compat/dataset.ts';
import { buildSkinportSales, skinportItemPage, skinportItems, skinportItemsBuilder, skinportSales } from '../../shared/compat/skinport.ts';
import type { CompatAnswer, CompatContext, CompatDataset, CompatSourcePrice, CompatVersion } from '../../shared/compat/types.ts';
import { documentText } from '../../shared/compat/types.ts';
import { decimalJsConverter } from '../../shared/fx/convert-decimal.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { createTestApp, seedFreshFxRates } from '../helpers.ts';

/** The format's builder, with texts of its own (kept between this suite's builds only). */
const buildSkinportItems = skinportItemsBuilder();

// ---- the shapes Skinport's clients expect, written from Skinport's real bodies ----------------
//
// /v1/items (skinport.py Item, skinport-rs ItemResponse, captures such as
//   {"market_hash_name":"AK-47 | Aquamarine Revenge (Battle-Scarred)","currency":"EUR","suggested_price":18.41,
//    "item_page":"https://skinport.com/item/ak-47-aquamarine-revenge-battle-scarred",
//    "market_page":"https://skinport.com/market?item=Aquamarine%20Revenge&cat=Rifle&type=AK-47","min_price":18.73,
//    "max_price":44.9,"mean_price":31.21,"median_price":30,"quantity":3,"created_at":1535988253,"updated_at":1729600814}
// and phase rows carrying "version":"Phase 4"): a bare array, numbers, unix seconds, prices null when quantity is 0.
const ITEM_FIELDS = [
  'market_hash_name',
  'version',
  'currency',
  'suggested_price',
  'item_page',
  'market_page',
  'min_price',
  'max_price',
  'mean_price',
  'median_price',
  'quantity',
  'created_at',
  'updated_at',
];
const SALES_FIELDS = ['market_hash_name', 'version', 'currency', 'item_page', 'market_page'];
const WINDOW_FIELDS = ['last_24_hours', 'last_7_days', 'last_30_days', 'last_90_days'];

const isNumberOrNull = (value: unknown) => value === null || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
const isStringOrNull = (value: unknown) => value === null || typeof value === 'string';
const isUnixSeconds = (value: unknown) => typeof value === 'number' && Number.isInteger(value) && value > 1_000_000_000 && value < 10_000_000_000;

function expectSkinportItemsShape(body: unknown): asserts body is Record<string, unknown>[] {
  expect(Array.isArray(body)).toBe(true);
  for (const row of body as Record<string, unknown>[]) {
    expect(Object.keys(row).every((key) => ITEM_FIELDS.includes(key))).toBe(true);
    expect(typeof row.market_hash_name).toBe('string');
    expect(isStringOrNull(row.version)).toBe(true);
    if (row.version !== null && row.version !== undefined) expect(versionFromPhaseLabel(row.version as string)).not.toBeNull();
    expect(row.currency).toMatch(/^[A-Z]{3}$/);
    for (const field of ['suggested_price', 'min_price', 'max_price', 'mean_price', 'median_price']) expect(isNumberOrNull(row[field])).toBe(true);
    for (const field of ['item_page', 'market_page']) expect(isStringOrNull(row[field])).toBe(true);
    if (typeof row.item_page === 'string') expect(row.item_page).toStartWith('https://skinport.com/item/');
    expect(row.quantity === null || (Number.isInteger(row.quantity) && (row.quantity as number) >= 0)).toBe(true);
    if (row.quantity === 0) for (const field of ['min_price', 'max_price', 'mean_price', 'median_price']) expect(row[field]).toBeNull();
    expect(row.created_at === null || isUnixSeconds(row.created_at)).toBe(true);
    expect(isUnixSeconds(row.updated_at)).toBe(true);
  }
}

function expectSkinportSalesShape(body: unknown): asserts body is Record<string, unknown>[] {
  expect(Array.isArray(body)).toBe(true);
  for (const row of body as Record<string, unknown>[]) {
    expect(Object.keys(row).every((key) => SALES_FIELDS.includes(key) || WINDOW_FIELDS.includes(key))).toBe(true);
    expect(typeof row.market_hash_name).toBe('string');
    expect(isStringOrNull(row.version)).toBe(true);
    expect(row.currency).toMatch(/^[A-Z]{3}$/);
    for (const field of WINDOW_FIELDS) {
      if (!(field in row)) continue;
      const window = row[field] as Record<string, unknown>;
      expect(Object.keys(window).sort()).toEqual(['avg', 'max', 'median', 'min', 'volume']);
      expect(Number.isInteger(window.volume) && (window.volume as number) >= 0).toBe(true);
      for (const price of ['min', 'max', 'avg', 'median']) {
        expect(isNumberOrNull(window[price])).toBe(true);
        if (window.volume === 0) expect(window[price]).toBeNull();
      }
    }
  }
}

// ---- a hand-made dataset --------------------------------------------------------------------

const BUILT_AT = Date.UTC(2030, 0, 2, 12, 0, 0);
const SKINPORT_SEEN = Date.UTC(2030, 0, 2, 11, 55, 0);
const FIRST_SEEN = Date.UTC(2024, 5, 1);

function source(price: string, options: Partial<CompatSourcePrice> = {}): CompatSourcePrice {
  return { price, median_price: null, bid: null, volume_7d: null, quantity: 5, source_time_ms: SKINPORT_SEEN, fresh: true, ...options };
}

function version(options: Partial<CompatVersion> = {}): CompatVersion {
  return { sources: {}, consensus: null, sales: {}, combined: {}, ...options };
}

const window = (median: string | null, volume: number, extra: { mean?: string; min?: string; max?: string } = {}) => ({
  median,
  mean: extra.mean ?? median,
  min: extra.min ?? median,
  max: extra.max ?? median,
  volume,
});

const WITHOUT_SOURCES: Omit<CompatDataset, 'sources'> = {
  built_at_ms: BUILT_AT,
  sales_generation: '0',
  rates: null,
  items: [
    {
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      catalog_id: 'itm_ak',
      first_seen_ms: FIRST_SEEN,
      versions: {
        default: version({
          sources: {
            skinport: source('12.50', { median_price: '13.10', quantity: 42 }),
            steam: source('14.95', { quantity: 900, source_time_ms: SKINPORT_SEEN - 60_000 }),
          },
          consensus: '12.80',
          sales: {
            skinport: {
              '24h': window('29.30', 41, { mean: '29.41', min: '28.13', max: '31.90' }),
              '7d': window('28.95', 296),
              '30d': window(null, 0),
              '90d': window('27.90', 3310),
            },
            steam: { '24h': window('31.00', 500) },
          },
          combined: { '24h': window('30.90', 541), '7d': window('28.95', 296), '90d': window('27.90', 3310) },
        }),
      },
    },
    {
      market_hash_name: 'Sticker | Crown (Foil)',
      catalog_id: 'itm_crown',
      first_seen_ms: null,
      versions: { default: version() },
    },
    {
      market_hash_name: 'StatTrak™ M4A1-S | Hyper Beast (Minimal Wear)',
      catalog_id: 'itm_m4',
      first_seen_ms: FIRST_SEEN,
      versions: {
        // skinport's price went stale: the consensus of the fresh markets answers, not an old ask.
        default: version({
          sources: {
            skinport: source('40.00', { fresh: false, source_time_ms: BUILT_AT - 86_400_000 }),
            csfloat: source('38.10', { quantity: null, source_time_ms: BUILT_AT - 120_000 }),
            waxpeer: source('38.40', { quantity: 7, source_time_ms: BUILT_AT - 30_000 }),
          },
          consensus: '38.25',
          combined: { '24h': window('39.99', 3) },
          sales: { steam: { '24h': window('39.99', 3) } },
        }),
      },
    },
    {
      market_hash_name: '★ Karambit | Doppler (Factory New)',
      catalog_id: 'itm_karambit',
      first_seen_ms: FIRST_SEEN,
      versions: {
        default: version({ sources: { csfloat: source('1200.00', { quantity: 3 }) }, consensus: '1200.00' }),
        ruby: version({
          sources: { skinport: source('4650.02', { median_price: '4700.00', quantity: 2 }) },
          consensus: '4680.5',
          sales: {
            skinport: {
              '24h': window(null, 0),
              '7d': window('4650.02', 1),
              '30d': window('4650.02', 4, { min: '4410.00', max: '4899.99', mean: '4655.44' }),
              '90d': window('4602.50', 11),
            },
          },
        }),
        'phase-2': version(),
        // Ours alone: Skinport lists no pattern versions.
        'pattern-661': version({ sources: { csfloat: source('9000.00') }, consensus: '9000.00' }),
        'black-pearl': version({ sources: { skinport: source('123456789.99', { quantity: 1 }) }, consensus: null }),
      },
    },
  ],
};
const DATASET: CompatDataset = { ...WITHOUT_SOURCES, sources: sourcesOfItems(WITHOUT_SOURCES.items) };

// ---- a context: USD as stored, EUR and GBP at fixed ECB-style rates (units per EUR), converted exactly ----

const PER_EUR: Record<string, string> = { EUR: '1', USD: '1.0850', GBP: '0.85500' };
function testContext(currencies: readonly string[] = ['EUR', 'GBP', 'USD']): CompatContext {
  return {
    currencies,
    convert: (usd, currency) => {
      if (!currencies.includes(currency)) return null;
      if (currency === 'USD') return usd;
      return decimalJsConverter(PER_EUR[currency]!, PER_EUR.USD!, 2)(usd);
    },
  };
}

const query = (text: string) => ({ params: {}, query: new URLSearchParams(text) });

function bodyOf(answer: CompatAnswer): unknown {
  expect(answer.status).toBe(200);
  if (!('body' in answer)) throw new Error('no body');
  return typeof answer.body === 'string' ? JSON.parse(answer.body) : answer.body;
}

const itemsDocument = () => JSON.parse(documentText(buildSkinportItems(DATASET))) as unknown;
const salesDocument = () => JSON.parse(documentText(buildSkinportSales(DATASET))) as unknown;

// ---- /v1/items ------------------------------------------------------------------------------

describe('skinport /v1/items', () => {
  test('answers Skinport’s bare array in its field order, EUR by default, every number written from its decimal', () => {
    const answer = skinportItems(itemsDocument(), query('app_id=730'), testContext());
    const text = (answer as { body: string }).body;
    expect(typeof text).toBe('string');
    const rows = bodyOf(answer);
    expectSkinportItemsShape(rows);
    for (const row of rows) expect(Object.keys(row)).toEqual(ITEM_FIELDS);
    expect(rows.every((row) => row.currency === 'EUR')).toBe(true);
    // 12.50 USD / 1.0850 = 11.5207… EUR, half-even to cents, as the JSON number's own text.
    expect(text).toContain('"min_price":11.52,');
    expect((answer as { memoKey?: string }).memoKey).toBe('skinport-items:EUR');
  });

  test('maps skinport’s own listing where it has the version: ask, median, quantity, its time, its item page', () => {
    const rows = bodyOf(skinportItems(itemsDocument(), query('app_id=730&currency=USD'), testContext())) as Record<string, unknown>[];
    const ak = rows.find((row) => row.market_hash_name === 'AK-47 | Redline (Field-Tested)')!;
    expect(ak).toEqual({
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      version: null,
      currency: 'USD',
      suggested_price: 12.8,
      item_page: 'https://skinport.com/item/ak-47-redline-field-tested',
      market_page: null,
      min_price: 12.5,
      max_price: null,
      mean_price: null,
      median_price: 13.1,
      quantity: 42,
      created_at: Math.floor(FIRST_SEEN / 1000),
      updated_at: Math.floor(SKINPORT_SEEN / 1000),
    });
  });

  test('lists the default version and Skinport’s phases (with its labels), not our pattern versions', () => {
    const rows = bodyOf(skinportItems(itemsDocument(), query('currency=USD'), testContext())) as Record<string, unknown>[];
    const karambit = rows.filter((row) => row.market_hash_name === '★ Karambit | Doppler (Factory New)');
    expect(karambit.map((row) => row.version)).toEqual([null, 'Ruby', 'Phase 2', 'Black Pearl']);
    const ruby = karambit.find((row) => row.version === 'Ruby')!;
    expect(ruby.item_page).toBe('https://skinport.com/item/karambit-doppler-factory-new+ruby');
    expect([ruby.min_price, ruby.median_price, ruby.quantity]).toEqual([4650.02, 4700, 2]);
    // Nothing anywhere for Phase 2: unlisted, as Skinport writes an item nobody sells.
    const phase2 = karambit.find((row) => row.version === 'Phase 2')!;
    expect([phase2.quantity, phase2.min_price, phase2.suggested_price, phase2.item_page]).toEqual([0, null, null, null]);
    expect(phase2.updated_at).toBe(Math.floor(BUILT_AT / 1000));
  });

  test('without a fresh skinport price: the consensus, the fresh markets’ listings, no Skinport page', () => {
    const rows = bodyOf(skinportItems(itemsDocument(), query('currency=USD'), testContext())) as Record<string, unknown>[];
    const m4 = rows.find((row) => row.market_hash_name === 'StatTrak™ M4A1-S | Hyper Beast (Minimal Wear)')!;
    // csfloat states no quantity: waxpeer's 7 are the listings we know of; the stale skinport ask is not used.
    expect([m4.min_price, m4.suggested_price, m4.median_price, m4.quantity, m4.item_page]).toEqual([38.25, 38.25, null, 7, null]);
    expect(m4.updated_at).toBe(Math.floor((BUILT_AT - 30_000) / 1000));
    const sticker = rows.find((row) => row.market_hash_name === 'Sticker | Crown (Foil)')!;
    expect([sticker.quantity, sticker.min_price, sticker.created_at]).toEqual([0, null, null]);
  });

  test('large prices stay exact (no float on the way)', () => {
    const answer = skinportItems(itemsDocument(), query('currency=USD'), testContext());
    expect((answer as { body: string }).body).toContain('"min_price":123456789.99,');
  });

  test('the oldest source time used is the document’s age', () => {
    expect(buildSkinportItems(DATASET).oldest_source_ms).toBe(SKINPORT_SEEN);
  });

  test('tradable=0/1/true/false is accepted and changes nothing; unknown parameters are ignored', () => {
    const context = testContext();
    const plain = skinportItems(itemsDocument(), query('app_id=730&currency=GBP'), context) as { body: string; memoKey: string };
    for (const tradable of ['0', '1', 'true', 'false']) {
      const answer = skinportItems(itemsDocument(), query(`app_id=730&currency=GBP&tradable=${tradable}&foo=bar`), context) as {
        body: string;
        memoKey: string;
      };
      expect(answer.body).toBe(plain.body);
      expect(answer.memoKey).toBe(plain.memoKey);
    }
  });

  test('another app, a currency Skinport does not offer, one we cannot convert now, or a bad tradable: Skinport’s validation error', () => {
    const context = testContext();
    for (const text of ['app_id=570', 'currency=JPY', 'currency=HRK', 'tradable=maybe']) {
      const answer = skinportItems(itemsDocument(), query(text), context);
      expect(answer.status).toBe(400);
      const body = (answer as { body: { errors: { id: string; message: string }[] } }).body;
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0]!.id).toBe('validation_error');
      expect(typeof body.errors[0]!.message).toBe('string');
    }
  });

  test('the whole list is written once per document and currency, and again when the rates move', () => {
    const document = itemsDocument();
    let conversions = 0;
    let usdPerEur = '1.0850';
    const context: CompatContext = {
      currencies: ['EUR'],
      convert: (usd, currency) => {
        conversions += 1;
        return currency === 'EUR' ? decimalJsConverter('1', usdPerEur, 2)(usd) : null;
      },
    };
    const first = (skinportItems(document, query('currency=EUR'), context) as { body: string }).body;
    const afterFirst = conversions;
    expect((skinportItems(document, query('currency=EUR&tradable=1'), context) as { body: string }).body).toBe(first);
    // The second answer converted only the rate probe.
    expect(conversions - afterFirst).toBe(1);
    usdPerEur = '1.1000';
    const moved = (skinportItems(document, query('currency=EUR'), context) as { body: string }).body;
    expect(moved).not.toBe(first);
    expect(moved).toContain('"min_price":11.36,');
  });

  test('a client reading it the way skinport.py users do: min_price by market_hash_name, default versions', () => {
    const rows = bodyOf(skinportItems(itemsDocument(), query('app_id=730&currency=EUR&tradable=0'), testContext())) as {
      market_hash_name: string;
      version: string | null;
      min_price: number | null;
      quantity: number | null;
    }[];
    const prices = new Map<string, number>();
    for (const item of rows)
      if (item.version === null && item.min_price !== null && (item.quantity ?? 1) > 0) prices.set(item.market_hash_name, item.min_price);
    expect(prices.get('AK-47 | Redline (Field-Tested)')).toBe(11.52);
    expect(prices.get('★ Karambit | Doppler (Factory New)')).toBe(1105.99);
    expect(prices.has('Sticker | Crown (Foil)')).toBe(false);
  });
});

describe('skinport item pages', () => {
  test('follow the slug Skinport’s own links use', () => {
    expect(skinportItemPage('★ Hand Wraps | Giraffe (Minimal Wear)', null)).toBe('https://skinport.com/item/hand-wraps-giraffe-minimal-wear');
    expect(skinportItemPage('StatTrak™ AK-47 | Redline (Field-Tested)', null)).toBe('https://skinport.com/item/stattrak-ak-47-redline-field-tested');
    expect(skinportItemPage('3rd Commando Company | KSK', null)).toBe('https://skinport.com/item/3rd-commando-company-ksk');
    expect(skinportItemPage('★ Bayonet | Doppler (Factory New)', 'Phase 4')).toBe('https://skinport.com/item/bayonet-doppler-factory-new+phase-4');
  });
});

// ---- /v1/sales/history ----------------------------------------------------------------------

describe('skinport /v1/sales/history', () => {
  test('the recorded body of Skinport’s format passes the same shape check as ours', () => {
    const recorded = JSON.parse(readFileSync(new URL('../fixtures/upstream/skinport-sales-history.json', import.meta.url), 'utf8'));
    expectSkinportSalesShape(recorded);
  });

  test('every version with sales: skinport’s own windows where it has them, in Skinport’s shape', () => {
    const rows = bodyOf(skinportSales(salesDocument(), query('app_id=730&currency=USD'), testContext())) as Record<string, unknown>[];
    expectSkinportSalesShape(rows);
    expect(rows.map((row) => [row.market_hash_name, row.version])).toEqual([
      ['AK-47 | Redline (Field-Tested)', null],
      ['StatTrak™ M4A1-S | Hyper Beast (Minimal Wear)', null],
      ['★ Karambit | Doppler (Factory New)', 'Ruby'],
    ]);
    const ak = rows[0]!;
    expect(Object.keys(ak)).toEqual([...SALES_FIELDS, ...WINDOW_FIELDS]);
    expect(ak.item_page).toBe('https://skinport.com/item/ak-47-redline-field-tested');
    // Skinport's own 24 h (41 sales), not the combined window with Steam's 500.
    expect(ak.last_24_hours).toEqual({ min: 28.13, max: 31.9, avg: 29.41, median: 29.3, volume: 41 });
    expect(ak.last_30_days).toEqual({ min: null, max: null, avg: null, median: null, volume: 0 });
    const ruby = rows[2]!;
    expect(ruby.last_30_days).toEqual({ min: 4410, max: 4899.99, avg: 4655.44, median: 4650.02, volume: 4 });
  });

  test('without skinport sales: the combined windows, only those that exist, no Skinport page', () => {
    const rows = bodyOf(skinportSales(salesDocument(), query('currency=USD'), testContext())) as Record<string, unknown>[];
    const m4 = rows.find((row) => row.market_hash_name === 'StatTrak™ M4A1-S | Hyper Beast (Minimal Wear)')!;
    expect(m4.item_page).toBeNull();
    expect(Object.keys(m4)).toEqual([...SALES_FIELDS, 'last_24_hours']);
    expect(m4.last_24_hours).toEqual({ min: 39.99, max: 39.99, avg: 39.99, median: 39.99, volume: 3 });
  });

  test('market_hash_name is a comma-joined list, as clients send it; unknown names are left out; the list’s order is kept', () => {
    const document = salesDocument();
    const asked = encodeURIComponent('★ Karambit | Doppler (Factory New),Nothing Like It,AK-47 | Redline (Field-Tested)');
    const answer = skinportSales(document, query(`app_id=730&currency=EUR&market_hash_name=${asked}`), testContext());
    expect((answer as { memoKey?: string }).memoKey).toBeUndefined();
    const rows = bodyOf(answer) as Record<string, unknown>[];
    expectSkinportSalesShape(rows);
    expect(rows.map((row) => row.market_hash_name)).toEqual(['AK-47 | Redline (Field-Tested)', '★ Karambit | Doppler (Factory New)']);
    expect((rows[0]!.last_24_hours as { median: number }).median).toBe(27.0);
    expect(bodyOf(skinportSales(document, query('market_hash_name=Nothing'), testContext()))).toEqual([]);
  });

  test('the document’s age is the oldest observation of the windows it used', () => {
    expect(buildSkinportSales(DATASET).oldest_source_ms).toBeNull();
    const timed: CompatDataset = {
      ...DATASET,
      items: [
        {
          market_hash_name: 'AK-47 | Redline (Field-Tested)',
          catalog_id: 'itm_ak',
          first_seen_ms: null,
          versions: {
            default: version({
              sales: {
                skinport: {
                  '24h': { ...window('29.30', 41), source_time_ms: BUILT_AT - 3_600_000 },
                  '7d': { ...window('28.95', 296), source_time_ms: BUILT_AT - 1_800_000 },
                },
              },
              combined: { '24h': { ...window('30.00', 900), source_time_ms: BUILT_AT - 7_200_000 } },
            }),
          },
        },
      ],
    };
    // Skinport's own windows were used, not the older combined one.
    expect(buildSkinportSales(timed).oldest_source_ms).toBe(BUILT_AT - 3_600_000);
  });

  test('the whole list is memoised per currency; errors as Skinport gives them', () => {
    expect((skinportSales(salesDocument(), query('currency=GBP'), testContext()) as { memoKey?: string }).memoKey).toBe('skinport-sales:GBP');
    expect(skinportSales(salesDocument(), query('app_id=440'), testContext()).status).toBe(400);
    expect(skinportSales(salesDocument(), query('currency=XYZ'), testContext()).status).toBe(400);
  });

  test('a client pooling the 7-day medians by name, as sales-history readers do', () => {
    const rows = bodyOf(skinportSales(salesDocument(), query('currency=USD'), testContext())) as {
      market_hash_name: string;
      last_7_days?: { median: number | null; volume: number };
    }[];
    const medians = Object.fromEntries(rows.filter((row) => row.last_7_days?.median != null).map((row) => [row.market_hash_name, row.last_7_days!.median]));
    expect(medians).toEqual({ 'AK-47 | Redline (Field-Tested)': 28.95, '★ Karambit | Doppler (Factory New)': 4650.02 });
  });
});

describe('end to end through GET /compat/skinport/v1/…', () => {
  // The per-address budget counts every suite's keyless requests in a minute: this one's limit is out of the way.
  const t = createTestApp({ config: { PUBLIC_PRICES_RATE_LIMIT: '1000000' } });
  afterAll(() => t.close());
  const suffix = crypto.randomUUID().slice(0, 8);
  const plain = `SKINPORT E2E ${suffix} | Redline (Field-Tested)`;
  const doppler = `★ SKINPORT E2E ${suffix} | Doppler (Factory New)`;

  async function setPrice(name: string, source: string, price: string, options: { version?: string; quantity?: number } = {}) {
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, ${source}, ${options.version ?? 'default'}, ${price}::numeric, ${options.quantity ?? null}, now(), now(), ${crypto.randomUUID()})
      on conflict (catalog_id, version, source) do update set price = excluded.price, quantity = excluded.quantity, source_time = excluded.source_time`;
    await t.deps.sql`insert into price_sources (name, last_success_at) values (${source}, now()) on conflict (name) do update set last_success_at = now()`;
  }

  test('a consumer reads items by market_hash_name and min_price, and a name’s sales history, as Skinport clients do', async () => {
    const sql = t.deps.sql;
    await seedFreshFxRates(sql);
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(plain)}, ${plain}, 'weapon')`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type, phases) values (${catalogIdFor(doppler)}, ${doppler}, 'knife', ${['ruby']})`;
    await setPrice(plain, 'skinport', '12.30', { quantity: 7 });
    await setPrice(doppler, 'csfloat', '4650.02', { version: 'ruby', quantity: 1 });
    await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
      values (${catalogIdFor(plain)}, 'default', 'skinport', '7d', 12.95, 13.02, 11.5, 15.1, 296, now(), now(), ${crypto.randomUUID()}),
             (${catalogIdFor(plain)}, 'default', 'skinport', '24h', null, null, null, null, 0, now(), now(), ${crypto.randomUUID()})`;
    await buildPriceSnapshot(sql, new Date());

    const usd = await t.request('/compat/skinport/v1/items?app_id=730&currency=USD&tradable=0');
    expect(usd.status).toBe(200);
    const rows = (await usd.json()) as unknown;
    expectSkinportItemsShape(rows);
    const minPrice = new Map(rows.filter((row) => row.version === null).map((row) => [row.market_hash_name as string, row.min_price as number | null]));
    expect(minPrice.get(plain)).toBe(12.3);
    const ruby = rows.find((row) => row.market_hash_name === doppler && row.version === 'Ruby')!;
    expect([ruby.min_price, ruby.item_page]).toEqual([4650.02, null]);

    // Skinport's default currency, converted at the stored rates.
    const eur = (await (await t.request('/compat/skinport/v1/items?app_id=730')).json()) as Record<string, unknown>[];
    const eurRow = eur.find((row) => row.market_hash_name === plain)!;
    expect(eurRow.currency).toBe('EUR');
    expect(typeof eurRow.min_price).toBe('number');

    const asked = encodeURIComponent(`${plain},Nothing ${suffix}`);
    const history = (await (await t.request(`/compat/skinport/v1/sales/history?app_id=730&currency=USD&market_hash_name=${asked}`)).json()) as unknown;
    expectSkinportSalesShape(history);
    expect(history).toHaveLength(1);
    expect(history[0]!.last_7_days).toEqual({ min: 11.5, max: 15.1, avg: 13.02, median: 12.95, volume: 296 });
    expect(history[0]!.last_24_hours).toEqual({ min: null, max: null, avg: null, median: null, volume: 0 });

    const refused = await t.request('/compat/skinport/v1/items?app_id=730&currency=JPY');
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ errors: [{ id: 'validation_error' }] });
  });
});
