import { afterAll, describe, expect, test } from 'bun:test';
import { z } from 'zod';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { csgotraderFile, csgotraderPricesBuilder } from '../../shared/compat/csgotrader.ts';
import { sourcesOfItems } from '../../shared/compat/dataset.ts';
import type { CompatContext, CompatDataset, CompatItem, CompatSourcePrice, CompatVersion } from '../../shared/compat/types.ts';
import { documentText } from '../../shared/compat/types.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { createTestApp } from '../helpers.ts';

/** The format's builder, with texts of its own (kept between this suite's builds only). */
const buildCsgotraderPrices = csgotraderPricesBuilder();

// The shapes a real consumer expects, written from the upstream's real file: the type a public tool
// generated from a downloaded prices_v6.json (every provider key present, null where the provider lacks
// the name; bitskins' prices and csgotm's price strings; doppler maps of numbers), and the
// per-provider shapes csgo-trader-extension's utils/pricing.js reads.
const nullableNumber = z.number().nullable();
const steamShape = z.strictObject({ last_24h: nullableNumber, last_7d: nullableNumber, last_30d: nullableNumber, last_90d: nullableNumber });
const skinportShape = z.strictObject({ suggested_price: nullableNumber, starting_at: nullableNumber });
const bitskinsShape = z.strictObject({ price: z.string(), instant_sale_price: z.string().nullable() });
const dopplerPriceShape = z.strictObject({ price: nullableNumber, doppler: z.record(z.string(), nullableNumber).optional() });
const pricesV6Shape = z.record(
  z.string(),
  z.object({
    steam: steamShape,
    bitskins: bitskinsShape.nullable(),
    csgotm: z.string().nullable(),
    skinport: skinportShape.nullable(),
    csgotrader: dopplerPriceShape.nullable(),
    csfloat: dopplerPriceShape.nullable(),
    lisskins: dopplerPriceShape.nullable(),
  }),
);

const BUILT_AT = Date.parse('2030-01-02T00:00:00Z');
const context: CompatContext = { convert: (usd) => usd, currencies: ['USD'] };

function source(price: string, options: Partial<CompatSourcePrice> = {}): CompatSourcePrice {
  return { price, median_price: null, bid: null, volume_7d: null, quantity: null, source_time_ms: BUILT_AT - 60_000, fresh: true, ...options };
}
function version(parts: Partial<CompatVersion>): CompatVersion {
  return { sources: {}, consensus: null, sales: {}, combined: {}, ...parts };
}
function item(name: string, versions: Record<string, CompatVersion>): CompatItem {
  return { market_hash_name: name, catalog_id: `itm_${name.length}`, first_seen_ms: null, versions };
}

const REDLINE = 'AK-47 | Redline (Field-Tested)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const CASE = 'Revolution Case';
const STICKER = 'Sticker | Crown (Foil)';
const SALES_ONLY = 'Sealed Graffiti | Sorry (Tiger Orange)';

