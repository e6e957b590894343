import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import path from 'node:path';
import { createLogger } from '../../shared/platform/logger.ts';
import type { SourceName } from '../../shared/platform/source-names.ts';
import { bitskinsName } from '../../shared/sources/bitskins.ts';
import { csmarketTime } from '../../shared/sources/csmarket.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import {
  acceptablePrice,
  decimalFromThousandths,
  higherDecimal,
  lowerDecimal,
  MAX_PRICE_USD,
  priceFromThousandthsText,
  priceFromUsdText,
} from '../../shared/sources/money.ts';
import { type FetchContext, type SourceObservation, SourceRateLimitedError, SourceUnavailableError } from '../../shared/sources/types.ts';
import { countOf, JsonNumber, numberText } from '../../shared/sources/upstream.ts';
import { capturingLog, failure } from '../helpers.ts';

/**
 * The six marketplaces of docs/design.md §13 (csmarket, lisskins, waxpeer, whitemarket, bitskins, csdeals),
 * each fed a recorded body of its real format (test/fixtures/upstream/) over real HTTP, plus hostile
 * rows, error statuses and the money helpers they share.
 */

type MarketplaceName = 'csmarket' | 'lisskins' | 'waxpeer' | 'whitemarket' | 'bitskins' | 'csdeals';

const silent = createLogger({ level: 'silent', name: 'test' });
const NOW = new Date('2026-03-01T12:00:10.000Z');
/** csmarket-prices.json's top-level `time` (1772366370). */
const CSMARKET_TIME = new Date('2026-03-01T11:59:30.000Z');

const AK = 'AK-47 | Redline (Field-Tested)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const GAMMA_KARAMBIT_FN = '★ Karambit | Gamma Doppler (Factory New)';
const GAMMA_KARAMBIT_MW = '★ Karambit | Gamma Doppler (Minimal Wear)';
const CASE = 'Snakebite Case';
const STICKER = 'Sticker | Crown (Foil)';
const AWP = 'StatTrak™ AWP | Asiimov (Battle-Scarred)';
const GLOCK = 'Glock-18 | Water Elemental (Field-Tested)';

const FIXTURES = path.join(import.meta.dir, '..', 'fixtures', 'upstream');

/** Each upstream path (under /<source>, the base URL the adapter is given) → its recorded body. */
const FIXTURE_ROUTES: Record<string, string> = {
  '/csmarket/api/v2/prices/class_instance/USD.json': 'csmarket-prices.json',
  '/lisskins/market_export_json/csgo.json': 'lisskins-csgo.json',
  '/waxpeer/v1/prices': 'waxpeer-prices.json',
  '/waxpeer/v1/prices/dopplers': 'waxpeer-dopplers.json',
  '/whitemarket/export/v1/prices/730.json': 'whitemarket-730.json',
  '/bitskins/market/insell/730': 'bitskins-insell-730.json',
  '/csdeals/API/IPricing/GetLowestPrices/v1': 'csdeals-lowest-prices.json',
};

/** The one path each single-request adapter asks for. */
const ROUTE_OF: Record<Exclude<MarketplaceName, 'waxpeer'>, string> = {
  csmarket: '/csmarket/api/v2/prices/class_instance/USD.json',
  lisskins: '/lisskins/market_export_json/csgo.json',
  whitemarket: '/whitemarket/export/v1/prices/730.json',
  bitskins: '/bitskins/market/insell/730',
  csdeals: '/csdeals/API/IPricing/GetLowestPrices/v1',
};
const WAXPEER_PRICES = '/waxpeer/v1/prices';
const WAXPEER_DOPPLERS = '/waxpeer/v1/prices/dopplers';

const fixtureText = new Map<string, string>();
/** Per-path overrides of the recorded body, reset after each test. */
const overrides = new Map<string, () => Response>();
/** Every request the server saw (path and query). */
const requests: string[] = [];
let server: ReturnType<typeof Bun.serve>;
let baseUrl: string;

const json = (text: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(text, { status, headers: { 'content-type': 'application/json', ...headers } });

beforeAll(async () => {
  for (const [route, file] of Object.entries(FIXTURE_ROUTES)) fixtureText.set(route, await Bun.file(path.join(FIXTURES, file)).text());
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      requests.push(`${url.pathname}${url.search}`);
      const override = overrides.get(url.pathname);
      if (override) return override();
      const text = fixtureText.get(url.pathname);
      return text === undefined ? json('{"error":"not found"}', 404) : json(text);
    },
  });
  baseUrl = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));
afterEach(() => {
  overrides.clear();
  requests.length = 0;
});

