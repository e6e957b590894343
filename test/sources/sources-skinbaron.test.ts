import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import path from 'node:path';
import { parseEcbRates } from '../../shared/fx/ecb.ts';
import type { FxRates } from '../../shared/fx/repository.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { parseSkinbaronRow } from '../../shared/sources/skinbaron.ts';
import { type FetchContext, type SourceObservation, SourceRateLimitedError, SourceUnavailableError } from '../../shared/sources/types.ts';
import { parseJsonExact } from '../../shared/sources/upstream.ts';
import { type MarketSimulator, type SimulatorItem, startMarketSimulator } from '../fakes/simulator/server.ts';
import { capturingLog, failure } from '../helpers.ts';

/**
 * Skinbaron (docs/design.md §14), the tenth source: EUR prices converted to USD at a known rate set, exactly
 * and half-even to cents, the EUR text kept as `original`; only the `default` version; its key sent
 * in the POST body and never logged. Fed a recorded body of the real format
 * (test/fixtures/upstream/skinbaron-extended-price-list.json) over real HTTP, hostile rows, and the
 * market simulator's failure modes.
 */

const silent = createLogger({ level: 'silent', name: 'test' });
const NOW = new Date('2026-03-01T12:00:10.000Z');
const API_KEY = 'skinbaron-secret-key-0123456789abcdef';

/** A known rate set: 1 EUR = 1.0834 USD. */
const RATES: FxRates = {
  as_of: '2026-02-27',
  rates: new Map([
    ['EUR', '1'],
    ['USD', '1.0834'],
    ['GBP', '0.84290'],
  ]),
  fetched_at: NOW,
};

const AK = 'AK-47 | Redline (Field-Tested)';
const AWP = 'StatTrak™ AWP | Asiimov (Battle-Scarred)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const CASE = 'Snakebite Case';
const STICKER = 'Sticker | Crown (Foil)';
const GLOCK = 'Glock-18 | Water Elemental (Field-Tested)';
const UNKNOWN = 'Sticker | Retired Team (Holo) | Nowhere 2099';

const FIXTURE = path.join(import.meta.dir, '..', 'fixtures', 'upstream', 'skinbaron-extended-price-list.json');

type Seen = { method: string; path: string; headers: Record<string, string>; body: string };
const seen: Seen[] = [];
let override: (() => Response) | undefined;
let fixtureText: string;
let server: ReturnType<typeof Bun.serve>;
let baseUrl: string;

beforeAll(async () => {
  fixtureText = await Bun.file(FIXTURE).text();
  server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      seen.push({ method: request.method, path: url.pathname, headers: Object.fromEntries(request.headers), body: await request.text() });
      if (override) return override();
      if (url.pathname !== '/skinbaron/GetExtendedPriceList') return Response.json({ message: 'not found' }, { status: 404 });
      return new Response(fixtureText, { headers: { 'content-type': 'application/json' } });
    },
  });
  baseUrl = `http://127.0.0.1:${server.port}/skinbaron`;
});
afterAll(() => server.stop(true));
afterEach(() => {
  override = undefined;
  seen.length = 0;
});

function context(extra: Partial<FetchContext> = {}): FetchContext {
  return { baseUrl, log: silent, timeoutMs: 5_000, acquire: async () => {}, names: [], now: () => NOW, apiKey: API_KEY, rates: RATES, ...extra };
}

const fetchSkinbaron = (extra: Partial<FetchContext> = {}) => ADAPTERS.skinbaron.fetchSnapshot(context(extra));

function observation(name: string, price: string, eur: string): SourceObservation {
  return {
    market_hash_name: name,
    version: 'default',
    price,
    median_price: null,
    bid: null,
    volume_7d: null,
    quantity: null,
    source_time: NOW,
    original: { price: eur, currency: 'EUR' },
  };
}

