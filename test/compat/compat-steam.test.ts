import { afterAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { sourcesOfItems } from '../../shared/compat/dataset.ts';
import { steamOverview, steamOverviewBuilder, steamVolume } from '../../shared/compat/steam.ts';
import type { CompatAnswer, CompatContext, CompatDataset, CompatSourcePrice, CompatVersion } from '../../shared/compat/types.ts';
import { documentText } from '../../shared/compat/types.ts';
import { minorUnits } from '../../shared/fx/convert.ts';
import { decimalJsConverter } from '../../shared/fx/convert-decimal.ts';
import { parseSteamMoney } from '../../shared/fx/steam-currencies.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { createTestApp, seedFreshFxRates } from '../helpers.ts';

/** The format's builder, with texts of its own (kept between this suite's builds only). */
const buildSteamOverview = steamOverviewBuilder();

// ---- the shape Steam's clients expect, written from Steam's real priceoverview bodies ---------
//
//   {"success":true,"lowest_price":"$2.30","volume":"1,234","median_price":"$2.40"}
//   {"success":true,"lowest_price":"1,66€","volume":"5,638","median_price":"1,63€"}
//   {"success":true,"lowest_price":"1496,28 руб."}
//   {"success":false}
// (test/fixtures/upstream/steam-priceoverview-currencies.json records them, one per wallet currency.)
function expectPriceOverviewShape(body: unknown): asserts body is { success: boolean; lowest_price?: string; volume?: string; median_price?: string } {
  expect(typeof body).toBe('object');
  const record = body as Record<string, unknown>;
  expect(typeof record.success).toBe('boolean');
  expect(Object.keys(record).every((key) => ['success', 'lowest_price', 'volume', 'median_price'].includes(key))).toBe(true);
  if (record.success === false) expect(Object.keys(record)).toEqual(['success']);
  for (const field of ['lowest_price', 'volume', 'median_price']) if (field in record) expect(typeof record[field]).toBe('string');
  if ('volume' in record) expect(record.volume).toMatch(/^[1-9][0-9]{0,2}(,[0-9]{3})*$/);
}

const BUILT_AT = Date.UTC(2030, 0, 2, 12, 0, 0);
const STEAM_SEEN = BUILT_AT - 600_000;

function source(price: string, options: Partial<CompatSourcePrice> = {}): CompatSourcePrice {
  return { price, median_price: null, bid: null, volume_7d: null, quantity: 100, source_time_ms: STEAM_SEEN, fresh: true, ...options };
}
function version(options: Partial<CompatVersion> = {}): CompatVersion {
  return { sources: {}, consensus: null, sales: {}, combined: {}, ...options };
}
const day = (median: string | null, volume: number) => ({ '24h': { median, mean: median, min: median, max: median, volume } });

const WITHOUT_SOURCES: Omit<CompatDataset, 'sources'> = {
  built_at_ms: BUILT_AT,
  sales_generation: '0',
  rates: null,
  items: [
    {
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      catalog_id: 'itm_ak',
      first_seen_ms: null,
      versions: {
        default: version({ sources: { steam: source('2.30'), skinport: source('1.90') }, consensus: '2.00', sales: { steam: day('2.40', 1234) } }),
        // Steam has no phases: only the default version answers.
        ruby: version({ sources: { steam: source('999.00') } }),
      },
    },
    {
      market_hash_name: 'Operation Breakout Weapon Case',
      catalog_id: 'itm_case',
      first_seen_ms: null,
      // Nothing sold in 24 hours: Steam leaves volume and median_price out.
      versions: { default: version({ sources: { steam: source('1496.28') }, sales: { steam: day(null, 0) } }) },
    },
    {
      market_hash_name: 'Sticker | Crown (Foil)',
      catalog_id: 'itm_crown',
      first_seen_ms: null,
      // Listed elsewhere only: Steam's fields stay out (no other market's price passes for Steam's).
      versions: { default: version({ sources: { csfloat: source('900.00') }, consensus: '900.00' }) },
    },
    {
      market_hash_name: 'M4A4 | Howl (Factory New)',
      catalog_id: 'itm_howl',
      first_seen_ms: null,
      // A stale ask is not today's lowest price; the 24 h window still is Steam's.
      versions: {
        default: version({
          sources: { steam: source('5200.00', { fresh: false, source_time_ms: BUILT_AT - 86_400_000 }) },
          sales: { steam: day('5100.00', 2) },
        }),
      },
    },
    {
      market_hash_name: 'Sealed Graffiti | Lambda (Bazooka Pink)',
      catalog_id: 'itm_graffiti',
      first_seen_ms: null,
      versions: { default: version({ sources: { steam: source('0.03', { source_time_ms: STEAM_SEEN - 1000 }) }, sales: { steam: day('0.03', 1_234_567) } }) },
    },
  ],
};
const DATASET: CompatDataset = { ...WITHOUT_SOURCES, sources: sourcesOfItems(WITHOUT_SOURCES.items) };

/** USD as stored; EUR, JPY, GBP and KWD at fixed ECB-style rates (units per EUR), exact, to each currency's minor units. */
const PER_EUR: Record<string, string> = { EUR: '1', USD: '1.0850', JPY: '163.12', GBP: '0.85500', KWD: '0.3342' };
function testContext(currencies: readonly string[] = ['EUR', 'GBP', 'JPY', 'KWD', 'USD']): CompatContext {
  return {
    currencies,
    convert: (usd, currency) => {
      if (!currencies.includes(currency)) return null;
      if (currency === 'USD') return usd;
      return decimalJsConverter(PER_EUR[currency]!, PER_EUR.USD!, minorUnits(currency))(usd);
    },
  };
}

const document = () => JSON.parse(documentText(buildSteamOverview(DATASET))) as unknown;
function overview(name: string, extra = 'appid=730&currency=1', context = testContext()): CompatAnswer {
  return steamOverview(document(), { params: {}, query: new URLSearchParams(`${extra}&market_hash_name=${encodeURIComponent(name)}`) }, context);
}
function bodyOf(answer: CompatAnswer) {
  expect(answer.status).toBe(200);
  const body = (answer as { body: unknown }).body;
  expectPriceOverviewShape(body);
  expect((answer as { memoKey?: string }).memoKey).toBeUndefined();
  return body;
}

describe('steam priceoverview', () => {
  test('the recorded Steam bodies pass the shape check ours must pass', () => {
    const recorded = JSON.parse(readFileSync(new URL('../fixtures/upstream/steam-priceoverview-currencies.json', import.meta.url), 'utf8')) as {
      bodies: { body: unknown }[];
    };
    for (const { body } of recorded.bodies) expectPriceOverviewShape(body);
    expectPriceOverviewShape({ success: false });
  });

  test('answers Steam’s shape in USD: the steam ask, the 24-hour volume and median', () => {
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)'))).toEqual({ success: true, lowest_price: '$2.30', volume: '1,234', median_price: '$2.40' });
    // Without `currency`, Steam answers in USD.
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', 'appid=730'))).toEqual({
      success: true,
      lowest_price: '$2.30',
      volume: '1,234',
      median_price: '$2.40',
    });
  });

  test('each wallet currency in Steam’s own money format, converted exactly', () => {
    // 2.30 USD / 1.0850 = 2.1198… EUR → "2,12€"; JPY has no minor unit: 2.30 × 163.12 / 1.085 = 345.78… → "¥ 346".
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', 'appid=730&currency=3'))).toEqual({
      success: true,
      lowest_price: '2,12€',
      volume: '1,234',
      median_price: '2,21€',
    });
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', 'appid=730&currency=8')).lowest_price).toBe('¥ 346');
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', 'appid=730&currency=2')).lowest_price).toBe('£1.81');
    // KWD's third decimal (0.708…) is rounded half-even to Steam's cents.
    expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', 'appid=730&currency=38')).lowest_price).toBe('0.71 KD');
    // Thousands grouped as Steam groups them.
    expect(bodyOf(overview('M4A4 | Howl (Factory New)', 'appid=730&currency=1')).median_price).toBe('$5,100.00');
  });

  test('fields Steam has none for are left out; a known name with nothing at Steam is still a success', () => {
    expect(bodyOf(overview('Operation Breakout Weapon Case'))).toEqual({ success: true, lowest_price: '$1,496.28' });
    expect(bodyOf(overview('Sticker | Crown (Foil)'))).toEqual({ success: true });
    expect(bodyOf(overview('M4A4 | Howl (Factory New)'))).toEqual({ success: true, volume: '2', median_price: '$5,100.00' });
  });

  test('{"success":false} for a name we do not know, another app, no name, or a wallet currency we cannot convert now', () => {
    for (const answer of [
      overview('Not An Item (Field-Tested)'),
      overview('__proto__'),
      overview('AK-47 | Redline (Field-Tested)', 'appid=570&currency=1'),
      steamOverview(document(), { params: {}, query: new URLSearchParams('appid=730&currency=1') }, testContext()),
      overview('AK-47 | Redline (Field-Tested)', 'appid=730&currency=5'),
    ]) {
      expect(bodyOf(answer)).toEqual({ success: false });
    }
  });

  test('a currency id that is not a Steam wallet currency answers in USD, as Steam does', () => {
    for (const currency of ['999', '0', '33', 'usd']) {
      expect(bodyOf(overview('AK-47 | Redline (Field-Tested)', `appid=730&currency=${currency}`)).lowest_price).toBe('$2.30');
    }
  });

  test('volume carries Steam’s thousands separators in every currency', () => {
    expect([0, 7, 999, 1000, 12_345, 1_234_567].map(steamVolume)).toEqual(['0', '7', '999', '1,000', '12,345', '1,234,567']);
    expect(bodyOf(overview('Sealed Graffiti | Lambda (Bazooka Pink)', 'appid=730&currency=3')).volume).toBe('1,234,567');
  });

  test('the document’s age is the oldest fresh steam ask it used…', () => {
    expect(buildSteamOverview(DATASET).oldest_source_ms).toBe(STEAM_SEEN - 1000);
    // …or the 24-hour window it used, where the window says when it was observed.
    const timed: CompatDataset = {
      ...DATASET,
      items: [
        {
          ...DATASET.items[0]!,
          versions: {
            default: version({
              sources: { steam: source('2.30') },
              sales: { steam: { '24h': { ...day('2.40', 5)['24h'], source_time_ms: STEAM_SEEN - 5000 } } },
            }),
          },
        },
      ],
    };
    expect(buildSteamOverview(timed).oldest_source_ms).toBe(STEAM_SEEN - 5000);
  });

  test('a client reading it the way public tools do: strip the symbol, read the number', () => {
    // The common reader: `parseFloat(lowest_price.replace(/[^0-9.]/g, ''))` on a USD answer…
    const usd = bodyOf(overview('Operation Breakout Weapon Case'));
    expect(usd.success).toBe(true);
    expect(Number.parseFloat(usd.lowest_price!.replace(/[^0-9.]/g, ''))).toBe(1496.28);
    expect(Number.parseInt(bodyOf(overview('Sealed Graffiti | Lambda (Bazooka Pink)')).volume!.replace(/,/g, ''), 10)).toBe(1_234_567);
    // …and one that knows each currency's form reads every answer back to the converted amount.
    for (const [id, code] of [
      ['1', 'USD'],
      ['2', 'GBP'],
      ['3', 'EUR'],
      ['8', 'JPY'],
      ['38', 'KWD'],
    ] as const) {
      const body = bodyOf(overview('AK-47 | Redline (Field-Tested)', `appid=730&currency=${id}`));
      expect(parseSteamMoney(body.lowest_price!, code)).not.toBeNull();
      expect(parseSteamMoney(body.median_price!, code)).not.toBeNull();
    }
  });
});