function context(source: SourceName, extra: Partial<FetchContext> = {}): FetchContext {
  return { baseUrl: `${baseUrl}/${source}`, log: silent, timeoutMs: 5_000, acquire: async () => {}, names: [], now: () => NOW, ...extra };
}

const fetchFrom = (source: MarketplaceName, extra: Partial<FetchContext> = {}) => ADAPTERS[source].fetchSnapshot(context(source, extra));

const byKey = (observations: SourceObservation[]) =>
  [...observations].sort((a, b) => `${a.market_hash_name}|${a.version}`.localeCompare(`${b.market_hash_name}|${b.version}`));

/** An observation with the fields a source does not publish left null, at NOW. */
function observation(name: string, version: string, price: string, fields: Partial<SourceObservation> = {}): SourceObservation {
  return { market_hash_name: name, version, price, median_price: null, bid: null, volume_7d: null, quantity: null, source_time: NOW, ...fields };
}

describe('money helpers', () => {
  test('acceptablePrice: strictly positive plain decimals up to the shared bound', () => {
    expect(MAX_PRICE_USD).toBe('10000000');
    expect(acceptablePrice('2.30')).toBe('2.30');
    expect(acceptablePrice('0.001')).toBe('0.001');
    expect(acceptablePrice('10000000')).toBe('10000000');
    expect(acceptablePrice('10000000.000')).toBe('10000000.000');
    expect(acceptablePrice('10000000.001')).toBeNull();
    expect(acceptablePrice('99999999')).toBeNull();
    expect(acceptablePrice('0')).toBeNull();
    expect(acceptablePrice('0.000')).toBeNull();
    expect(acceptablePrice('-1')).toBeNull();
    expect(acceptablePrice('1e3')).toBeNull();
    expect(acceptablePrice('')).toBeNull();
    expect(acceptablePrice(null)).toBeNull();
  });

  test('priceFromUsdText reads JSON number grammar, keeps the text, expands exponents', () => {
    expect(priceFromUsdText('32.393')).toBe('32.393');
    expect(priceFromUsdText('12.340')).toBe('12.340');
    expect(priceFromUsdText('2')).toBe('2');
    expect(priceFromUsdText('1.5e1')).toBe('15');
    expect(priceFromUsdText('2.5E-1')).toBe('0.25');
    for (const refused of [
      '-1.00',
      '0',
      '0.00',
      'NaN',
      'Infinity',
      '-Infinity',
      '',
      ' 1.23',
      '1.23 ',
      '1,234.56',
      '.5',
      '5.',
      '01.5',
      '0x10',
      '1e8',
      '20000000',
      '+1',
    ]) {
      expect(priceFromUsdText(refused)).toBeNull();
    }
  });

  test('decimalFromThousandths: integer thousandths of USD → exactly three decimals', () => {
    expect(decimalFromThousandths('937999')).toBe('937.999');
    expect(decimalFromThousandths('12340')).toBe('12.340');
    expect(decimalFromThousandths('1000')).toBe('1.000');
    expect(decimalFromThousandths('5')).toBe('0.005');
    expect(decimalFromThousandths('50')).toBe('0.050');
    expect(decimalFromThousandths('0')).toBe('0.000');
    expect(decimalFromThousandths('9.37999e5')).toBe('937.999');
    expect(decimalFromThousandths('12340.0')).toBe('12.340');
    expect(decimalFromThousandths('123456789012345678901234')).toBe('123456789012345678901.234');
    for (const refused of ['12.5', '-5000', 'abc', 'NaN', '', '1e-1', '1.5e0']) expect(decimalFromThousandths(refused)).toBeNull();
  });

  test('priceFromThousandthsText gates by the same bound', () => {
    expect(priceFromThousandthsText('10000000000')).toBe('10000000.000');
    expect(priceFromThousandthsText('10000000001')).toBeNull();
    expect(priceFromThousandthsText('0')).toBeNull();
    expect(priceFromThousandthsText('1')).toBe('0.001');
  });

  test('lowerDecimal / higherDecimal compare numerically and keep the first on a tie', () => {
    expect(lowerDecimal('10.5', '9.99')).toBe('9.99');
    expect(lowerDecimal('2.30', '2.3')).toBe('2.30');
    expect(higherDecimal('30.1', '30.55')).toBe('30.55');
    expect(higherDecimal('30.10', '30.1')).toBe('30.10');
  });

  test('numberText and countOf accept a JSON number or a string', () => {
    expect(numberText(new JsonNumber('1.50'))).toBe('1.50');
    expect(numberText('1.50')).toBe('1.50');
    expect(numberText(true)).toBeNull();
    expect(numberText(null)).toBeNull();
    expect(countOf(new JsonNumber('12'))).toBe(12);
    expect(countOf('12')).toBe(12);
    expect(countOf('0')).toBe(0);
    for (const refused of ['-1', '1.5', '', 'many', '012', '1e3']) expect(countOf(refused)).toBeNull();
    expect(countOf(new JsonNumber('1.5'))).toBeNull();
    expect(countOf(3)).toBeNull();
  });
});