const byName = (observations: SourceObservation[]) => [...observations].sort((a, b) => a.market_hash_name.localeCompare(b.market_hash_name));

describe('recorded body', () => {
  test('EUR × rate(USD), exact and half-even to cents; the EUR text kept as original; phase rows left out', async () => {
    const result = await fetchSkinbaron();
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1 });
    expect(byName(result.observations)).toEqual(
      byName([
        // 27.95 × 1.0834 = 30.281030
        observation(AK, '30.28', '27.95'),
        // 12.5 × 1.0834 = 13.54250 (the 2 decides: down)
        observation(AWP, '13.54', '12.5'),
        // 612 × 1.0834 = 663.0408; its `phase2` and `ruby` rows are not the default version
        observation(KARAMBIT, '663.04', '612'),
        // 0.035 × 1.0834 = 0.037919
        observation(CASE, '0.04', '0.035'),
        // 0.41 × 1.0834 = 0.444194
        observation(STICKER, '0.44', '0.41'),
        // 7 × 1.0834 = 7.5838
        observation(GLOCK, '7.58', '7'),
        // A name the catalog lacks is still an observation: it is counted at ingest, never fatal.
        observation(UNKNOWN, '2.16', '1.99'),
      ]),
    );
  });

  test('one POST to /GetExtendedPriceList with {apikey, appId: 730} and x-requested-with; the key never logged', async () => {
    const { log, lines } = capturingLog();
    await fetchSkinbaron({ log });
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request).toMatchObject({ method: 'POST', path: '/skinbaron/GetExtendedPriceList' });
    expect(request!.headers['x-requested-with']).toBe('XMLHttpRequest');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request!.body)).toEqual({ apikey: API_KEY, appId: 730 });
    expect(lines.some((line) => line.includes('upstream response'))).toBe(true);
    expect(lines.join('')).not.toContain(API_KEY);
  });

  test('every adapter setting: 1 request per minute, 300 s, whole market, EUR, needs SOURCE_SKINBARON_KEY', () => {
    expect(ADAPTERS.skinbaron).toMatchObject({
      name: 'skinbaron',
      defaultBudget: { requests: 1, windowSeconds: 60 },
      defaultIntervalSeconds: 300,
      needsNames: false,
      listsWholeMarket: true,
      priceCurrency: 'EUR',
      requiredKey: 'SOURCE_SKINBARON_KEY',
    });
  });
});