describe('end to end through GET /compat/steam/market/priceoverview/', () => {
  // The per-address budget counts every suite's keyless requests in a minute: this one's limit is out of the way.
  const t = createTestApp({ config: { PUBLIC_PRICES_RATE_LIMIT: '1000000' } });
  afterAll(() => t.close());
  const name = `STEAM E2E ${crypto.randomUUID().slice(0, 8)} | Redline (Field-Tested)`;

  test('a reader that polls Steam gets Steam’s answer, symbol stripped to the same number', async () => {
    const sql = t.deps.sql;
    await seedFreshFxRates(sql);
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(name)}, ${name}, 'weapon')`;
    await sql`
      insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, 'steam', 'default', 2.30, 100, now(), now(), ${crypto.randomUUID()})
      on conflict (catalog_id, version, source) do update set price = excluded.price, source_time = excluded.source_time`;
    await sql`insert into price_sources (name, last_success_at) values ('steam', now()) on conflict (name) do update set last_success_at = now()`;
    await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, volume, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, 'default', 'steam', '24h', 2.40, 1234, now(), now(), ${crypto.randomUUID()})`;
    await buildPriceSnapshot(sql, new Date());

    const path = (query: string) => `/compat/steam/market/priceoverview/?appid=730&${query}&market_hash_name=${encodeURIComponent(name)}`;
    const response = await t.request(path('currency=1'));
    expect(response.status).toBe(200);
    const body = (await response.json()) as unknown;
    expectPriceOverviewShape(body);
    expect(body).toEqual({ success: true, lowest_price: '$2.30', volume: '1,234', median_price: '$2.40' });
    expect(Number.parseFloat(body.lowest_price!.replace(/[^0-9.]/g, ''))).toBe(2.3);

    // Steam's own path has its trailing slash; without it the same answer.
    const bare = (await (await t.request(path('currency=1').replace('/priceoverview/?', '/priceoverview?'))).json()) as unknown;
    expect(bare).toEqual(body);

    const eur = (await (await t.request(path('currency=3'))).json()) as { success: boolean; lowest_price: string };
    expect(eur.success).toBe(true);
    expect(parseSteamMoney(eur.lowest_price, 'EUR')).not.toBeNull();

    const unknown = await t.request(`/compat/steam/market/priceoverview/?appid=730&currency=1&market_hash_name=${encodeURIComponent(`${name} (none)`)}`);
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual({ success: false });
  });
});