describe('recorded bodies', () => {
  test('csmarket folds every class/instance key of a name: lowest ask, its avg_price, highest buy order, summed popularity', async () => {
    const result = await fetchFrom('csmarket');
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    const at = { source_time: CSMARKET_TIME };
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'default', '612.48', { median_price: '640.2', bid: '590', ...at }),
      observation(AK, 'default', '31.950', { median_price: '31.05', bid: '30.55', volume_7d: 17, ...at }),
      observation(CASE, 'default', '0.712', { median_price: '0.705', bid: '0.69', volume_7d: 1843, ...at }),
      // 1.5 (a JSON number, buy_order 0 = none, popularity_7d 3) and "1.497" (popularity "0").
      observation(STICKER, 'default', '1.497', { median_price: '1.44', bid: '1.2', volume_7d: 3, ...at }),
    ]);
    expect(requests).toEqual(['/csmarket/api/v2/prices/class_instance/USD.json']);
  });

  test('lisskins: price (not unlocked_price) as written, count as quantity; a zero price is skipped', async () => {
    const result = await fetchFrom('lisskins');
    expect(result).toMatchObject({ skipped: 1, unknown: 0, requests: 1 });
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'default', '598.2', { quantity: 6 }),
      observation(AK, 'default', '32.06', { quantity: 47 }),
      observation(CASE, 'default', '0.69', { quantity: 2214 }),
      observation(AWP, 'default', '1234.50', { quantity: 1 }),
    ]);
    expect(requests).toEqual(['/lisskins/market_export_json/csgo.json']);
  });

  test('waxpeer: plain rows are `default`, doppler listings give the lowest ask and listing count per phase', async () => {
    const result = await fetchFrom('waxpeer');
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 2 });
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'black-pearl', '2100.500', { quantity: 1 }),
      observation(KARAMBIT, 'default', '937.999', { quantity: 58 }),
      observation(KARAMBIT, 'phase-2', '799.000', { quantity: 3 }),
      observation(KARAMBIT, 'ruby', '3850.000', { quantity: 1 }),
      observation(KARAMBIT, 'sapphire', '4200.000', { quantity: 1 }),
      observation(GAMMA_KARAMBIT_FN, 'emerald', '6999.999', { quantity: 1 }),
      observation(AK, 'default', '32.150', { quantity: 125 }),
      observation(CASE, 'default', '0.690', { quantity: 5012 }),
      observation(STICKER, 'default', '1500.000', { quantity: 3 }),
    ]);
    expect(requests).toEqual(['/waxpeer/v1/prices?game=csgo&minified=0', '/waxpeer/v1/prices/dopplers?game=csgo&phase=any']);
  });

  test('whitemarket: prices as strings or numbers (1.5e1 → "15"), market_product_count as quantity', async () => {
    const result = await fetchFrom('whitemarket');
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'default', '601.10', { quantity: 2 }),
      observation(AK, 'default', '31.87', { quantity: 23 }),
      observation(GLOCK, 'default', '15', { quantity: 9 }),
      observation(CASE, 'default', '0.71', { quantity: 412 }),
      observation(STICKER, 'default', '1.23', { quantity: 4 }),
    ]);
    expect(requests).toEqual(['/whitemarket/export/v1/prices/730.json']);
  });

  test('bitskins: phases in the name map to the catalog name and version; thousandths keep three decimals', async () => {
    const result = await fetchFrom('bitskins');
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'black-pearl', '2099.000', { quantity: 1 }),
      observation(KARAMBIT, 'phase-2', '801.250', { quantity: 7 }),
      observation(KARAMBIT, 'ruby', '3849.990', { quantity: 3 }),
      observation(GAMMA_KARAMBIT_FN, 'emerald', '7100.000', { quantity: 1 }),
      observation(GAMMA_KARAMBIT_MW, 'phase-3', '512.345', { quantity: 2 }),
      observation(AK, 'default', '31.940', { quantity: 341 }),
      observation(CASE, 'default', '0.650', { quantity: 9120 }),
      observation(STICKER, 'default', '12.340', { quantity: 12 }),
    ]);
    expect(requests).toEqual(['/bitskins/market/insell/730']);
  });

  test('csdeals: lowest_price as written, nothing else published', async () => {
    const result = await fetchFrom('csdeals');
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    expect(byKey(result.observations)).toEqual([
      observation(KARAMBIT, 'default', '605.00'),
      observation(AK, 'default', '31.42'),
      observation(CASE, 'default', '0.70'),
      observation(AWP, 'default', '1199.99'),
    ]);
    expect(requests).toEqual(['/csdeals/API/IPricing/GetLowestPrices/v1?appid=730']);
  });

  test('every adapter declares its docs/design.md §13 budget, a 300 s interval and no name list', () => {
    const budgets = Object.fromEntries(
      (['csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals'] as const).map((name) => [name, ADAPTERS[name].defaultBudget]),
    );
    expect(budgets).toEqual({
      csmarket: { requests: 5, windowSeconds: 1 },
      lisskins: { requests: 1, windowSeconds: 60 },
      waxpeer: { requests: 60, windowSeconds: 60 },
      whitemarket: { requests: 1, windowSeconds: 60 },
      bitskins: { requests: 50, windowSeconds: 10 },
      csdeals: { requests: 1, windowSeconds: 60 },
    });
    for (const name of Object.keys(budgets) as MarketplaceName[]) {
      expect(ADAPTERS[name].name).toBe(name);
      expect(ADAPTERS[name].defaultIntervalSeconds).toBe(300);
      expect(ADAPTERS[name].needsNames).toBe(false);
    }
  });
});

