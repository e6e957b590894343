import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import pino from 'pino';
import { parseEcbRates } from '../../shared/fx/ecb.ts';
import type { FxRates } from '../../shared/fx/repository.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { SOURCE_NAMES, type SourceName } from '../../shared/platform/source-names.ts';
import { createRequestBudget, requestBudgetKeys } from '../../shared/sources/budget.ts';
import { CSFLOAT_DEFAULT_MAX_PAGES, CSFLOAT_MAX_PAGE_SIZE } from '../../shared/sources/csfloat.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { decimalFromCents, decimalFromJsonNumber, decimalFromSteamMoney, integerFromSteamCount } from '../../shared/sources/money.ts';
import { sourceSettings } from '../../shared/sources/settings.ts';
import { type FetchContext, type SourceObservation, SourceRateLimitedError, SourceUnavailableError } from '../../shared/sources/types.ts';
import { JsonNumber, parseJsonExact, parseJsonExactWithReviver, parseRetryAfter } from '../../shared/sources/upstream.ts';
import { compareDecimals } from '../../shared/util/decimal.ts';
import {
  ABSENT_SHARE,
  type FixedPrice,
  MARKETPLACE_SOURCES,
  type MarketplaceSource,
  type MarketSimulator,
  SIMULATOR_MODES,
  SIMULATOR_TARGETS,
  type SimulatorItem,
  startMarketSimulator,
} from '../fakes/simulator/server.ts';
import { failure, testConfig } from '../helpers.ts';

/** Source adapters (docs/design.md §9) against the market simulator, and the Redis request budget. */

const silent = createLogger({ level: 'silent', name: 'test' });
const NOW = new Date('2026-03-01T12:00:10.000Z');
/** The simulator's 30 s bucket holding NOW: skinport's `updated_at`. */
const BUCKET_START = new Date('2026-03-01T12:00:00.000Z');

const AK = 'AK-47 | Redline (Field-Tested)';
const AWP = 'StatTrak™ AWP | Asiimov (Battle-Scarred)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const STICKER = 'Sticker | Crown (Foil)';
const CASE = 'Snakebite Case';

const ITEMS: SimulatorItem[] = [
  { market_hash_name: AK, phases: [], definition_index: 7, paint_index: 282 },
  { market_hash_name: AWP, phases: [], definition_index: 9, paint_index: 279, stattrak: true },
  { market_hash_name: KARAMBIT, phases: ['phase-2', 'ruby', 'black-pearl'], definition_index: 507, paint_index: 418 },
  { market_hash_name: STICKER, phases: [] },
  { market_hash_name: CASE, phases: [] },
];

const FIXED: Record<string, Record<string, FixedPrice>> = {
  [AK]: { default: { price: '2.30', median_price: '2.45', quantity: 1234 } },
  [AWP]: { default: { price: '1234.56', quantity: 3 } },
  [KARAMBIT]: {
    default: { price: '612.00', quantity: 9 },
    'phase-2': { price: '640.10', quantity: 3 },
    ruby: { price: '3850', quantity: 1 },
    'black-pearl': { price: '2100.5', quantity: 2 },
  },
  [STICKER]: { default: { price: null, quantity: 0 } },
  [CASE]: { default: { price: '0.7', median_price: null, quantity: 25000 } },
};

function context(baseUrl: string, overrides: Partial<FetchContext> = {}): FetchContext {
  return { baseUrl, log: silent, timeoutMs: 5_000, acquire: async () => {}, names: [], now: () => NOW, ...overrides };
}

const byKey = (observations: SourceObservation[]) =>
  [...observations].sort((a, b) => `${a.market_hash_name}|${a.version}`.localeCompare(`${b.market_hash_name}|${b.version}`));

/** Seeded PRNG for the property tests, so a failure names its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let sim: MarketSimulator;
let url: (source: SourceName) => string;
/** The rates of the ECB file the simulator serves at NOW: skinbaron's EUR converted back with them (docs/design.md §14). */
let simulatorRates: FxRates;
beforeAll(async () => {
  sim = startMarketSimulator({ items: ITEMS, prices: FIXED, now: () => NOW });
  url = (source) => `${sim.url}/${source}`;
  const day = parseEcbRates(await (await fetch(`${sim.url}/fx/stats/eurofxref/eurofxref-daily.xml`)).text(), NOW).days[0]!;
  simulatorRates = { as_of: day.date, rates: new Map([['EUR', '1'], ...day.rates]), fetched_at: NOW };
});
afterAll(() => sim.stop());
afterEach(() => {
  sim.setMode('all', 'ok');
  sim.setRetryAfter('30');
});

describe('money text', () => {
  test('JSON number text stays as written; exponents expand; negatives are refused', () => {
    expect(decimalFromJsonNumber('2.30')).toBe('2.30');
    expect(decimalFromJsonNumber('2')).toBe('2');
    expect(decimalFromJsonNumber('0.07')).toBe('0.07');
    expect(decimalFromJsonNumber('1.5e2')).toBe('150');
    expect(decimalFromJsonNumber('25E-3')).toBe('0.025');
    expect(decimalFromJsonNumber('1.25e1')).toBe('12.5');
    expect(decimalFromJsonNumber('-1.00')).toBeNull();
    expect(decimalFromJsonNumber('01')).toBeNull();
    expect(decimalFromJsonNumber('abc')).toBeNull();
  });

  test('parseJsonExact keeps number text and tells numbers from strings', () => {
    const parsed = parseJsonExact('{"a":2.30,"b":"2.30","c":[1e3,null]}') as Record<string, unknown>;
    expect(parsed.a).toBeInstanceOf(JsonNumber);
    expect((parsed.a as JsonNumber).text).toBe('2.30');
    expect(parsed.b).toBe('2.30');
    expect(((parsed.c as unknown[])[0] as JsonNumber).text).toBe('1e3');
  });

  test('parseJsonExact (plain parse, then number texts from a scan) equals the reviver path on any JSON document', () => {
    const same = (text: string) => expect(parseJsonExact(text)).toEqual(parseJsonExactWithReviver(text));
    // Strings that look like numbers or structure, escapes before quotes, numbers of every form.
    for (const text of [
      '2.30',
      '-0',
      '1E+400',
      '"12"',
      'null',
      'true',
      '[]',
      '{}',
      '[1,-2.50,3e-3,0.0,"4"]',
      String.raw`{"a":"x\\","b":1.10,"c":"\\\"9\"","d":[{"e":-0.0}],"f":"a:b{c}"}`,
      String.raw`{"n":"\u0031\u0032","m":10.00,"k":{"z":1,"y":"}"}}`,
      // Integer-like keys come first in a parsed object, and a repeated key keeps its last value at the
      // first one's place: both differ from the text's order and take the reviver path.
      '{"b":1.5,"1":2.25,"a":3}',
      '{"a":"s","b":1.0,"a":1}',
      '{"a":1,"b":2,"a":3.00}',
      '{"a":1.0,"a":"x","c":2}',
      '[{"a":1},{"a":2.0,"a":2.00}]',
    ]) {
      same(text);
    }
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), (text) => {
        same(text);
      }),
      { seed: 1313, numRuns: 2_000 },
    );
    expect(() => parseJsonExact('{"a":1,}')).toThrow(SyntaxError);
  });

  test('Steam money and counts', () => {
    expect(decimalFromSteamMoney('$1,234.56')).toBe('1234.56');
    expect(decimalFromSteamMoney('$0.03')).toBe('0.03');
    expect(decimalFromSteamMoney('$12')).toBe('12');
    expect(decimalFromSteamMoney('$1,234,567.00 USD')).toBe('1234567.00');
    for (const bad of ['$1,23.00', '-$1.00', '$-1.00', '$0.00', '2.30', '€2,30', '$', '$1.2.3']) expect(decimalFromSteamMoney(bad)).toBeNull();
    expect(integerFromSteamCount('1,234')).toBe(1234);
    expect(integerFromSteamCount('12')).toBe(12);
    expect(integerFromSteamCount('1,23')).toBeNull();
    expect(integerFromSteamCount('-4')).toBeNull();
  });

  test('cents → decimal by string math', () => {
    expect(decimalFromCents('5')).toBe('0.05');
    expect(decimalFromCents('70')).toBe('0.70');
    expect(decimalFromCents('1250')).toBe('12.50');
    expect(decimalFromCents('100000')).toBe('1000.00');
    expect(decimalFromCents('123456789012345678')).toBe('1234567890123456.78');
    for (const bad of ['0', '12.5', '-5', '1e3', '05']) expect(decimalFromCents(bad)).toBeNull();
  });

  test('Retry-After: seconds, HTTP-date, garbage', () => {
    expect(parseRetryAfter('30', NOW, 5)).toBe(30_000);
    expect(parseRetryAfter(new Date(NOW.getTime() + 90_000).toUTCString(), NOW, 5)).toBe(90_000);
    expect(parseRetryAfter(new Date(NOW.getTime() - 90_000).toUTCString(), NOW, 5)).toBe(0);
    expect(parseRetryAfter('soon', NOW, 5)).toBe(5);
    expect(parseRetryAfter(null, NOW, 5)).toBe(5);
  });
});