describe('conversion', () => {
  const row = (lowestPrice: string, rates: FxRates = RATES, extra = '') =>
    parseSkinbaronRow(parseJsonExact(`{"marketHashName":"X","lowestPrice":${lowestPrice}${extra}}`), NOW, rates);
  const priceOf = (outcome: ReturnType<typeof parseSkinbaronRow>) => (typeof outcome === 'string' ? outcome : outcome.price);
  const ratesWithUsd = (usd: string): FxRates => ({
    ...RATES,
    rates: new Map([
      ['EUR', '1'],
      ['USD', usd],
    ]),
  });

  test('ties round half to even, once, from the exact product', () => {
    const even = ratesWithUsd('1.5');
    expect(priceOf(row('0.03', even))).toBe('0.04'); // 0.045
    expect(priceOf(row('0.05', even))).toBe('0.08'); // 0.075
    expect(priceOf(row('0.01', even))).toBe('0.02'); // 0.015
    expect(priceOf(row('1.23', even))).toBe('1.84'); // 1.845
    // Never through a float: 0.1 × 3 is 0.30000000000000004 in binary, exactly 0.3 here.
    expect(priceOf(row('0.1', ratesWithUsd('3')))).toBe('0.30');
    expect(priceOf(row('12345678.91', ratesWithUsd('0.000001')))).toBe('12.35');
  });

  test('the original is the EUR text as written (exponents expanded), whatever the conversion', () => {
    expect(row('12.50')).toMatchObject({ price: '13.54', original: { price: '12.50', currency: 'EUR' } });
    expect(row('"12.50"')).toMatchObject({ price: '13.54', original: { price: '12.50', currency: 'EUR' } });
    expect(row('1.5e1')).toMatchObject({ price: '16.25', original: { price: '15', currency: 'EUR' } });
  });

  test('absurd or vanishing prices are skipped: above MAX_PRICE_USD once converted, or under half a cent', () => {
    expect(priceOf(row('9000000'))).toBe('9750600.00');
    expect(row('9300000')).toBe('malformed'); // 10 075 620 USD
    expect(row('0.001')).toBe('malformed'); // 0.0010834 → 0.00
  });

  test('wrong types, bad names and undocumented doppler classes', () => {
    for (const bad of ['0', '-1', '"abc"', '{"amount":1}', 'true', '[1]', '"1,50"', '"-2"']) expect([bad, row(bad)]).toEqual([bad, 'malformed']);
    expect(row('null')).toBe('unpriced');
    expect(row('5', RATES, ',"dopplerClassName":"sapphire"')).toBe('unpriced');
    expect(row('5', RATES, ',"dopplerClassName":""')).toMatchObject({ price: '5.42' });
    expect(row('5', RATES, ',"dopplerClassName":7')).toBe('malformed');
    for (const body of [
      '{"lowestPrice":1}',
      '{"marketHashName":null,"lowestPrice":1}',
      '{"marketHashName":"","lowestPrice":1}',
      '{"market_hash_name":"X","lowestPrice":1}',
      '"X"',
      'null',
    ]) {
      expect([body, parseSkinbaronRow(parseJsonExact(body), NOW, RATES)]).toEqual([body, 'malformed']);
    }
  });

  test('hostile rows in a body are counted, never thrown', async () => {
    override = () =>
      new Response(
        JSON.stringify([
          { marketHashName: 'Good', lowestPrice: 1 },
          { marketHashName: 'No Price', lowestPrice: null },
          { marketHashName: 'Bad Price', lowestPrice: 'x' },
          { lowestPrice: 1 },
          { marketHashName: 'Absurd', lowestPrice: 1e12 },
          { marketHashName: 'Phase', lowestPrice: 2, dopplerClassName: 'phase4' },
        ]),
      );
    const { log, lines } = capturingLog();
    const result = await fetchSkinbaron({ log });
    expect(result.observations.map((o) => [o.market_hash_name, o.price])).toEqual([['Good', '1.08']]);
    expect(result.skipped).toBe(3);
    expect(lines.map((line) => JSON.parse(line) as { level: number }).find((line) => line.level === 40)).toMatchObject({ source: 'skinbaron', skipped: 3 });
  });
});