const withoutSources: Omit<CompatDataset, 'sources'> = {
  built_at_ms: BUILT_AT,
  sales_generation: '0',
  items: [
    item(REDLINE, {
      default: version({
        sources: {
          steam: source('13.05', { source_time_ms: BUILT_AT - 3_600_000 }),
          skinport: source('10.5000'),
          csmarket: source('11.020'),
          bitskins: source('10.90'),
          csfloat: source('10.75'),
          // More digits than a double holds: written as is.
          waxpeer: source('10.123456789012345678'),
        },
        consensus: '10.9',
        sales: { steam: { '24h': { median: '12.3400', mean: null, min: null, max: null, volume: 20 } } },
        combined: { '7d': { median: '11.5', mean: '11.6', min: '9', max: '14', volume: 140 } },
      }),
    }),
    item(CASE, {
      // Steam sold none in the last 24 h: no median; skinport alone prices it.
      default: version({
        sources: { skinport: source('2.31') },
        consensus: '2.31',
        sales: { steam: { '24h': { median: null, mean: null, min: null, max: null, volume: 0 } } },
      }),
    }),
    item(STICKER, {
      // A price but no consensus (the source is stale): csfloat only.
      default: version({ sources: { csfloat: source('0.5', { fresh: false, source_time_ms: BUILT_AT - 86_400_000 }) } }),
    }),
    item(KARAMBIT, {
      default: version({ sources: { csfloat: source('900') }, consensus: '905' }),
      'phase-2': version({ sources: { csfloat: source('1200'), lisskins: source('1180.40') }, consensus: '1190.2' }),
      ruby: version({ sources: { csfloat: source('3000.5') }, consensus: '3000.5' }),
      'black-pearl': version({ sources: { lisskins: source('4100') }, consensus: null }),
      // A version the reader has no key for: left out.
      'pattern-661': version({ sources: { csfloat: source('99999') } }),
    }),
    item(SALES_ONLY, { default: version({ sales: { skinport: { '7d': { median: '0.03', mean: '0.03', min: '0.03', max: '0.03', volume: 1 } } } }) }),
  ].sort((a, b) => (a.market_hash_name < b.market_hash_name ? -1 : 1)),
  rates: { as_of: '2030-01-01', per_eur: { EUR: '1', USD: '1.0842', JPY: '163.45', GBP: '0.8512' } },
};
const dataset: CompatDataset = { ...withoutSources, sources: sourcesOfItems(withoutSources.items) };

const built = buildCsgotraderPrices(dataset);
// As the route has it: stored as JSON, parsed once per snapshot.
const stored = JSON.parse(documentText(built)) as unknown;

function file(name: string) {
  const answer = csgotraderFile(stored, { params: { file: name }, query: new URLSearchParams() }, context);
  if (answer.status !== 200) return { answer, text: null };
  expect(typeof answer.body).toBe('string');
  return { answer, text: answer.body as string };
}
// biome-ignore lint/suspicious/noExplicitAny: documents of many shapes read field by field, each field checked by an expect
function json(name: string): Record<string, any> {
  const { text } = file(name);
  expect(text).not.toBeNull();
  return JSON.parse(text!);
}

/**
 * A consumer written the way csgo-trader-extension reads the files: updatePrices keeps `{price, doppler?}`
 * per name from `<provider>.json`, getPrice takes the doppler phase's price when the item has a phase
 * and the map has it (indexing the map without a null check), else `price`, times the exchange rate.
 */
function extensionPrice(provider: string, mode: string, name: string, phase: string | null, currency: string): string {
  const pricesJson = json(`${provider}.json`);
  const rates = json('exchange_rates.json');
  const prices: Record<string, { price: unknown; doppler?: Record<string, number | null> }> = {};
  for (const key of Object.keys(pricesJson)) {
    if (provider === 'steam' || provider === 'skinport' || provider === 'bitskins') {
      const value = pricesJson[key][mode];
      prices[key] = { price: value === undefined ? null : value };
    } else if (provider === 'csgotm') prices[key] = { price: pricesJson[key] };
    else
      prices[key] =
        pricesJson[key].doppler !== undefined ? { price: pricesJson[key].price, doppler: pricesJson[key].doppler } : { price: pricesJson[key].price };
  }
  const entry = prices[name];
  if (entry === undefined || entry === null || entry.price === undefined) return '0.00';
  const rate = rates[currency] as number;
  if (phase !== null && ['csgotrader', 'csfloat', 'lisskins'].includes(provider) && entry.doppler !== undefined) {
    const phasePrice = entry.doppler[phase];
    if (phasePrice !== null && phasePrice !== undefined) return (phasePrice * rate).toFixed(2);
  }
  return ((entry.price as number) * rate).toFixed(2);
}