describe('adapters registry', () => {
  test('one adapter per source with the published budgets', () => {
    expect(Object.keys(ADAPTERS).sort()).toEqual([...SOURCE_NAMES].sort());
    for (const name of SOURCE_NAMES) expect(ADAPTERS[name].name).toBe(name);
    expect(ADAPTERS.skinport).toMatchObject({ defaultBudget: { requests: 8, windowSeconds: 300 }, defaultIntervalSeconds: 300, needsNames: false });
    expect(ADAPTERS.steam).toMatchObject({ defaultBudget: { requests: 20, windowSeconds: 60 }, defaultIntervalSeconds: 60, needsNames: true });
    expect(ADAPTERS.csfloat).toMatchObject({ defaultBudget: { requests: 200, windowSeconds: 3600 }, defaultIntervalSeconds: 300, needsNames: false });
    expect(CSFLOAT_MAX_PAGE_SIZE).toBe(50);
    expect(CSFLOAT_DEFAULT_MAX_PAGES * 12).toBeLessThanOrEqual(200);
  });
});

describe('skinport', () => {
  test('a snapshot: exact decimal text, phases as versions, quantity-0 rows unpriced (not skipped)', async () => {
    const result = await ADAPTERS.skinport.fetchSnapshot(context(url('skinport')));
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    const at = BUCKET_START;
    expect(byKey(result.observations)).toEqual([
      { market_hash_name: KARAMBIT, version: 'black-pearl', price: '2100.5', median_price: '2100.5', bid: null, volume_7d: null, quantity: 2, source_time: at },
      { market_hash_name: KARAMBIT, version: 'default', price: '612.00', median_price: '612.00', bid: null, volume_7d: null, quantity: 9, source_time: at },
      { market_hash_name: KARAMBIT, version: 'phase-2', price: '640.10', median_price: '640.10', bid: null, volume_7d: null, quantity: 3, source_time: at },
      { market_hash_name: KARAMBIT, version: 'ruby', price: '3850', median_price: '3850', bid: null, volume_7d: null, quantity: 1, source_time: at },
      { market_hash_name: AK, version: 'default', price: '2.30', median_price: '2.45', bid: null, volume_7d: null, quantity: 1234, source_time: at },
      { market_hash_name: CASE, version: 'default', price: '0.7', median_price: null, bid: null, volume_7d: null, quantity: 25000, source_time: at },
      { market_hash_name: AWP, version: 'default', price: '1234.56', median_price: '1234.56', bid: null, volume_7d: null, quantity: 3, source_time: at },
    ]);
    // The real API requires brotli.
    expect(sim.lastRequest('skinport')?.headers['accept-encoding']).toBe('br');
  });

  test('generated prices: realistic, deterministic within a bucket, drifting slowly', async () => {
    let at = NOW;
    const generated = startMarketSimulator({ items: ITEMS, seed: 7, now: () => at });
    try {
      const fetchAt = async (when: Date) => {
        at = when;
        const { observations } = await ADAPTERS.skinport.fetchSnapshot(context(`${generated.url}/skinport`, { now: () => when }));
        return new Map(observations.map((o) => [`${o.market_hash_name}|${o.version}`, o]));
      };
      const first = await fetchAt(NOW);
      const again = await fetchAt(new Date(NOW.getTime() + 5_000));
      const next = await fetchAt(new Date(NOW.getTime() + 30_000));
      const later = await fetchAt(new Date(NOW.getTime() + 3 * 86_400_000));
      expect(first.size).toBeGreaterThan(3);
      expect([...again.entries()]).toEqual([...first.entries()]);
      for (const [key, observation] of first) {
        expect(observation.price).toMatch(/^[0-9]+\.[0-9]{2}$/);
        const following = next.get(key);
        if (!following) continue;
        // One bucket later: within 2 %, or one cent for cheap items (test arithmetic only, not money handling).
        const change = Math.abs(Number(following.price) - Number(observation.price));
        expect(change).toBeLessThanOrEqual(Math.max(0.02 * Number(observation.price), 0.011));
      }
      expect([...first.keys()].some((key) => later.get(key) && later.get(key)!.price !== first.get(key)!.price)).toBe(true);
      const karambit = first.get(`${KARAMBIT}|phase-2`);
      if (karambit) expect(Number(karambit.price)).toBeGreaterThan(30);
      const snakebite = first.get(`${CASE}|default`);
      if (snakebite) expect(Number(snakebite.price)).toBeLessThan(20);
    } finally {
      await generated.stop();
    }
  });

  test('partial: every third row broken (missing name, string price, negative price) is skipped and counted', async () => {
    sim.setMode('skinport', 'partial');
    const result = await ADAPTERS.skinport.fetchSnapshot(context(url('skinport')));
    // Rows in order: AK, AWP*, Karambit, Karambit P2, Karambit Ruby*, Karambit BP, Sticker (unpriced), Case*.
    expect(result.skipped).toBe(3);
    expect(byKey(result.observations).map((o) => `${o.market_hash_name}|${o.version}|${o.price}`)).toEqual([
      `${KARAMBIT}|black-pearl|2100.5`,
      `${KARAMBIT}|default|612.00`,
      `${KARAMBIT}|phase-2|640.10`,
      `${AK}|default|2.30`,
    ]);
  });
});

describe('steam', () => {
  // docs/design.md §19: prices come from the search pages (test/sources/sources-steam-search.test.ts has them in depth);
  // priceoverview reads the names it is given as 24 h sales windows, never as prices.
  const sale = (name: string, median: string | null, volume: number) => ({
    market_hash_name: name,
    version: 'default',
    window: '24h' as const,
    median,
    mean: null,
    min: null,
    max: null,
    volume,
    source_time: NOW,
  });

  test('search pages price the market: cents → exact decimals, listings as quantity, the unlisted unpriced', async () => {
    const result = await ADAPTERS.steam.fetchSnapshot(context(url('steam'), { maxPages: 1 }));
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1, sales: [] });
    const at = { version: 'default', median_price: null, bid: null, volume_7d: null, source_time: NOW };
    expect(byKey(result.observations)).toEqual([
      { ...at, market_hash_name: KARAMBIT, price: '612.00', quantity: 9 },
      { ...at, market_hash_name: AK, price: '2.30', quantity: 1234 },
      { ...at, market_hash_name: CASE, price: '0.70', quantity: 25000 },
      { ...at, market_hash_name: AWP, price: '1234.56', quantity: 3 },
    ]);
    expect(result.icons!.map((icon) => icon.market_hash_name).sort()).toEqual([AK, AWP, KARAMBIT, STICKER, CASE].sort());
  });

  test('priceoverview, one request per name: "1,234" sold in 24 h at a median, no price; unknown names counted', async () => {
    const names = [AK, AWP, KARAMBIT, STICKER, CASE, 'Nope | Not An Item (Field-Tested)', AK];
    const before = sim.requestCount('steam');
    const result = await ADAPTERS.steam.fetchSnapshot(context(url('steam'), { names }));
    expect(result).toMatchObject({ observations: [], skipped: 0, unknown: 1, requests: 6 });
    expect(sim.requestCount('steam') - before).toBe(6);
    expect(result.sales).toEqual([
      sale(AK, '2.45', 1234),
      sale(AWP, '1234.56', 3),
      sale(KARAMBIT, '612.00', 9),
      sale(STICKER, null, 0),
      sale(CASE, null, 25000),
    ]);
  });

  test('partial: malformed answers are skipped and counted', async () => {
    sim.setMode('steam', 'partial');
    const result = await ADAPTERS.steam.fetchSnapshot(context(url('steam'), { names: [AK, AWP, KARAMBIT, CASE, STICKER] }));
    // Request 1 (AWP: no success field) is broken; request 4 (Sticker) breaks only lowest_price, an ask priceoverview no longer reads.
    expect(result.skipped).toBe(1);
    expect(result.sales!.map((window) => window.market_hash_name).sort()).toEqual([KARAMBIT, AK, CASE, STICKER].sort());
  });

  test('a 429 in the middle of a run keeps what was gathered', async () => {
    let acquired = 0;
    const acquire = async () => {
      acquired += 1;
      if (acquired === 3) sim.setMode('steam', 'rate_limit');
    };
    sim.setRetryAfter(null);
    const error = await failure(ADAPTERS.steam.fetchSnapshot(context(url('steam'), { names: [AK, AWP, CASE, KARAMBIT], acquire })));
    expect(error).toBeInstanceOf(SourceRateLimitedError);
    const limited = error as SourceRateLimitedError;
    // Steam's 429 (body `null`) carries no Retry-After here: the adapter's default backoff.
    expect(limited.retryAfterMs).toBe(300_000);
    expect(limited.origin).toBe('upstream');
    expect(limited.partial?.sales?.map((window) => window.market_hash_name)).toEqual([AK, AWP]);
    expect(limited.partial?.requests).toBe(3);
  });
});