describe('preconditions and failures', () => {
  test('no key or no rates: refused before any request (EUR is never stored as USD)', async () => {
    const noKey = await failure(fetchSkinbaron({ apiKey: undefined }));
    expect(noKey).toBeInstanceOf(SourceUnavailableError);
    expect((noKey as Error).message).toContain('SOURCE_SKINBARON_KEY');
    const noRates = await failure(fetchSkinbaron({ rates: undefined }));
    expect(noRates).toBeInstanceOf(SourceUnavailableError);
    expect((noRates as Error).message).toContain('no exchange rates');
    const noUsd = await failure(fetchSkinbaron({ rates: { ...RATES, rates: new Map([['EUR', '1']]) } }));
    expect(noUsd).toBeInstanceOf(SourceUnavailableError);
    expect(seen).toEqual([]);
  });

  test('429 → rate-limited (Retry-After, else a minute); 5xx, truncated JSON, a non-array → unavailable', async () => {
    override = () => new Response('{"message":"Too many requests"}', { status: 429, headers: { 'retry-after': '12' } });
    expect(((await failure(fetchSkinbaron())) as SourceRateLimitedError).retryAfterMs).toBe(12_000);
    override = () => new Response('{}', { status: 429 });
    expect(((await failure(fetchSkinbaron())) as SourceRateLimitedError).retryAfterMs).toBe(60_000);
    for (const [response, message] of [
      [() => new Response('oops', { status: 502 }), 'HTTP 502'],
      [() => new Response('[{"marketHashName":"AK-47 | Redline (Field-Tested)","lowestPrice":27.9'), 'unparseable'],
      [() => new Response('{"map":[]}'), 'not an array'],
    ] as const) {
      override = response;
      const error = await failure(fetchSkinbaron());
      expect(error).toBeInstanceOf(SourceUnavailableError);
      expect((error as Error).message).toContain(message);
      expect((error as Error).message).not.toContain(API_KEY);
    }
  });

  test('the key is absent from errors and their logs when the upstream cannot be reached', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    const url = `http://127.0.0.1:${closed.port}/skinbaron`;
    closed.stop(true);
    const { log, lines } = capturingLog();
    const error = await failure(fetchSkinbaron({ baseUrl: url, log }));
    expect(error).toBeInstanceOf(SourceUnavailableError);
    expect((error as Error).message).not.toContain(API_KEY);
    expect(JSON.stringify(error)).not.toContain(API_KEY);
    expect(lines.join('')).not.toContain(API_KEY);
  });
});