describe('csgotrader prices_v6.json', () => {
  test('parses as the upstream file did: every name with every provider, null where a provider lacks it', () => {
    const prices = pricesV6Shape.parse(json('prices_v6.json'));
    expect(Object.keys(prices)).toEqual([REDLINE, CASE, STICKER, KARAMBIT]);
    expect(prices[REDLINE]).toMatchObject({
      steam: { last_24h: 12.34, last_7d: null, last_30d: null, last_90d: null },
      bitskins: { price: '10.9', instant_sale_price: null },
      csgotm: '11.02',
      skinport: { suggested_price: null, starting_at: 10.5 },
      csgotrader: { price: 10.9 },
      csfloat: { price: 10.75 },
      lisskins: null,
    });
    // Steam sold nothing: its four windows null, as the upstream wrote a name SteamApis had no data for.
    expect(prices[CASE]!.steam).toEqual({ last_24h: null, last_7d: null, last_30d: null, last_90d: null });
    expect(prices[CASE]!.bitskins).toBeNull();
    expect(prices[STICKER]!.csgotrader).toBeNull();
    // Our providers are keys of every name even when their source has no price now (whitemarket here).
    expect(Object.keys(json('prices_v6.json')[REDLINE])).toEqual([
      'steam',
      'bitskins',
      'csgotm',
      'skinport',
      'csgotrader',
      'csfloat',
      'lisskins',
      'waxpeer',
      'whitemarket',
      'csdeals',
      'skinbaron',
    ]);
    expect(json('prices_v6.json')[REDLINE].whitemarket).toBeNull();
  });

  test('a small consumer reads skinport.starting_at and steam.last_7d the way public scripts do', () => {
    const prices = json('prices_v6.json');
    const rows = Object.entries(prices).map(([name, entry]) => ({
      name,
      skinport: entry.skinport ? entry.skinport.starting_at : null,
      steam7d: entry.steam.last_7d,
      steam24h: entry.steam.last_24h,
    }));
    expect(rows.find((row) => row.name === REDLINE)).toEqual({ name: REDLINE, skinport: 10.5, steam7d: null, steam24h: 12.34 });
    expect(rows.find((row) => row.name === CASE)).toEqual({ name: CASE, skinport: 2.31, steam7d: null, steam24h: null });
  });

  test('doppler maps are keyed by the extension’s phase names and are objects or absent, never null', () => {
    const { text } = file('prices_v6.json');
    expect(text).not.toContain('"doppler":null');
    const prices = pricesV6Shape.parse(JSON.parse(text!));
    expect(prices[KARAMBIT]!.csfloat).toEqual({ price: 900, doppler: { 'Phase 2': 1200, Ruby: 3000.5 } });
    // No default price at lisskins: price null, the phases it has.
    expect(prices[KARAMBIT]!.lisskins).toEqual({ price: null, doppler: { 'Phase 2': 1180.4, 'Black Pearl': 4100 } });
    expect(prices[KARAMBIT]!.csgotrader).toEqual({ price: 905, doppler: { 'Phase 2': 1190.2, Ruby: 3000.5 } });
    expect('doppler' in prices[REDLINE]!.csfloat!).toBe(false);
  });

  test('numbers are written from the decimal text, never through a float', () => {
    const { text } = file('prices_v6.json');
    expect(text).toContain('"waxpeer":{"price":10.123456789012345678}');
    expect(text).toContain('"last_24h":12.34');
    expect(text).toContain('"csgotm":"11.02"');
  });

  test('names without a provider entry (a sales window only) are left out', () => {
    expect(json('prices_v6.json')[SALES_ONLY]).toBeUndefined();
  });

  test('X-Source-Age counts the oldest source used', () => {
    expect(built.oldest_source_ms).toBe(BUILT_AT - 86_400_000);
  });
});