describe('csfloat', () => {
  const LISTED: Record<string, Record<string, FixedPrice>> = {
    [AK]: { default: { price: '2.30', listings: ['2.30', '2.35', '2.10', '5.00'] } },
    [AWP]: { default: { price: '1234.56', listings: ['1234.56'] } },
    [KARAMBIT]: {
      'phase-2': { price: '640.10', listings: ['700.00', '640.10', '655.55'] },
      ruby: { price: '3850.00', listings: ['3850'] },
      'black-pearl': { price: null },
    },
    [STICKER]: { default: { price: null } },
    [CASE]: { default: { price: '0.05', listings: ['0.07', '0.05'] } },
  };
  let market: MarketSimulator;
  beforeAll(() => {
    market = startMarketSimulator({ items: ITEMS, prices: LISTED, now: () => NOW, seed: 3 });
  });
  afterAll(() => market.stop());

  async function rawListings(): Promise<{ created_at: string; item: { market_hash_name: string; phase?: string } }[]> {
    const response = await fetch(`${market.url}/csfloat/api/v1/listings?limit=1000`);
    return ((await response.json()) as { data: { created_at: string; item: { market_hash_name: string; phase?: string } }[] }).data;
  }

  test('pages through the cursor and aggregates: cheapest, lower median, count, newest created_at', async () => {
    const before = market.requestCount('csfloat');
    const result = await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { pageSize: 3 }));
    // 11 listings, 3 a page: 4 pages, the last one without a cursor.
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 4 });
    expect(market.requestCount('csfloat') - before).toBe(4);
    const newest = new Map<string, number>();
    for (const listing of await rawListings()) {
      const key = `${listing.item.market_hash_name}|${listing.item.phase ?? ''}`;
      newest.set(key, Math.max(newest.get(key) ?? 0, Date.parse(listing.created_at)));
    }
    const at = (name: string, phase = '') => new Date(newest.get(`${name}|${phase}`)!);
    expect(byKey(result.observations)).toEqual([
      {
        market_hash_name: KARAMBIT,
        version: 'phase-2',
        price: '640.10',
        median_price: '655.55',
        bid: null,
        volume_7d: null,
        quantity: 3,
        source_time: at(KARAMBIT, 'Phase 2'),
      },
      {
        market_hash_name: KARAMBIT,
        version: 'ruby',
        price: '3850.00',
        median_price: '3850.00',
        bid: null,
        volume_7d: null,
        quantity: 1,
        source_time: at(KARAMBIT, 'Ruby'),
      },
      // Sorted 2.10, 2.30, 2.35, 5.00: an even count takes the lower middle.
      { market_hash_name: AK, version: 'default', price: '2.10', median_price: '2.30', bid: null, volume_7d: null, quantity: 4, source_time: at(AK) },
      { market_hash_name: CASE, version: 'default', price: '0.05', median_price: '0.05', bid: null, volume_7d: null, quantity: 2, source_time: at(CASE) },
      { market_hash_name: AWP, version: 'default', price: '1234.56', median_price: '1234.56', bid: null, volume_7d: null, quantity: 1, source_time: at(AWP) },
    ]);
    for (const observation of result.observations) {
      expect(observation.source_time.getTime()).toBeLessThanOrEqual(NOW.getTime());
      expect(observation.source_time.getTime()).toBeGreaterThan(NOW.getTime() - 7 * 3_600_000);
    }
  });

  test('the page cap stops paging; the listings seen are aggregated', async () => {
    const result = await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { pageSize: 3, maxPages: 2 }));
    expect(result.requests).toBe(2);
    expect(result.observations.reduce((sum, o) => sum + (o.quantity ?? 0), 0)).toBe(6);
    // The default page size is the real upstream's maximum.
    await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { maxPages: 1 }));
    expect(new URL(market.lastRequest('csfloat')!.url).searchParams.get('limit')).toBe('50');
  });

  test('partial: broken listings are skipped, the rest aggregated', async () => {
    market.setMode('csfloat', 'partial');
    try {
      const result = await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { pageSize: 4 }));
      // Positions 1, 4, 7, 10 of 11 are broken.
      expect(result.skipped).toBe(4);
      expect(result.observations.reduce((sum, o) => sum + (o.quantity ?? 0), 0)).toBe(7);
      for (const observation of result.observations) expect(observation.price).toMatch(/^[0-9]+\.[0-9]{2}$/);
    } finally {
      market.setMode('csfloat', 'ok');
    }
  });

  test('Authorization carries the API key only when set, and never reaches the logs', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = pino({ level: 'trace' }, sink);
    const apiKey = 'csfloat-secret-key-0123456789';
    await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { apiKey, log, maxPages: 1 }));
    expect(market.lastRequest('csfloat')?.headers.authorization).toBe(apiKey);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain(apiKey);
    await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { maxPages: 1 }));
    expect(market.lastRequest('csfloat')?.headers.authorization).toBeUndefined();
  });

  test('a failure on a later page keeps the pages already read', async () => {
    let acquired = 0;
    const acquire = async () => {
      acquired += 1;
      if (acquired === 3) market.setMode('csfloat', 'fail');
    };
    try {
      const error = await failure(ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { pageSize: 3, acquire })));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      const partial = (error as SourceUnavailableError).partial!;
      expect(partial.requests).toBe(3);
      expect(partial.observations.reduce((sum, o) => sum + (o.quantity ?? 0), 0)).toBe(6);
    } finally {
      market.setMode('csfloat', 'ok');
    }
  });
});