describe('market simulator', () => {
  const items: SimulatorItem[] = [
    ...Array.from({ length: 2000 }, (_, i) => ({ market_hash_name: `Generated Item ${i} | Test (Field-Tested)`, phases: [] })),
    { market_hash_name: KARAMBIT, phases: ['phase-2', 'ruby'] },
  ];
  let sim: MarketSimulator;
  let simulatorRates: FxRates;
  const post = (init: { headers?: Record<string, string>; body?: string; method?: string } = {}) =>
    fetch(`${sim.url}/skinbaron/GetExtendedPriceList`, {
      method: init.method ?? 'POST',
      headers: init.headers ?? { 'x-requested-with': 'XMLHttpRequest', 'content-type': 'application/json' },
      body: init.method === 'GET' ? undefined : (init.body ?? JSON.stringify({ apikey: 'any', appId: 730 })),
    });
  beforeAll(async () => {
    sim = startMarketSimulator({
      items,
      now: () => NOW,
      prices: { [AK]: { default: { price: '2.30', sources: { skinbaron: '2.15' } } } },
    });
    const day = parseEcbRates(await (await fetch(`${sim.url}/fx/stats/eurofxref/eurofxref-daily.xml`)).text(), NOW).days[0]!;
    simulatorRates = { as_of: day.date, rates: new Map([['EUR', '1'], ...day.rates]), fetched_at: NOW };
  });
  afterAll(() => sim.stop());
  afterEach(() => sim.setMode('all', 'ok'));

  test('the request as skinbaron wants it: POST, the header, any non-empty key, appId 730', async () => {
    expect((await post()).status).toBe(200);
    expect((await post({ method: 'GET' })).status).toBe(404);
    expect((await post({ headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await post({ body: JSON.stringify({ appId: 730 }) })).status).toBe(401);
    expect((await post({ body: JSON.stringify({ apikey: '', appId: 730 }) })).status).toBe(401);
    expect((await post({ body: JSON.stringify({ apikey: 'k', appId: 570 }) })).status).toBe(400);
    expect((await post({ body: 'not json' })).status).toBe(400);
  });

  test('EUR at the day’s served rate: converted back, prices roughly agree with csdeals; Doppler phases carry a class', async () => {
    const result = await ADAPTERS.skinbaron.fetchSnapshot({ ...context({ rates: simulatorRates }), baseUrl: `${sim.url}/skinbaron` });
    expect(result.skipped).toBe(0);
    const body = (await (await post()).json()) as { marketHashName: string; lowestPrice: number; dopplerClassName: string | null }[];
    const classes = body.filter((row) => row.marketHashName === KARAMBIT).map((row) => row.dopplerClassName);
    if (classes.length > 0) expect(classes[0]).toBeNull();
    for (const value of classes.slice(1)) expect(['phase2', 'ruby']).toContain(value!);
    expect(result.observations.every((o) => o.version === 'default' && o.original?.currency === 'EUR')).toBe(true);
    // Listed share: 40 % absent.
    const generated = result.observations.filter((o) => o.market_hash_name.startsWith('Generated'));
    expect(Math.abs(generated.length / 2000 - 0.6)).toBeLessThan(0.05);
    const csdeals = await ADAPTERS.csdeals.fetchSnapshot({ ...context(), baseUrl: `${sim.url}/csdeals` });
    const reference = new Map(csdeals.observations.map((o) => [o.market_hash_name, Number(o.price)]));
    const ratios = generated
      .map((o) => [Number(o.price), reference.get(o.market_hash_name)] as const)
      .filter(([usd, other]) => other !== undefined && other >= 1 && usd >= 1)
      .map(([usd, other]) => usd / other! / (0.96 / 1.02))
      .sort((a, b) => a - b);
    expect(ratios.length).toBeGreaterThan(200);
    expect(Math.abs(ratios[Math.floor(ratios.length / 2)]! - 1)).toBeLessThan(0.02);
  });

  test('a skinbaron pin is EUR, written verbatim', async () => {
    const pinned = startMarketSimulator({
      items: [{ market_hash_name: AK, phases: [] }],
      now: () => NOW,
      prices: { [AK]: { default: { price: '2.30', sources: { skinbaron: '2.15' } } } },
    });
    try {
      const text = await (
        await fetch(`${pinned.url}/skinbaron/GetExtendedPriceList`, {
          method: 'POST',
          headers: { 'x-requested-with': 'XMLHttpRequest' },
          body: '{"apikey":"k","appId":730}',
        })
      ).text();
      expect(text).toContain('"lowestPrice":2.15,');
    } finally {
      await pinned.stop();
    }
  });

  test('partial: every third row broken (no name, a wrong type, a negative price) is skipped and counted', async () => {
    const ok = await ADAPTERS.skinbaron.fetchSnapshot({ ...context({ rates: simulatorRates }), baseUrl: `${sim.url}/skinbaron` });
    sim.setMode('skinbaron', 'partial');
    const partial = await ADAPTERS.skinbaron.fetchSnapshot({ ...context({ rates: simulatorRates }), baseUrl: `${sim.url}/skinbaron` });
    expect(partial.skipped).toBeGreaterThan(0);
    expect(partial.observations.length + partial.skipped).toBeGreaterThanOrEqual(ok.observations.length);
    expect(partial.observations.length).toBeLessThan(ok.observations.length);
  });

  test('every other mode: fail, malformed, rate_limit, stall, wrong_types', async () => {
    const run = (extra: Partial<FetchContext> = {}) =>
      ADAPTERS.skinbaron.fetchSnapshot({ ...context({ rates: simulatorRates, ...extra }), baseUrl: `${sim.url}/skinbaron` });
    sim.setMode('skinbaron', 'fail');
    expect(((await failure(run())) as Error).message).toContain('HTTP 500');
    sim.setMode('skinbaron', 'malformed');
    expect(((await failure(run())) as Error).message).toContain('unparseable');
    sim.setMode('skinbaron', 'rate_limit');
    expect(await failure(run())).toBeInstanceOf(SourceRateLimitedError);
    sim.setMode('skinbaron', 'stall');
    expect(((await failure(run({ timeoutMs: 200 }))) as Error).message).toContain('timed out after 200 ms');
    sim.setMode('skinbaron', 'wrong_types');
    const wrong = await run();
    expect(wrong.observations).toEqual([]);
    expect(wrong.skipped).toBeGreaterThan(0);
  });
});