describe('csgotrader per-provider files', () => {
  test('steam.json, skinport.json, bitskins.json and csgotm.json in the shapes the extension reads, names without data left out', () => {
    expect(z.record(z.string(), steamShape).parse(json('steam.json'))).toEqual({
      [REDLINE]: { last_90d: null, last_30d: null, last_7d: null, last_24h: 12.34 },
    });
    expect(z.record(z.string(), skinportShape).parse(json('skinport.json'))).toEqual({
      [CASE]: { suggested_price: null, starting_at: 2.31 },
      [REDLINE]: { suggested_price: null, starting_at: 10.5 },
    });
    expect(z.record(z.string(), bitskinsShape).parse(json('bitskins.json'))).toEqual({ [REDLINE]: { price: '10.9', instant_sale_price: null } });
    expect(z.record(z.string(), z.string()).parse(json('csgotm.json'))).toEqual({ [REDLINE]: '11.02' });
  });

  test('csfloat, lisskins, csgotrader and our other sources in the {price, doppler?} shape', () => {
    const csfloat = z.record(z.string(), dopplerPriceShape).parse(json('csfloat.json'));
    expect(csfloat).toEqual({ [STICKER]: { price: 0.5 }, [REDLINE]: { price: 10.75 }, [KARAMBIT]: { price: 900, doppler: { 'Phase 2': 1200, Ruby: 3000.5 } } });
    z.record(z.string(), dopplerPriceShape).parse(json('waxpeer.json'));
    expect(file('waxpeer.json').text).toBe(`{${JSON.stringify(REDLINE)}:{"price":10.123456789012345678}}`);
    expect(Object.keys(z.record(z.string(), dopplerPriceShape).parse(json('csgotrader.json')))).toEqual([REDLINE, CASE, KARAMBIT]);
  });

  test('the extension’s own reading: doppler phase prices, the default price otherwise, in the chosen currency', () => {
    expect(extensionPrice('csfloat', 'csfloat', KARAMBIT, 'Phase 2', 'USD')).toBe('1200.00');
    expect(extensionPrice('csfloat', 'csfloat', KARAMBIT, 'Phase 4', 'USD')).toBe('900.00');
    expect(extensionPrice('lisskins', 'lisskins', KARAMBIT, 'Black Pearl', 'USD')).toBe('4100.00');
    // lisskins has no default price: the extension shows nothing (0.00), and does not crash.
    expect(extensionPrice('lisskins', 'lisskins', KARAMBIT, 'Phase 1', 'USD')).toBe('0.00');
    expect(extensionPrice('csgotrader', 'csgotrader', REDLINE, null, 'EUR')).toBe((10.9 * 0.92233905).toFixed(2));
    expect(extensionPrice('steam', 'last_24h', REDLINE, null, 'USD')).toBe('12.34');
    expect(extensionPrice('skinport', 'starting_at', CASE, null, 'USD')).toBe('2.31');
    expect(extensionPrice('bitskins', 'price', REDLINE, null, 'USD')).toBe('10.90');
    expect(extensionPrice('csgotm', 'csgotm', REDLINE, null, 'USD')).toBe('11.02');
  });

  test('a provider we serve with no price now is an empty file; a provider we never had, or any other file, 404', () => {
    expect(file('whitemarket.json').text).toBe('{}');
    for (const name of ['lootfarm.json', 'buff163.json', 'prices_v5.json', 'steam', '../steam.json', '']) {
      expect(file(name).answer).toMatchObject({ status: 404, ours: { field: 'path.file' } });
    }
  });

  test('each file is memoised by its own key', () => {
    expect(file('prices_v6.json').answer).toMatchObject({ memoKey: 'prices_v6.json' });
    expect(file('csfloat.json').answer).toMatchObject({ memoKey: 'csfloat.json' });
    expect(file('exchange_rates.json').answer).toMatchObject({ memoKey: 'exchange_rates.json' });
  });
});

describe('csgotrader exchange_rates.json', () => {
  test('units per USD from the ECB set, exact to 8 places, USD 1', () => {
    const { text } = file('exchange_rates.json');
    expect(text).toBe('{"USD":1,"EUR":0.92233905,"GBP":0.785095,"JPY":150.75631802}');
  });

  test('without rates only USD is known', () => {
    const document = JSON.parse(documentText(buildCsgotraderPrices({ ...dataset, rates: null }))) as unknown;
    const answer = csgotraderFile(document, { params: { file: 'exchange_rates.json' }, query: new URLSearchParams() }, context);
    expect(answer).toMatchObject({ status: 200, body: '{"USD":1}' });
  });
});