describe('bitskins names', () => {
  test('phase labels inside the name → catalog name and version', () => {
    expect(bitskinsName('★ Karambit | Doppler Ruby (Factory New)')).toEqual({ marketHashName: KARAMBIT, version: 'ruby' });
    expect(bitskinsName('★ Karambit | Doppler Sapphire (Factory New)')).toEqual({ marketHashName: KARAMBIT, version: 'sapphire' });
    expect(bitskinsName('★ Karambit | Doppler Black Pearl (Factory New)')).toEqual({ marketHashName: KARAMBIT, version: 'black-pearl' });
    expect(bitskinsName('★ Karambit | Doppler Phase 4 (Factory New)')).toEqual({ marketHashName: KARAMBIT, version: 'phase-4' });
    expect(bitskinsName('★ StatTrak™ M9 Bayonet | Gamma Doppler Phase 1 (Minimal Wear)')).toEqual({
      marketHashName: '★ StatTrak™ M9 Bayonet | Gamma Doppler (Minimal Wear)',
      version: 'phase-1',
    });
    expect(bitskinsName('Glock-18 | Gamma Doppler Emerald (Factory New)')).toEqual({
      marketHashName: 'Glock-18 | Gamma Doppler (Factory New)',
      version: 'emerald',
    });
  });

  test('any other name is kept exactly, `default`', () => {
    for (const name of [
      KARAMBIT,
      AK,
      CASE,
      '★ Karambit | Doppler Phase 5 (Factory New)',
      '★ Karambit | doppler ruby (Factory New)',
      'Sticker | Doppler Ruby',
    ]) {
      expect(bitskinsName(name)).toEqual({ marketHashName: name, version: 'default' });
    }
  });
});

describe('csmarket time', () => {
  test('the body time is used when sane, else the fetch time', () => {
    expect(csmarketTime(new JsonNumber('1772366370'), NOW)).toEqual(CSMARKET_TIME);
    expect(csmarketTime('1772366370', NOW)).toEqual(CSMARKET_TIME);
    // A few minutes of clock skew are believed; an hour ahead, zero, fractions, text and old epochs are not.
    expect(csmarketTime(new JsonNumber('1772366650'), NOW)).toEqual(new Date('2026-03-01T12:04:10.000Z'));
    for (const insane of [
      new JsonNumber('1772370000'),
      new JsonNumber('0'),
      new JsonNumber('1772366370.5'),
      'soon',
      null,
      undefined,
      new JsonNumber('946684800'),
    ]) {
      expect(csmarketTime(insane, NOW)).toBeNull();
    }
  });

  test('a body without a sane time is stamped with the fetch time', async () => {
    const text = fixtureText.get(ROUTE_OF.csmarket)!.replace('"time":1772366370', '"time":"yesterday"');
    overrides.set(ROUTE_OF.csmarket, () => json(text));
    const result = await fetchFrom('csmarket');
    for (const observation of result.observations) expect(observation.source_time).toEqual(NOW);
  });
});

/**
 * Hostile rows: every source's price field given as raw JSON text. Each "refused" value makes its row
 * skipped and counted; each "accepted" one is priced as shown.
 */