describe('property: decimal text round-trips simulator → adapter unchanged', () => {
  const seed = 20260301;
  const random = prng(seed);
  const digits = (count: number) => Array.from({ length: count }, () => Math.floor(random() * 10)).join('');
  const decimals: string[] = [];
  while (decimals.length < 150) {
    const whole = random() < 0.3 ? '0' : `${1 + Math.floor(random() * 9)}${digits(Math.floor(random() * 5))}`;
    const fraction = digits(Math.floor(random() * 3));
    const text = fraction ? `${whole}.${fraction}` : whole;
    if (/[1-9]/.test(text)) decimals.push(text);
  }
  const items = decimals.map((_, i) => ({ market_hash_name: `Property Item ${i} | Seed ${seed} (Field-Tested)`, phases: [] }));
  const prices = Object.fromEntries(items.map((item, i) => [item.market_hash_name, { default: decimals[i]! }]));
  const expected = new Map(items.map((item, i) => [item.market_hash_name, decimals[i]!]));
  let market: MarketSimulator;
  beforeAll(() => {
    market = startMarketSimulator({ items, prices, now: () => NOW });
  });
  afterAll(() => market.stop());

  test(`skinport (seed ${seed})`, async () => {
    const result = await ADAPTERS.skinport.fetchSnapshot(context(`${market.url}/skinport`));
    expect(result.observations.length).toBe(decimals.length);
    for (const observation of result.observations) expect(observation.price).toBe(expected.get(observation.market_hash_name)!);
  });

  test(`steam search cents → two decimals (seed ${seed})`, async () => {
    const result = await ADAPTERS.steam.fetchSnapshot(context(`${market.url}/steam`, { maxPages: 2 }));
    expect(result.observations.length).toBe(decimals.length);
    for (const observation of result.observations) {
      const [whole, fraction = ''] = expected.get(observation.market_hash_name)!.split('.');
      expect(observation.price).toBe(`${whole}.${fraction.padEnd(2, '0')}`);
    }
  });

  test(`csfloat cents → two decimals (seed ${seed})`, async () => {
    const result = await ADAPTERS.csfloat.fetchSnapshot(context(`${market.url}/csfloat`, { pageSize: 1000, maxPages: 10 }));
    expect(result.observations.length).toBe(decimals.length);
    for (const observation of result.observations) {
      const [whole, fraction = ''] = expected.get(observation.market_hash_name)!.split('.');
      expect(observation.price).toBe(`${whole}.${fraction.padEnd(2, '0')}`);
    }
  });
});

describe('failure modes', () => {
  // Every source against the simulator; steam reads a search page, then priceoverview for the names it
  // is given; skinbaron needs a key (the simulator takes any) and the rates its EUR prices are converted with.
  const extraFor = (name: SourceName): Partial<FetchContext> =>
    name === 'steam' ? { names: [AK, AWP], maxPages: 1 } : name === 'skinbaron' ? { apiKey: 'simulator-accepts-any-key', rates: simulatorRates } : {};
  const cases: [SourceName, () => Partial<FetchContext>][] = SOURCE_NAMES.map((name) => [name, () => extraFor(name)]);
  /** Each adapter's back-off when a 429 says nothing of when to come back. */
  const DEFAULT_RETRY_AFTER_MS: Record<SourceName, number> = {
    skinport: 300_000,
    steam: 300_000,
    csfloat: 60_000,
    csmarket: 10_000,
    lisskins: 60_000,
    waxpeer: 60_000,
    whitemarket: 60_000,
    bitskins: 30_000,
    csdeals: 60_000,
    skinbaron: 60_000,
  };
  for (const [source, extra] of cases) {
    test(`${source}: fail → unavailable (HTTP 500)`, async () => {
      sim.setMode(source, 'fail');
      const error = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), extra())));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain('HTTP 500');
    });

    test(`${source}: malformed JSON → unavailable`, async () => {
      sim.setMode(source, 'malformed');
      const error = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), extra())));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain('unparseable');
    });

    test(`${source}: 429 → rate-limited with Retry-After seconds`, async () => {
      sim.setMode(source, 'rate_limit');
      const error = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), extra())));
      expect(error).toBeInstanceOf(SourceRateLimitedError);
      expect((error as SourceRateLimitedError).retryAfterMs).toBe(30_000);
      expect((error as SourceRateLimitedError).source).toBe(source);
    });

    test(`${source}: 429 with an HTTP-date, and without Retry-After`, async () => {
      sim.setMode(source, 'rate_limit');
      sim.setRetryAfter(new Date(NOW.getTime() + 90_000).toUTCString());
      const dated = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), extra())));
      expect((dated as SourceRateLimitedError).retryAfterMs).toBe(90_000);
      sim.setRetryAfter(null);
      const bare = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), extra())));
      expect((bare as SourceRateLimitedError).retryAfterMs).toBe(DEFAULT_RETRY_AFTER_MS[source]);
    });

    test(`${source}: stall → unavailable after timeoutMs`, async () => {
      sim.setMode(source, 'stall');
      const started = performance.now();
      const error = await failure(ADAPTERS[source].fetchSnapshot(context(url(source), { ...extra(), timeoutMs: 250 })));
      const elapsed = performance.now() - started;
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain('timed out after 250 ms');
      expect(elapsed).toBeGreaterThanOrEqual(200);
      expect(elapsed).toBeLessThan(2_000);
    });

    test(`${source}: the simulator's pinned prices come out as exact decimals, and wrong types throughout are all skipped`, async () => {
      const ok = await ADAPTERS[source].fetchSnapshot(context(url(source), extra()));
      const ak = ok.observations.find((observation) => observation.market_hash_name === AK && observation.version === 'default');
      expect(ak).toBeDefined();
      // Skinbaron's pin went to EUR cents and back to USD cents: within a cent of it.
      if (source === 'skinbaron') expect(['2.29', '2.30', '2.31']).toContain(ak!.price);
      else expect(compareDecimals(ak!.price, '2.30')).toBe(0);
      expect(ok.skipped).toBe(0);
      sim.setMode(source, 'wrong_types');
      const wrong = await ADAPTERS[source].fetchSnapshot(context(url(source), extra()));
      expect(wrong.observations).toEqual([]);
      expect(wrong.skipped).toBeGreaterThan(0);
    });
  }

  test('network error → unavailable', async () => {
    const closed = startMarketSimulator({ items: ITEMS });
    const deadUrl = closed.url;
    await closed.stop();
    const error = await failure(ADAPTERS.skinport.fetchSnapshot(context(`${deadUrl}/skinport`)));
    expect(error).toBeInstanceOf(SourceUnavailableError);
  });

  test('modes switch over HTTP: POST /_control/<source>/<mode>', async () => {
    const post = (path: string) => fetch(`${sim.url}${path}`, { method: 'POST' });
    expect((await post('/_control/skinport/fail')).status).toBe(200);
    expect(sim.mode('skinport')).toBe('fail');
    expect(await failure(ADAPTERS.skinport.fetchSnapshot(context(url('skinport'))))).toBeInstanceOf(SourceUnavailableError);
    expect((await post('/_control/all/ok')).status).toBe(200);
    expect((await ADAPTERS.skinport.fetchSnapshot(context(url('skinport')))).observations.length).toBe(7);
    expect((await post('/_control/skinport/sideways')).status).toBe(400);
    expect((await post('/_control/nowhere/ok')).status).toBe(400);
    const state = (await (await fetch(`${sim.url}/_control`)).json()) as { modes: Record<string, string> };
    expect(state.modes).toEqual(Object.fromEntries(SIMULATOR_TARGETS.map((source) => [source, 'ok'])));
  });
});