test('an empty dataset gives empty files', () => {
  const document = JSON.parse(
    documentText(buildCsgotraderPrices({ built_at_ms: BUILT_AT, sales_generation: '0', items: [], sources: [], rates: null })),
  ) as unknown;
  const answer = csgotraderFile(document, { params: { file: 'prices_v6.json' }, query: new URLSearchParams() }, context);
  expect(answer).toMatchObject({ status: 200, body: '{}' });
});

describe('end to end through GET /compat/csgotrader/latest/…', () => {
  // The per-address budget counts every suite's keyless requests in a minute: this one's limit is out of the way.
  const t = createTestApp({ config: { PUBLIC_PRICES_RATE_LIMIT: '1000000' } });
  afterAll(() => t.close());
  const suffix = crypto.randomUUID().slice(0, 8);
  const plain = `CSGOTRADER E2E ${suffix} | Redline (Field-Tested)`;
  const doppler = `★ CSGOTRADER E2E ${suffix} | Doppler (Factory New)`;

  async function setPrice(name: string, source: string, price: string, itemVersion = 'default') {
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogIdFor(name)}, ${source}, ${itemVersion}, ${price}::numeric, now(), now(), ${crypto.randomUUID()})
      on conflict (catalog_id, version, source) do update set price = excluded.price, source_time = excluded.source_time`;
    await t.deps.sql`insert into price_sources (name, last_success_at) values (${source}, now()) on conflict (name) do update set last_success_at = now()`;
  }

  test('a consumer loads prices_v6.json and reads skinport.starting_at, steam.last_24h and a doppler phase as the extension does', async () => {
    const sql = t.deps.sql;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(plain)}, ${plain}, 'weapon')`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type, phases) values (${catalogIdFor(doppler)}, ${doppler}, 'knife', ${['phase-2']})`;
    await setPrice(plain, 'skinport', '12.30');
    await setPrice(plain, 'csmarket', '12.750');
    await setPrice(doppler, 'csfloat', '900.10');
    await setPrice(doppler, 'csfloat', '1200.5', 'phase-2');
    await sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, volume, source_time, ingested_at, run_id)
      values (${catalogIdFor(plain)}, 'default', 'steam', '24h', 13.42, 77, now(), now(), ${crypto.randomUUID()})`;
    await buildPriceSnapshot(sql, new Date());

    const response = await t.request('/compat/csgotrader/latest/prices_v6.json');
    expect(response.status).toBe(200);
    const prices = pricesV6Shape.parse(await response.json());
    expect(prices[plain]!.skinport!.starting_at).toBe(12.3);
    expect(prices[plain]!.steam.last_24h).toBe(13.42);
    expect(prices[plain]!.steam.last_7d).toBeNull();
    expect(prices[plain]!.csgotm).toBe('12.75');
    const csfloat = (await (await t.request('/compat/csgotrader/latest/csfloat.json')).json()) as Record<
      string,
      { price: number | null; doppler?: Record<string, number> }
    >;
    const entry = csfloat[doppler]!;
    expect(entry.doppler !== undefined ? entry.doppler['Phase 2'] : entry.price).toBe(1200.5);
    expect(entry.price).toBe(900.1);
    const rates = (await (await t.request('/compat/csgotrader/latest/exchange_rates.json')).json()) as Record<string, number>;
    expect(rates.USD).toBe(1);
    const missing = await t.request('/compat/csgotrader/latest/lootfarm.json');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});

test('a file is written once per stored document: later requests get the same text', () => {
  const first = file('prices_v6.json').text;
  expect(file('prices_v6.json').text).toBe(first);
  const other = JSON.parse(documentText(built)) as unknown;
  const answer = csgotraderFile(other, { params: { file: 'prices_v6.json' }, query: new URLSearchParams() }, context);
  expect(answer).toMatchObject({ status: 200, body: first });
});