const USD_REFUSED = [
  '-1.00',
  '"-1.00"',
  '0',
  '"0.00"',
  '"abc"',
  '"NaN"',
  '"Infinity"',
  '""',
  '"20000000"',
  '1e8',
  '"10000000.001"',
  '"1,234.56"',
  '" 1.23"',
  'true',
  'null',
  '{}',
  '[1.5]',
];
const USD_ACCEPTED: [string, string][] = [
  ['2.5E-1', '0.25'],
  ['"1.5e1"', '15'],
  ['"10000000"', '10000000'],
  ['0.001', '0.001'],
  ['"12.340"', '12.340'],
  ['7', '7'],
];
const THOUSANDTHS_REFUSED = ['-5000', '0', '"0"', '12.5', '"abc"', '"NaN"', '""', '10000000001', '1e11', 'true', 'null', '{}', '[12340]'];
const THOUSANDTHS_ACCEPTED: [string, string][] = [
  ['1.2e4', '12.000'],
  ['"12340"', '12.340'],
  ['10000000000', '10000000.000'],
  ['1', '0.001'],
  ['937999', '937.999'],
];
/** Rows that are not rows, or lack a usable name, whatever their price. */
const BROKEN_ROWS = (row: (name: string) => string): string[] => ['null', '"row"', '5', '[]', row('').replace('""', '7'), row(''), row('   ')];

type Hostile = {
  /** One row with `name` and a price given as raw JSON text. */
  row: (name: string, price: string) => string;
  body: (rows: string[]) => string;
  refused: string[];
  accepted: [string, string][];
  /** Further rows with a good price and name but some other field of the wrong type. */
  wrongTypes: string[];
};

const HOSTILE: Record<Exclude<MarketplaceName, 'waxpeer'>, Hostile> = {
  csmarket: {
    row: (name, price) => `{"price":${price},"buy_order":null,"avg_price":null,"popularity_7d":null,"market_hash_name":${JSON.stringify(name)},"ru_name":"x"}`,
    body: (rows) => `{"success":true,"time":1772366370,"currency":"USD","items":{${rows.map((row, i) => `"${4000 + i}_${i}":${row}`).join(',')}}}`,
    refused: USD_REFUSED,
    accepted: USD_ACCEPTED,
    wrongTypes: [
      '{"price":"1.00","buy_order":"-1","avg_price":null,"popularity_7d":null,"market_hash_name":"Bad Bid"}',
      '{"price":"1.00","buy_order":"20000000","avg_price":null,"popularity_7d":null,"market_hash_name":"Absurd Bid"}',
      '{"price":"1.00","buy_order":true,"avg_price":null,"popularity_7d":null,"market_hash_name":"Bool Bid"}',
      '{"price":"1.00","buy_order":null,"avg_price":"NaN","popularity_7d":null,"market_hash_name":"Bad Avg"}',
      '{"price":"1.00","buy_order":null,"avg_price":null,"popularity_7d":"many","market_hash_name":"Bad Popularity"}',
      '{"price":"1.00","buy_order":null,"avg_price":null,"popularity_7d":-3,"market_hash_name":"Negative Popularity"}',
      '{"price":"1.00","buy_order":null,"avg_price":null,"popularity_7d":null}',
    ],
  },
  lisskins: {
    row: (name, price) => `{"name":${JSON.stringify(name)},"price":${price},"unlocked_price":null,"count":1,"url":"https://lis-skins.com/x"}`,
    body: (rows) => `[${rows.join(',')}]`,
    refused: USD_REFUSED,
    accepted: USD_ACCEPTED,
    wrongTypes: [
      '{"name":"Bad Count","price":1.00,"unlocked_price":null,"count":"many","url":"u"}',
      '{"name":"Fractional Count","price":1.00,"unlocked_price":null,"count":1.5,"url":"u"}',
      '{"name":"Negative Count","price":1.00,"unlocked_price":null,"count":-1,"url":"u"}',
      '{"price":1.00,"unlocked_price":null,"count":1,"url":"u"}',
      '{"name":["Array Name"],"price":1.00,"count":1}',
    ],
  },
  whitemarket: {
    row: (name, price) =>
      `{"market_hash_name":${JSON.stringify(name)},"price":${price},"market_product_link":"https://white.market/x","market_product_count":1}`,
    body: (rows) => `[${rows.join(',')}]`,
    refused: USD_REFUSED,
    accepted: USD_ACCEPTED,
    wrongTypes: [
      '{"market_hash_name":"Bad Count","price":"1.00","market_product_link":"u","market_product_count":"lots"}',
      '{"market_hash_name":"Bool Count","price":"1.00","market_product_link":"u","market_product_count":false}',
      '{"price":"1.00","market_product_link":"u","market_product_count":1}',
    ],
  },
  bitskins: {
    row: (name, price) => `{"skin_id":1,"name":${JSON.stringify(name)},"price_min":${price},"price_max":${price},"price_avg":${price},"quantity":1}`,
    body: (rows) => `{"list":[${rows.join(',')}]}`,
    refused: THOUSANDTHS_REFUSED,
    accepted: THOUSANDTHS_ACCEPTED,
    wrongTypes: [
      '{"skin_id":2,"name":"Bad Quantity","price_min":1000,"price_max":1000,"price_avg":1000,"quantity":"x"}',
      '{"skin_id":3,"name":"Negative Quantity","price_min":1000,"price_max":1000,"price_avg":1000,"quantity":-2}',
      '{"skin_id":4,"price_min":1000,"price_max":1000,"price_avg":1000,"quantity":1}',
    ],
  },
  csdeals: {
    row: (name, price) => `{"marketname":${JSON.stringify(name)},"lowest_price":${price}}`,
    body: (rows) => `{"success":true,"response":{"items":[${rows.join(',')}]}}`,
    refused: USD_REFUSED,
    accepted: USD_ACCEPTED,
    wrongTypes: ['{"lowest_price":"1.00"}', '{"marketname":null,"lowest_price":"1.00"}', '{"market_hash_name":"Wrong Field","lowest_price":"1.00"}'],
  },
};