describe('request budget (Redis)', () => {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  // Two connections: two worker processes sharing one Redis.
  const first = new Redis(redisUrl, { lazyConnect: false });
  const second = new Redis(redisUrl, { lazyConnect: false });
  afterAll(async () => {
    await first.quit();
    await second.quit();
  });
  const prefix = () => `test-budget:${crypto.randomUUID()}`;

  test('two instances share one window; the refusal says how long to wait', async () => {
    const keyPrefix = prefix();
    const a = createRequestBudget(first, 'steam', { requests: 3, windowSeconds: 60, keyPrefix });
    const b = createRequestBudget(second, 'steam', { requests: 3, windowSeconds: 60, keyPrefix });
    expect(await b.blockedFor()).toBe(0);
    await a.acquire();
    await b.acquire();
    await a.acquire();
    for (const budget of [a, b]) {
      const error = await failure(budget.acquire());
      expect(error).toBeInstanceOf(SourceRateLimitedError);
      expect((error as SourceRateLimitedError).origin).toBe('budget');
      expect((error as SourceRateLimitedError).retryAfterMs).toBeGreaterThan(55_000);
      expect((error as SourceRateLimitedError).retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    expect(await a.blockedFor()).toBeGreaterThan(55_000);
    // Another source (or prefix) is untouched.
    await createRequestBudget(first, 'skinport', { requests: 3, windowSeconds: 60, keyPrefix }).acquire();
  });

  test("a source's budget and Retry-After block are per QUEUE_PREFIX: two deployments or test runs on one Redis never share them", async () => {
    // The budget the ingest run uses (workers/ingest/run.ts takes sourceSettings(...).budget), for
    // two deployments that differ only in QUEUE_PREFIX, against a real upstream (its real budget).
    const run = crypto.randomUUID().slice(0, 8);
    const settingsOf = (queuePrefix: string) =>
      sourceSettings(testConfig({ QUEUE_PREFIX: queuePrefix, SOURCE_SKINPORT_URL: 'https://api.skinport.com' }), ADAPTERS.skinport).budget;
    const [one, two] = [settingsOf(`budget${run}a`), settingsOf(`budget${run}b`)];
    try {
      expect(one.keyPrefix.startsWith(`budget${run}a:`)).toBe(true);
      expect(two.keyPrefix.startsWith(`budget${run}b:`)).toBe(true);
      expect(one.requests).toBe(8);
      const a = createRequestBudget(first, 'skinport', one);
      const b = createRequestBudget(second, 'skinport', two);
      for (let i = 0; i < one.requests; i += 1) await a.acquire();
      expect(await failure(a.acquire())).toBeInstanceOf(SourceRateLimitedError);
      // The other prefix's window is untouched by the first one's eight requests...
      expect(await b.blockedFor()).toBe(0);
      await b.acquire();
      // ...and by its upstream 429.
      await a.blockUntil(new Date(Date.now() + 60_000));
      expect(await a.blockedFor()).toBeGreaterThan(55_000);
      expect(await b.blockedFor()).toBe(0);
      await b.acquire();
      // Every key the budgets wrote lives under its own QUEUE_PREFIX.
      expect(await first.zcard(requestBudgetKeys(one.keyPrefix, 'skinport').window)).toBe(8);
      expect(await first.zcard(requestBudgetKeys(two.keyPrefix, 'skinport').window)).toBe(2);
      expect(await first.exists(`budget${run}a:source-budget:{skinport}:window`, `budget${run}a:source-budget:{skinport}:blocked`)).toBe(2);
      expect(await first.exists(`budget${run}b:source-budget:{skinport}:window`, `budget${run}b:source-budget:{skinport}:blocked`)).toBe(1);
    } finally {
      for (const settings of [one, two]) {
        const keys = requestBudgetKeys(settings.keyPrefix, 'skinport');
        await first.del(keys.window, keys.blocked);
      }
    }
  });

  test('acquire is atomic under concurrency', async () => {
    const keyPrefix = prefix();
    const budgets = [first, second, first, second].map((redis) => createRequestBudget(redis, 'csfloat', { requests: 5, windowSeconds: 60, keyPrefix }));
    const outcomes = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => budgets[i % budgets.length]!.acquire()));
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled').length).toBe(5);
  });

  test('sliding window: a slot frees when its request leaves the window', async () => {
    const keyPrefix = prefix();
    const budget = createRequestBudget(first, 'skinport', { requests: 2, windowSeconds: 0.4, keyPrefix });
    await budget.acquire();
    await Bun.sleep(200);
    await budget.acquire();
    const error = (await failure(budget.acquire())) as SourceRateLimitedError;
    expect(error.retryAfterMs).toBeLessThanOrEqual(220);
    await Bun.sleep(error.retryAfterMs + 20);
    // The first request left the window; the second still holds its slot.
    await budget.acquire();
    expect(await failure(budget.acquire())).toBeInstanceOf(SourceRateLimitedError);
  });

  test('blockUntil after an upstream 429 stops every process, and never shortens', async () => {
    const keyPrefix = prefix();
    const a = createRequestBudget(first, 'steam', { requests: 100, windowSeconds: 60, keyPrefix });
    const b = createRequestBudget(second, 'steam', { requests: 100, windowSeconds: 60, keyPrefix });
    await a.blockUntil(new Date(Date.now() + 2_000));
    await a.blockUntil(new Date(Date.now() + 500));
    const error = (await failure(b.acquire())) as SourceRateLimitedError;
    expect(error.origin).toBe('budget');
    expect(error.retryAfterMs).toBeGreaterThan(1_500);
    expect(error.retryAfterMs).toBeLessThanOrEqual(2_000);
    const left = await b.blockedFor();
    expect(left).toBeGreaterThan(1_500);
    await a.blockUntil(new Date(Date.now() - 1_000));
    expect(await a.blockedFor()).toBeGreaterThan(1_000);
  });

  test('an adapter stops at the budget and keeps what it fetched', async () => {
    const budget = createRequestBudget(first, 'steam', { requests: 2, windowSeconds: 60, keyPrefix: prefix() });
    const before = sim.requestCount('steam');
    const error = await failure(ADAPTERS.steam.fetchSnapshot(context(url('steam'), { names: [AK, AWP, CASE, KARAMBIT], acquire: budget.acquire })));
    expect(error).toBeInstanceOf(SourceRateLimitedError);
    const limited = error as SourceRateLimitedError;
    expect(limited.origin).toBe('budget');
    expect(limited.partial?.sales?.map((window) => window.market_hash_name)).toEqual([AK, AWP]);
    expect(limited.partial?.requests).toBe(2);
    expect(sim.requestCount('steam') - before).toBe(2);
  });
});