describe('hostile rows are skipped and counted, never thrown', () => {
  for (const [source, hostile] of Object.entries(HOSTILE) as [Exclude<MarketplaceName, 'waxpeer'>, Hostile][]) {
    test(source, async () => {
      const refusedRows = hostile.refused.map((price, i) => hostile.row(`Refused ${i}`, price));
      const acceptedRows = hostile.accepted.map(([price], i) => hostile.row(`Accepted ${i}`, price));
      const broken = BROKEN_ROWS((name) => hostile.row(name, source === 'bitskins' ? '1000' : '"1.00"'));
      const rows = [...acceptedRows, ...refusedRows, ...broken, ...hostile.wrongTypes];
      overrides.set(ROUTE_OF[source], () => json(hostile.body(rows)));
      const { log, lines } = capturingLog();
      const result = await fetchFrom(source, { log });
      const skipped = refusedRows.length + broken.length + hostile.wrongTypes.length;
      expect(result.skipped).toBe(skipped);
      expect(result.unknown).toBe(0);
      const prices = Object.fromEntries(result.observations.map((o) => [o.market_hash_name, o.price]));
      expect(prices).toEqual(Object.fromEntries(hostile.accepted.map(([, expected], i) => [`Accepted ${i}`, expected])));
      const warn = lines.map((line) => JSON.parse(line) as { level: number; skipped?: number; source?: string }).find((line) => line.level === 40);
      expect(warn).toMatchObject({ source, skipped });
    });
  }

  test('csmarket: a zero buy_order or avg_price means none; a bad one skips only its own key', async () => {
    const rows = [
      '{"price":"2.00","buy_order":"0.000","avg_price":"0","popularity_7d":null,"market_hash_name":"Two Keys"}',
      '{"price":"1.90","buy_order":"NaN","avg_price":null,"popularity_7d":"4","market_hash_name":"Two Keys"}',
      '{"price":"2.10","buy_order":"1.5","avg_price":"2.05","popularity_7d":"2","market_hash_name":"Two Keys"}',
    ];
    overrides.set(ROUTE_OF.csmarket, () => json(HOSTILE.csmarket.body(rows)));
    const result = await fetchFrom('csmarket');
    expect(result.skipped).toBe(1);
    expect(result.observations).toEqual([
      observation('Two Keys', 'default', '2.00', { median_price: null, bid: '1.5', volume_7d: 2, source_time: CSMARKET_TIME }),
    ]);
  });

  test('waxpeer: bad plain rows and bad doppler listings are skipped and counted; good listings still aggregate', async () => {
    const prices = [
      ...THOUSANDTHS_ACCEPTED.map(([min], i) => `{"name":"Accepted ${i}","count":1,"min":${min}}`),
      ...THOUSANDTHS_REFUSED.map((min, i) => `{"name":"Refused ${i}","count":1,"min":${min}}`),
      ...BROKEN_ROWS((name) => `{"name":${JSON.stringify(name)},"count":1,"min":1000}`),
      '{"name":"Bad Count","count":"x","min":1000}',
    ];
    const listings = [
      `{"name":${JSON.stringify(KARAMBIT)},"phase":"Ruby","price":3850000,"paint_index":415,"item_id":"1"}`,
      `{"name":${JSON.stringify(KARAMBIT)},"phase":"Ruby","price":3700000.0,"paint_index":415,"item_id":"2"}`,
      ...THOUSANDTHS_REFUSED.map((price, i) => `{"name":${JSON.stringify(KARAMBIT)},"phase":"Ruby","price":${price},"item_id":"r${i}"}`),
      `{"name":${JSON.stringify(KARAMBIT)},"phase":"Phase 5","price":800000,"item_id":"3"}`,
      `{"name":${JSON.stringify(KARAMBIT)},"phase":null,"price":800000,"item_id":"4"}`,
      `{"name":${JSON.stringify(KARAMBIT)},"price":800000,"item_id":"5"}`,
      `{"name":${JSON.stringify(KARAMBIT)},"phase":"","price":800000,"item_id":"6"}`,
      `{"phase":"Ruby","price":800000,"item_id":"7"}`,
      'null',
    ];
    overrides.set(WAXPEER_PRICES, () => json(`{"success":true,"items":[${prices.join(',')}]}`));
    overrides.set(WAXPEER_DOPPLERS, () => json(`{"success":true,"items":[${listings.join(',')}]}`));
    const result = await fetchFrom('waxpeer');
    expect(result.skipped).toBe(prices.length - THOUSANDTHS_ACCEPTED.length + listings.length - 2);
    expect(byKey(result.observations)).toEqual(
      byKey([
        ...THOUSANDTHS_ACCEPTED.map(([, expected], i) => observation(`Accepted ${i}`, 'default', expected, { quantity: 1 })),
        observation(KARAMBIT, 'ruby', '3700.000', { quantity: 2 }),
      ]),
    );
  });
});