describe('simulator formats', () => {
  // The six marketplaces' raw wire formats (docs/design.md §13) over the file's ITEMS and FIXED, the AK with a
  // csmarket buy order and 7-day volume pinned too. No adapter is involved: these are the bytes.
  type Row = Record<string, unknown>;
  const PINNED: Record<string, Record<string, FixedPrice>> = {
    ...FIXED,
    [AK]: { default: { ...(FIXED[AK]!.default as Exclude<FixedPrice, string>), bid: '2.10', volume_7d: 40 } },
  };
  const PATHS = {
    csmarket: '/csmarket/api/v2/prices/class_instance/USD.json',
    lisskins: '/lisskins/market_export_json/csgo.json',
    waxpeer: '/waxpeer/v1/prices?game=csgo&minified=0',
    'waxpeer-dopplers': '/waxpeer/v1/prices/dopplers?game=csgo&phase=any',
    whitemarket: '/whitemarket/export/v1/prices/730.json',
    bitskins: '/bitskins/market/insell/730',
    csdeals: '/csdeals/API/IPricing/GetLowestPrices/v1?appid=730',
  } as const;
  type Endpoint = keyof typeof PATHS;
  const ENDPOINTS = Object.keys(PATHS) as Endpoint[];
  const sourceOf = (endpoint: Endpoint): SourceName => (endpoint === 'waxpeer-dopplers' ? 'waxpeer' : endpoint);
  /** Each endpoint's rows, its name field and its price field. */
  const SHAPE: Record<Endpoint, { rows: (body: unknown) => Row[]; name: string; price: string }> = {
    csmarket: { rows: (body) => Object.values((body as { items: Record<string, Row> }).items), name: 'market_hash_name', price: 'price' },
    lisskins: { rows: (body) => body as Row[], name: 'name', price: 'price' },
    waxpeer: { rows: (body) => (body as { items: Row[] }).items, name: 'name', price: 'min' },
    'waxpeer-dopplers': { rows: (body) => (body as { items: Row[] }).items, name: 'name', price: 'price' },
    whitemarket: { rows: (body) => body as Row[], name: 'market_hash_name', price: 'price' },
    bitskins: { rows: (body) => (body as { list: Row[] }).list, name: 'name', price: 'price_min' },
    csdeals: { rows: (body) => (body as { response: { items: Row[] } }).response.items, name: 'marketname', price: 'lowest_price' },
  };

  let market: MarketSimulator;
  beforeAll(() => {
    market = startMarketSimulator({ items: ITEMS, prices: PINNED, now: () => NOW });
  });
  afterAll(() => market.stop());
  afterEach(() => {
    market.setMode('all', 'ok');
    market.setRetryAfter('30');
  });

  const raw = async (simulator: MarketSimulator, endpoint: Endpoint, init?: RequestInit) => {
    const response = await fetch(`${simulator.url}${PATHS[endpoint]}`, init);
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const rowsOf = async (simulator: MarketSimulator, endpoint: Endpoint) => {
    const { status, text } = await raw(simulator, endpoint);
    expect(status).toBe(200);
    return { text, rows: SHAPE[endpoint].rows(JSON.parse(text)) };
  };
  const byName = (rows: Row[], field: string) => {
    const map = new Map<string, Row[]>();
    for (const row of rows) map.set(row[field] as string, [...(map.get(row[field] as string) ?? []), row]);
    return map;
  };
  /** The exact text of a member of every (flat) row holding `"<field>":<name JSON>`, in body order. */
  const members = (text: string, prefix: string, key: string) => {
    const found: string[] = [];
    for (let at = text.indexOf(prefix); at >= 0; at = text.indexOf(prefix, at + 1)) {
      const row = text.slice(text.lastIndexOf('{', at), text.indexOf('}', at) + 1);
      const match = new RegExp(`"${key}":("[^"]*"|[^,}]*)`).exec(row);
      if (match) found.push(match[1]!);
    }
    return found;
  };
  /** The same for a name listed once. */
  const member = (text: string, prefix: string, key: string) => {
    const found = members(text, prefix, key);
    expect(found.length).toBe(1);
    return found[0];
  };
  const mills = (decimal: string) => {
    const [whole, fraction = ''] = decimal.split('.');
    return Number(whole) * 1000 + Number(fraction.padEnd(3, '0'));
  };

  test('csmarket: keyed items, lowest price three decimals, buy orders and 7-day popularity as strings', async () => {
    const { text, rows } = await rowsOf(market, 'csmarket');
    const body = JSON.parse(text);
    expect(body).toMatchObject({ success: true, currency: 'USD', time: BUCKET_START.getTime() / 1000 });
    for (const key of Object.keys(body.items)) expect(key).toMatch(/^[0-9]+_[0-9]+$/);
    const names = byName(rows, 'market_hash_name');
    // The sticker pinned with nothing for sale is not listed; a pinned Doppler's plain name only.
    expect([...names.keys()].sort()).toEqual([KARAMBIT, AK, CASE, AWP].sort());
    const lowest = (name: string) =>
      names
        .get(name)!
        .map((row) => row.price as string)
        .sort((a, b) => mills(a) - mills(b))[0];
    expect([lowest(AK), lowest(AWP), lowest(KARAMBIT), lowest(CASE)]).toEqual(['2.300', '1234.560', '612.000', '0.700']);
    expect(text).toContain('"price":"2.300"');
    for (const row of rows) {
      expect(row.price).toMatch(/^[0-9]+\.[0-9]{3}$/);
      for (const field of ['buy_order', 'avg_price']) if (row[field] !== null) expect(row[field]).toMatch(/^[0-9]+(\.[0-9]{1,3})?$/);
      if (row.popularity_7d !== null) expect(row.popularity_7d).toMatch(/^[0-9]+$/);
    }
    // The pinned bid is the highest buy order (verbatim), the pinned volume the sum of popularity_7d.
    const ak = names.get(AK)!;
    const bids = ak.map((row) => row.buy_order).filter((bid): bid is string => bid !== null);
    expect(bids.sort((a, b) => mills(b) - mills(a))[0]).toBe('2.10');
    expect(text).toContain('"buy_order":"2.10"');
    expect(ak.reduce((sum, row) => sum + Number(row.popularity_7d), 0)).toBe(40);
    // Generated buy orders sit below the name's ask.
    for (const [name, keyed] of names) {
      if (name === AK) continue;
      for (const row of keyed) if (row.buy_order !== null) expect(mills(row.buy_order as string)).toBeLessThan(mills(lowest(name)!));
    }
  });

  test('csmarket: some names under 2 or 3 keys at different prices', async () => {
    const items = Array.from({ length: 600 }, (_, i) => ({ market_hash_name: `Keyed Item ${i} | Test (Field-Tested)`, phases: [] }));
    const keyed = startMarketSimulator({ items, now: () => NOW });
    try {
      const { rows } = await rowsOf(keyed, 'csmarket');
      const counts = [...byName(rows, 'market_hash_name').values()].map((list) => list.length);
      const multi = counts.filter((count) => count > 1).length / counts.length;
      expect(multi).toBeGreaterThan(0.1);
      expect(multi).toBeLessThan(0.3);
      expect(Math.max(...counts)).toBe(3);
      for (const list of byName(rows, 'market_hash_name').values()) expect(new Set(list.map((row) => row.price)).size).toBe(list.length);
    } finally {
      await keyed.stop();
    }
  });

  test('lisskins: a bare array, JSON numbers written as given', async () => {
    const { text, rows } = await rowsOf(market, 'lisskins');
    expect([...byName(rows, 'name').keys()].sort()).toEqual([KARAMBIT, AK, CASE, AWP].sort());
    expect(text).toContain(`{"name":${JSON.stringify(AK)},"price":2.30,"unlocked_price":2.30,"count":1234,`);
    expect(member(text, `"name":${JSON.stringify(AWP)}`, 'price')).toBe('1234.56');
    expect(member(text, `"name":${JSON.stringify(KARAMBIT)}`, 'price')).toBe('612.00');
    expect(member(text, `"name":${JSON.stringify(CASE)}`, 'price')).toBe('0.7');
    for (const row of rows) {
      expect(Object.keys(row)).toEqual(['name', 'price', 'unlocked_price', 'count', 'url']);
      expect(typeof row.price).toBe('number');
      expect(Number.isInteger(row.count)).toBe(true);
      expect(row.url).toStartWith('https://lis-skins.com/market/csgo/');
    }
  });

  test('waxpeer: integer thousandths; the plain endpoint has the Doppler once, the dopplers endpoint every listing by phase', async () => {
    const plain = await rowsOf(market, 'waxpeer');
    expect(JSON.parse(plain.text).success).toBe(true);
    const names = byName(plain.rows, 'name');
    expect([...names.keys()].sort()).toEqual([KARAMBIT, AK, CASE, AWP].sort());
    expect(plain.text).toContain(`{"name":${JSON.stringify(AK)},"count":1234,"min":2300,`);
    expect([AWP, KARAMBIT, CASE].map((name) => names.get(name)![0]!.min)).toEqual([1234560, 612000, 700]);
    for (const row of plain.rows) {
      expect(Number.isInteger(row.min)).toBe(true);
      expect(row).not.toHaveProperty('phase');
    }
    const dopplers = await rowsOf(market, 'waxpeer-dopplers');
    expect(new Set(dopplers.rows.map((row) => row.name))).toEqual(new Set([KARAMBIT]));
    const phases = new Map<string, Row[]>();
    for (const row of dopplers.rows) phases.set(row.phase as string, [...(phases.get(row.phase as string) ?? []), row]);
    const summary = [...phases].map(([phase, listings]) => [
      phase,
      listings.length,
      Math.min(...listings.map((row) => row.price as number)),
      listings[0]!.paint_index,
    ]);
    expect(summary.sort()).toEqual([
      ['Black Pearl', 2, 2100500, 417],
      ['Phase 2', 3, 640100, 419],
      ['Ruby', 1, 3850000, 415],
    ]);
    expect(dopplers.text).toContain('"phase":"Ruby","price":3850000,');
    expect(new Set(dopplers.rows.map((row) => row.item_id)).size).toBe(dopplers.rows.length);
    for (const row of dopplers.rows) {
      expect(row.item_id).toMatch(/^[0-9]+$/);
      expect(Number.isInteger(row.price)).toBe(true);
      if ('float' in row) expect(row.float as number).toBeLessThan(0.07);
    }
  });

  test('whitemarket: prices as strings on even rows and JSON numbers on odd rows, both exact', async () => {
    const { text, rows } = await rowsOf(market, 'whitemarket');
    expect([...byName(rows, 'market_hash_name').keys()].sort()).toEqual([KARAMBIT, AK, CASE, AWP].sort());
    rows.forEach((row, index) => {
      expect(typeof row.price).toBe(index % 2 === 0 ? 'string' : 'number');
    });
    const prices = [AK, AWP, KARAMBIT, CASE].map((name) => member(text, `"market_hash_name":${JSON.stringify(name)}`, 'price'));
    expect(prices.map((price) => price!.replaceAll('"', ''))).toEqual(['2.30', '1234.56', '612.00', '0.7']);
    expect(text).toMatch(/"price":(?:"2\.30"|2\.30),/);
    for (const row of rows) {
      expect(row.market_product_link).toStartWith('https://white.market/item/');
      expect(Number.isInteger(row.market_product_count)).toBe(true);
    }
  });

  test('bitskins: thousandths; Doppler phases only inside the name', async () => {
    const { text, rows } = await rowsOf(market, 'bitskins');
    const names = byName(rows, 'name');
    expect([...names.keys()].sort()).toEqual(
      [
        AK,
        AWP,
        CASE,
        '★ Karambit | Doppler Phase 2 (Factory New)',
        '★ Karambit | Doppler Ruby (Factory New)',
        '★ Karambit | Doppler Black Pearl (Factory New)',
      ].sort(),
    );
    expect(names.has(KARAMBIT)).toBe(false);
    expect(text).toContain(`"name":${JSON.stringify(AK)},"price_min":2300,`);
    expect(names.get('★ Karambit | Doppler Ruby (Factory New)')![0]).toMatchObject({ price_min: 3850000, price_max: 3850000, price_avg: 3850000, quantity: 1 });
    expect(names.get('★ Karambit | Doppler Black Pearl (Factory New)')![0]).toMatchObject({ price_min: 2100500, quantity: 2 });
    for (const row of rows) {
      for (const field of ['skin_id', 'price_min', 'price_max', 'price_avg', 'quantity']) expect(Number.isInteger(row[field])).toBe(true);
      expect(row.price_min as number).toBeLessThanOrEqual(row.price_avg as number);
      expect(row.price_avg as number).toBeLessThanOrEqual(row.price_max as number);
    }
    // The phase name's form, as in the catalog of a Gamma Doppler.
    const gamma = startMarketSimulator({
      items: [{ market_hash_name: '★ Karambit | Gamma Doppler (Factory New)', phases: ['phase-3'] }],
      prices: { '★ Karambit | Gamma Doppler (Factory New)': { 'phase-3': '1000' } },
      now: () => NOW,
    });
    try {
      expect((await rowsOf(gamma, 'bitskins')).rows.map((row) => row.name)).toEqual(['★ Karambit | Gamma Doppler Phase 3 (Factory New)']);
    } finally {
      await gamma.stop();
    }
  });

  test('csdeals: decimal strings written as given', async () => {
    const { text, rows } = await rowsOf(market, 'csdeals');
    expect(JSON.parse(text).success).toBe(true);
    expect(rows.map((row) => [row.marketname, row.lowest_price]).sort()).toEqual(
      [
        [AK, '2.30'],
        [AWP, '1234.56'],
        [KARAMBIT, '612.00'],
        [CASE, '0.7'],
      ].sort(),
    );
    expect(text).toContain(`{"marketname":${JSON.stringify(AK)},"lowest_price":"2.30"}`);
  });

  test('property: a pinned decimal reaches every marketplace exactly in its unit', async () => {
    const random = prng(4242);
    const decimals = Array.from({ length: 80 }, () => {
      const whole = random() < 0.3 ? '0' : String(1 + Math.floor(random() * 99_999));
      const places = Math.floor(random() * 3);
      const fraction = Array.from({ length: places }, () => Math.floor(random() * 10)).join('');
      const text = fraction ? `${whole}.${fraction}` : whole;
      return /[1-9]/.test(text) ? text : '0.01';
    });
    const items = decimals.map((_, i) => ({ market_hash_name: `Exact Item ${i} | Test (Minimal Wear)`, phases: [] }));
    const prices = Object.fromEntries(items.map((item, i) => [item.market_hash_name, { default: decimals[i]! }]));
    const exact = startMarketSimulator({ items, prices, now: () => NOW });
    try {
      const expected = new Map(items.map((item, i) => [item.market_hash_name, decimals[i]!]));
      const texts = Object.fromEntries(
        await Promise.all(ENDPOINTS.filter((e) => e !== 'waxpeer-dopplers').map(async (e) => [e, (await raw(exact, e)).text] as const)),
      );
      for (const [name, decimal] of expected) {
        const json = JSON.stringify(name);
        const thousandths = String(mills(decimal));
        const [whole, fraction = ''] = decimal.split('.');
        // csmarket: the lowest of the name's keys.
        const asks = members(texts.csmarket!, `"market_hash_name":${json}`, 'price').sort((a, b) => mills(a.slice(1, -1)) - mills(b.slice(1, -1)));
        expect(asks[0]).toBe(`"${whole}.${fraction.padEnd(3, '0')}"`);
        expect(member(texts.lisskins!, `"name":${json}`, 'price')).toBe(decimal);
        expect(member(texts.waxpeer!, `"name":${json}`, 'min')).toBe(thousandths);
        expect(member(texts.whitemarket!, `"market_hash_name":${json}`, 'price')!.replaceAll('"', '')).toBe(decimal);
        expect(member(texts.bitskins!, `"name":${json}`, 'price_min')).toBe(thousandths);
        expect(member(texts.csdeals!, `"marketname":${json}`, 'lowest_price')).toBe(`"${decimal}"`);
      }
    } finally {
      await exact.stop();
    }
  });

  test('a pin per source: an outlier in one venue, nothing in another; a three-decimal ask where the unit allows', async () => {
    const name = 'Override Item | Test (Field-Tested)';
    const pinned = startMarketSimulator({
      items: [{ market_hash_name: name, phases: [] }],
      prices: { [name]: { default: { price: '10.00', sources: { csmarket: '10.125', waxpeer: '35.5', csdeals: null, steam: '11.00' } } } },
      now: () => NOW,
    });
    try {
      expect((await rowsOf(pinned, 'csmarket')).rows.map((row) => row.price).sort((a, b) => mills(a as string) - mills(b as string))[0]).toBe('10.125');
      expect((await rowsOf(pinned, 'waxpeer')).rows[0]!.min).toBe(35500);
      expect((await rowsOf(pinned, 'csdeals')).rows).toEqual([]);
      expect((await rowsOf(pinned, 'lisskins')).text).toContain('"price":10.00,');
      const steam = await (await fetch(`${pinned.url}/steam/market/priceoverview/?appid=730&currency=1&market_hash_name=${encodeURIComponent(name)}`)).json();
      expect(steam).toMatchObject({ lowest_price: '$11.00' });
      expect(() =>
        startMarketSimulator({
          items: [{ market_hash_name: name, phases: [] }],
          prices: { [name]: { default: { price: '1', sources: { skinport: '1.005' } } } },
        }),
      ).toThrow(/two decimals/);
    } finally {
      await pinned.stop();
    }
  });

  describe('over many generated items', () => {
    const items: SimulatorItem[] = Array.from({ length: 3000 }, (_, i) => ({ market_hash_name: `Generated Item ${i} | Test (Field-Tested)`, phases: [] }));
    let generated: MarketSimulator;
    let now = NOW.getTime();
    beforeAll(() => {
      generated = startMarketSimulator({ items, now: () => new Date(now) });
    });
    afterAll(() => generated.stop());
    const prices = async (simulator: MarketSimulator, endpoint: Endpoint) => {
      const { rows } = await rowsOf(simulator, endpoint);
      const { name, price } = SHAPE[endpoint];
      const result = new Map<string, number>();
      for (const row of rows) {
        const usd = endpoint === 'waxpeer' || endpoint === 'bitskins' ? (row[price] as number) / 1000 : Number(row[price]);
        result.set(row[name] as string, Math.min(usd, result.get(row[name] as string) ?? Infinity));
      }
      return result;
    };

    test('each marketplace leaves out its documented share of items', async () => {
      for (const source of MARKETPLACE_SOURCES) {
        const listed = (await prices(generated, source)).size / items.length;
        expect(Math.abs(1 - listed - ABSENT_SHARE[source])).toBeLessThan(0.035);
      }
    });

    test('sources roughly agree: each at its level, within a few percent item by item', async () => {
      const reference = await prices(generated, 'csdeals');
      const levels: Record<MarketplaceSource, number> = { csmarket: 0.97, lisskins: 0.91, waxpeer: 0.95, whitemarket: 0.94, bitskins: 0.98, csdeals: 1.02 };
      for (const source of MARKETPLACE_SOURCES) {
        const ratios: number[] = [];
        for (const [name, usd] of await prices(generated, source)) {
          const other = reference.get(name);
          if (other !== undefined && other >= 1 && usd >= 1) ratios.push(usd / other / (levels[source] / levels.csdeals));
        }
        ratios.sort((a, b) => a - b);
        expect(ratios.length).toBeGreaterThan(300);
        expect(Math.abs(ratios[Math.floor(ratios.length / 2)]! - 1)).toBeLessThan(0.02);
        expect(ratios[Math.floor(ratios.length * 0.02)]!).toBeGreaterThan(0.9);
        expect(ratios[Math.floor(ratios.length * 0.98)]!).toBeLessThan(1.1);
      }
    });

    test('about one row in ten changes per 30 s bucket; bodies are deterministic whatever the history', async () => {
      const before = (await raw(generated, 'waxpeer')).text;
      const beforeRows = new Map((JSON.parse(before).items as Row[]).map((row) => [row.name, JSON.stringify(row)]));
      now += 30_000;
      const after = (await raw(generated, 'waxpeer')).text;
      const changed = (JSON.parse(after).items as Row[]).filter((row) => beforeRows.get(row.name as string) !== JSON.stringify(row)).length / beforeRows.size;
      expect(changed).toBeGreaterThan(0.06);
      expect(changed).toBeLessThan(0.14);
      // Served from the bucket's cache: the same bytes until the bucket ends.
      expect((await raw(generated, 'waxpeer')).text).toBe(after);
      // A simulator that walked bucket by bucket (and one that jumped far ahead) answers like a fresh one.
      for (const step of [1, 1, 7, 100]) {
        now += step * 30_000;
        const fresh = startMarketSimulator({ items, now: () => new Date(now) });
        try {
          for (const endpoint of ['csmarket', 'lisskins', 'waxpeer', 'csdeals'] as const)
            expect((await raw(generated, endpoint)).text).toBe((await raw(fresh, endpoint)).text);
        } finally {
          await fresh.stop();
        }
      }
    });
  });

  describe('modes at the HTTP level', () => {
    test('every source is switchable, over HTTP too; a waxpeer mode applies to both of its endpoints', async () => {
      const state = (await (await fetch(`${market.url}/_control`)).json()) as { modes: Record<string, string> };
      expect(Object.keys(state.modes).sort()).toEqual([...SOURCE_NAMES, 'fx'].sort());
      expect(SIMULATOR_MODES).toContain('wrong_types');
      expect((await fetch(`${market.url}/_control/csmarket/fail`, { method: 'POST' })).status).toBe(200);
      expect(market.mode('csmarket')).toBe('fail');
      expect((await raw(market, 'csmarket')).status).toBe(500);
      expect((await fetch(`${market.url}/_control/whitemarket/wrong_types`, { method: 'POST' })).status).toBe(200);
      expect(market.mode('whitemarket')).toBe('wrong_types');
      const before = market.requestCount('waxpeer');
      market.setMode('waxpeer', 'fail');
      expect((await raw(market, 'waxpeer')).status).toBe(500);
      expect((await raw(market, 'waxpeer-dopplers')).status).toBe(500);
      expect(market.requestCount('waxpeer') - before).toBe(2);
      expect(market.lastRequest('waxpeer')?.url).toContain('/waxpeer/v1/prices/dopplers?game=csgo&phase=any');
    });

    test('bodies go gzipped to clients that accept gzip, plain to the others', async () => {
      for (const endpoint of ENDPOINTS) {
        const zipped = await raw(market, endpoint, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
        const plain = await raw(market, endpoint, { headers: { 'accept-encoding': 'identity' } });
        expect(zipped.headers.get('content-encoding')).toBe('gzip');
        expect(plain.headers.get('content-encoding')).toBeNull();
        expect(plain.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(zipped.text).toBe(plain.text);
      }
    });

    test('bad requests: waxpeer without game=csgo, csdeals without appid=730, unknown paths', async () => {
      expect((await fetch(`${market.url}/waxpeer/v1/prices`)).status).toBe(400);
      expect((await fetch(`${market.url}/waxpeer/v1/prices/dopplers?game=csgo&phase=Ruby`)).status).toBe(400);
      expect((await fetch(`${market.url}/csdeals/API/IPricing/GetLowestPrices/v1`)).status).toBe(400);
      expect((await fetch(`${market.url}/csmarket/api/v2/prices/class_instance/RUB.json`)).status).toBe(404);
    });

    for (const endpoint of ENDPOINTS) {
      const source = sourceOf(endpoint);
      test(`${endpoint}: fail → 500, rate_limit → 429 with Retry-After (or none), malformed → unparseable JSON`, async () => {
        market.setMode(source, 'fail');
        expect((await raw(market, endpoint)).status).toBe(500);
        market.setMode(source, 'rate_limit');
        const limited = await raw(market, endpoint);
        expect(limited.status).toBe(429);
        expect(limited.headers.get('retry-after')).toBe('30');
        JSON.parse(limited.text);
        market.setRetryAfter(null);
        expect((await raw(market, endpoint)).headers.get('retry-after')).toBeNull();
        market.setMode(source, 'malformed');
        const malformed = await raw(market, endpoint);
        expect(malformed.status).toBe(200);
        expect(() => JSON.parse(malformed.text)).toThrow(SyntaxError);
      });

      test(`${endpoint}: stall → no answer until the client gives up`, async () => {
        market.setMode(source, 'stall');
        const started = performance.now();
        const error = await failure(fetch(`${market.url}${PATHS[endpoint]}`, { signal: AbortSignal.timeout(200) }));
        expect((error as Error).name).toBe('TimeoutError');
        expect(performance.now() - started).toBeGreaterThanOrEqual(150);
        market.setMode(source, 'ok');
        expect((await raw(market, endpoint)).status).toBe(200);
      });
    }

    // Twelve pinned plain items and a Doppler with three phases of four listings: enough rows for every kind.
    const PLAIN = Array.from({ length: 12 }, (_, i) => `Partial Item ${i} | Test (Field-Tested)`);
    const DOPPLER = '★ Bayonet | Doppler (Factory New)';
    let broken: MarketSimulator;
    beforeAll(() => {
      broken = startMarketSimulator({
        items: [...PLAIN.map((name) => ({ market_hash_name: name, phases: [] })), { market_hash_name: DOPPLER, phases: ['phase-1', 'ruby', 'sapphire'] }],
        prices: {
          ...Object.fromEntries(PLAIN.map((name, i) => [name, { default: { price: `${i + 1}.25`, quantity: 2 } }])),
          [DOPPLER]: Object.fromEntries(['phase-1', 'ruby', 'sapphire'].map((phase, i) => [phase, { price: `${500 + i}.50`, quantity: 4 }])),
        },
        now: () => NOW,
      });
    });
    afterAll(() => broken.stop());

    for (const endpoint of ENDPOINTS) {
      const source = sourceOf(endpoint);
      const { name, price } = SHAPE[endpoint];
      test(`${endpoint}: partial → every third row broken in turn (no name, price of a wrong type, negative price)`, async () => {
        broken.setMode(source, 'partial');
        try {
          const { rows } = await rowsOf(broken, endpoint);
          expect(rows.length).toBeGreaterThanOrEqual(8);
          rows.forEach((row, index) => {
            const value = row[price];
            const kind = index % 3 === 1 ? Math.floor(index / 3) % 3 : null;
            if (kind === 0) expect(row).not.toHaveProperty(name);
            else expect(typeof row[name]).toBe('string');
            if (kind === 1) expect(value).toEqual({ amount: expect.anything() });
            else if (kind === 2) expect(typeof value === 'string' ? value.startsWith('-') : (value as number) < 0).toBe(true);
            else expect(typeof value === 'string' ? /^[0-9]+(\.[0-9]+)?$/.test(value) : (value as number) > 0).toBe(true);
          });
          expect(rows.filter((row) => !(name in row)).length).toBeGreaterThan(0);
        } finally {
          broken.setMode(source, 'ok');
        }
      });

      test(`${endpoint}: wrong_types → every row's price an object or a boolean, counts as strings`, async () => {
        broken.setMode(source, 'wrong_types');
        try {
          const { rows } = await rowsOf(broken, endpoint);
          expect(rows.length).toBeGreaterThanOrEqual(8);
          rows.forEach((row, index) => {
            expect(typeof row[name]).toBe('string');
            expect(row[price]).toEqual(index % 2 === 0 ? { amount: expect.anything() } : true);
            for (const count of ['count', 'quantity', 'market_product_count']) if (count in row) expect(typeof row[count]).toBe('string');
          });
        } finally {
          broken.setMode(source, 'ok');
        }
      });
    }
  });
});