/** A body of the wrong overall shape for each source: an outage, not a list of bad rows. */
const WRONG_SHAPES: Record<Exclude<MarketplaceName, 'waxpeer'>, string[]> = {
  csmarket: [
    '{"success":false,"error":"Bad KEY"}',
    '{"success":true,"time":1772366370,"currency":"USD","items":"none"}',
    '{"success":true,"time":1772366370,"currency":"USD"}',
    '{"success":true,"time":1772366370,"currency":"RUB","items":{}}',
    '[]',
  ],
  lisskins: ['{"error":"maintenance"}', 'null', '"csgo"'],
  whitemarket: ['{"data":[]}', '{}', '42'],
  bitskins: ['{"list":null}', '[]', '{"code":"RATE_LIMIT"}'],
  csdeals: [
    '{"success":false,"error":"Invalid appid"}',
    '{"success":true,"response":{}}',
    '{"success":true,"response":{"items":{}}}',
    '{"success":"true","response":{"items":[]}}',
  ],
};

describe('upstream failures', () => {
  const singles = Object.keys(ROUTE_OF) as Exclude<MarketplaceName, 'waxpeer'>[];

  test('429 with Retry-After → SourceRateLimitedError with that delay', async () => {
    for (const source of singles) {
      overrides.set(ROUTE_OF[source], () => json('{"error":"Too many requests"}', 429, { 'retry-after': '17' }));
      const error = await failure(fetchFrom(source));
      expect(error).toBeInstanceOf(SourceRateLimitedError);
      expect((error as SourceRateLimitedError).retryAfterMs).toBe(17_000);
      expect((error as SourceRateLimitedError).source).toBe(source);
      expect((error as SourceRateLimitedError).origin).toBe('upstream');
    }
  });

  test('429 without Retry-After → each adapter’s default delay; an HTTP-date is honoured', async () => {
    const defaults: Record<MarketplaceName, number> = {
      csmarket: 10_000,
      lisskins: 60_000,
      waxpeer: 60_000,
      whitemarket: 60_000,
      bitskins: 30_000,
      csdeals: 60_000,
    };
    for (const source of singles) {
      overrides.set(ROUTE_OF[source], () => json('null', 429));
      const error = await failure(fetchFrom(source));
      expect((error as SourceRateLimitedError).retryAfterMs).toBe(defaults[source]);
    }
    overrides.set(WAXPEER_PRICES, () => json('null', 429));
    expect(((await failure(fetchFrom('waxpeer'))) as SourceRateLimitedError).retryAfterMs).toBe(defaults.waxpeer);
    overrides.set(ROUTE_OF.bitskins, () => json('null', 429, { 'retry-after': 'Sun, 01 Mar 2026 12:01:10 GMT' }));
    expect(((await failure(fetchFrom('bitskins'))) as SourceRateLimitedError).retryAfterMs).toBe(60_000);
  });

  test('500 → SourceUnavailableError', async () => {
    for (const source of singles) {
      overrides.set(ROUTE_OF[source], () => json('{"error":"internal"}', 500));
      const error = await failure(fetchFrom(source));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain('HTTP 500');
    }
  });

  test('truncated JSON → SourceUnavailableError', async () => {
    for (const source of singles) {
      const text = fixtureText.get(ROUTE_OF[source])!;
      overrides.set(ROUTE_OF[source], () => json(text.slice(0, Math.floor(text.length / 2))));
      const error = await failure(fetchFrom(source));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain('unparseable body');
    }
  });

  test('a body of the wrong overall shape → SourceUnavailableError', async () => {
    for (const source of singles) {
      for (const body of WRONG_SHAPES[source]) {
        overrides.set(ROUTE_OF[source], () => json(body));
        const error = await failure(fetchFrom(source));
        expect(error).toBeInstanceOf(SourceUnavailableError);
      }
    }
  });

  test('a refused budget stops the run before any request', async () => {
    for (const source of [...singles, 'waxpeer'] as MarketplaceName[]) {
      const acquire = async () => {
        throw new SourceRateLimitedError(source, 5_000, { origin: 'budget' });
      };
      const error = await failure(fetchFrom(source, { acquire }));
      expect((error as SourceRateLimitedError).origin).toBe('budget');
    }
    expect(requests).toEqual([]);
  });
});

describe('waxpeer needs both requests', () => {
  test('the prices request failing fails the run, without asking for dopplers', async () => {
    overrides.set(WAXPEER_PRICES, () => json('{"error":"internal"}', 502));
    const error = await failure(fetchFrom('waxpeer'));
    expect(error).toBeInstanceOf(SourceUnavailableError);
    expect((error as SourceUnavailableError).partial).toBeUndefined();
    expect(requests).toEqual(['/waxpeer/v1/prices?game=csgo&minified=0']);
  });

  test('the dopplers request failing fails the run and keeps nothing of the prices', async () => {
    for (const failing of [
      () => json('{"error":"internal"}', 500),
      () => json('{"success":false,"msg":"maintenance"}'),
      () => json('{"success":true,"items":{}}'),
      () => json(fixtureText.get(WAXPEER_DOPPLERS)!.slice(0, 100)),
    ]) {
      overrides.set(WAXPEER_DOPPLERS, failing);
      const error = await failure(fetchFrom('waxpeer'));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as SourceUnavailableError).partial).toBeUndefined();
    }
    overrides.set(WAXPEER_DOPPLERS, () => json('null', 429, { 'retry-after': '42' }));
    const limited = await failure(fetchFrom('waxpeer'));
    expect(limited).toBeInstanceOf(SourceRateLimitedError);
    expect((limited as SourceRateLimitedError).retryAfterMs).toBe(42_000);
    expect((limited as SourceRateLimitedError).partial).toBeUndefined();
  });

  test('a prices body of the wrong shape fails the run too', async () => {
    for (const body of ['{"success":false,"msg":"wrong game"}', '{"success":true}', '[]']) {
      overrides.set(WAXPEER_PRICES, () => json(body));
      expect(await failure(fetchFrom('waxpeer'))).toBeInstanceOf(SourceUnavailableError);
    }
  });
});

describe('waxpeer key', () => {
  const apiKey = 'wax-secret-key-0123456789abcdef';

  test('sent as the `api` query parameter on both requests, never logged', async () => {
    const { log, lines } = capturingLog();
    const result = await fetchFrom('waxpeer', { apiKey, log });
    expect(result.observations.length).toBe(9);
    expect(requests).toEqual([`/waxpeer/v1/prices?game=csgo&minified=0&api=${apiKey}`, `/waxpeer/v1/prices/dopplers?game=csgo&phase=any&api=${apiKey}`]);
    const logged = lines.join('');
    expect(lines.filter((line) => line.includes('upstream response')).length).toBe(2);
    expect(logged).toContain('api=REDACTED');
    expect(logged).not.toContain(apiKey);
  });

  test('not sent when unset', async () => {
    await fetchFrom('waxpeer');
    for (const request of requests) expect(new URL(request, baseUrl).searchParams.has('api')).toBe(false);
  });

  test('absent from errors and their logs when the upstream cannot be reached', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    const url = `http://127.0.0.1:${closed.port}/waxpeer`;
    closed.stop(true);
    const { log, lines } = capturingLog();
    const error = await failure(ADAPTERS.waxpeer.fetchSnapshot({ ...context('waxpeer', { apiKey, log }), baseUrl: url }));
    expect(error).toBeInstanceOf(SourceUnavailableError);
    expect(String((error as Error).message)).not.toContain(apiKey);
    expect(JSON.stringify(error)).not.toContain(apiKey);
    expect(lines.join('')).not.toContain(apiKey);
  });
});
