import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import path from 'node:path';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { itemImages } from '../../shared/media/images/item-images.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createRequestRedis, type Redis } from '../../shared/platform/redis.ts';
import { createRequestBudget, requestBudgetKeys, sourceBudgetPrefix } from '../../shared/sources/budget.ts';
import { redisSourceCursor, sourceCursorKey } from '../../shared/sources/cursor.ts';
import { namesToRead, PriceDemand, priceDemandKey, SALES_TURN_INTERVAL_MS, salesTurnsKey } from '../../shared/sources/demand.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { sourceSettings } from '../../shared/sources/settings.ts';
import { parseSteamOverviewSales, parseSteamSearchRow, STEAM_SEARCH_PAGE_SIZE } from '../../shared/sources/steam.ts';
import { type FetchContext, type SourceCursor, SourceRateLimitedError, SourceUnavailableError } from '../../shared/sources/types.ts';
import { JsonNumber, parseJsonExact } from '../../shared/sources/upstream.ts';
import { runSourceIngest } from '../../workers/ingest/run.ts';
import { type MarketSimulator, type SimulatorItem, startMarketSimulator } from '../fakes/simulator/server.ts';
import { eventually, failure, scratchTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';

/**
 * Steam in bulk (docs/design.md §19, docs/decisions.md "Steam in bulk"): the search/render pages read on a
 * recorded body of the real format and on hostile ones, the cursor continued and wrapped over runs,
 * the request budget kept, priceoverview producing 24 h sales only, the icons recorded, and which
 * names priceoverview reads (the demand record).
 */

const silent = createLogger({ level: 'silent', name: 'test' });
const NOW = new Date('2026-03-01T12:00:10.000Z');
const FIXTURE = path.join(import.meta.dir, '..', 'fixtures', 'upstream', 'steam-search-render-730.json');

const AK = 'AK-47 | Redline (Field-Tested)';
const AWP = 'StatTrak™ AWP | Asiimov (Battle-Scarred)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const GRAFFITI = 'Sealed Graffiti | Recoil Galil AR (Desert Amber)';
const CASE = 'Snakebite Case';
const STICKER = 'Sticker | Crown (Foil)';

/** An in-memory resume position (the Redis one is tested below). */
function memoryCursor(start: number | null = null): SourceCursor & { writes: number[] } {
  let position = start;
  const writes: number[] = [];
  return {
    writes,
    read: async () => position,
    write: async (value) => {
      position = value;
      writes.push(value);
    },
  };
}

function context(baseUrl: string, overrides: Partial<FetchContext> = {}): FetchContext {
  return { baseUrl, log: silent, timeoutMs: 5_000, acquire: async () => {}, names: [], now: () => NOW, ...overrides };
}

// ---- a recorded body and hostile ones, over real HTTP ------------------------------------------

let fixtureText: string;
/** Per `start`, what the fake Steam answers (default: the recorded page). */
let answer: (start: number) => Response;
const seen: string[] = [];
let server: ReturnType<typeof Bun.serve>;
let fakeUrl: string;
const json = (text: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(text, { status, headers: { 'content-type': 'application/json', ...headers } });

beforeAll(async () => {
  fixtureText = await Bun.file(FIXTURE).text();
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch(request) {
      const url = new URL(request.url);
      seen.push(`${url.pathname}${url.search}`);
      if (url.pathname === '/market/search/render/') return answer(Number(url.searchParams.get('start')));
      if (url.pathname === '/market/priceoverview/') return overview(url.searchParams.get('market_hash_name') ?? '');
      return new Response('not found', { status: 404 });
    },
  });
  fakeUrl = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));
afterEach(() => {
  answer = () => json(fixtureText);
  seen.length = 0;
});
answer = () => json(fixtureText);

/** priceoverview bodies of the real format, by name. */
function overview(name: string): Response {
  if (name === AK) return json('{"success":true,"lowest_price":"$31.94","volume":"1,234","median_price":"$32.10"}');
  if (name === CASE) return json('{"success":true,"lowest_price":"$0.70"}');
  if (name === AWP) return json('{"success":true,"lowest_price":"$1,234.56","volume":"0","median_price":"$1,300.00"}');
  if (name === 'Throttled') return json('null', 429);
  if (name === 'Odd') return json('{"success":true,"volume":12,"median_price":"$1.00"}');
  return json('{"success":false}');
}

/** A page of `rows` (raw JSON texts) at `start` out of `total`. */
const page = (start: number, total: number, rows: string[]) =>
  json(
    `{"success":true,"start":${start},"pagesize":100,"total_count":${total},"searchdata":{"query":"","search_descriptions":false,"total_count":${total},"pagesize":100,"prefix":"searchResults","class_prefix":"market"},"results":[${rows.join(',')}]}`,
  );
const row = (name: string, cents: string, listings: string, icon = `"iconOf_${name.length}"`) =>
  `{"name":${JSON.stringify(name)},"hash_name":${JSON.stringify(name)},"sell_listings":${listings},"sell_price":${cents},"sell_price_text":"$1.00","app_name":"Counter-Strike 2","asset_description":{"appid":730,"icon_url":${icon},"market_hash_name":${JSON.stringify(name)}},"sale_price_text":"$0.96"}`;

describe('search/render rows', () => {
  test('the recorded page: cents → exact decimals, listings as quantity, icons, unpriced rows neither priced nor skipped', async () => {
    const cursor = memoryCursor(1200);
    const result = await ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 1, cursor }));
    expect(seen).toEqual(['/market/search/render/?appid=730&norender=1&count=100&start=1200&sort_column=name&sort_dir=asc&currency=1']);
    expect(result).toMatchObject({ skipped: 0, unknown: 0, requests: 1, sales: [] });
    const base = { version: 'default', median_price: null, bid: null, volume_7d: null, source_time: NOW };
    expect(result.observations).toEqual([
      { ...base, market_hash_name: AK, price: '31.94', quantity: 1043 },
      { ...base, market_hash_name: AWP, price: '1234.56', quantity: 27 },
      { ...base, market_hash_name: KARAMBIT, price: '612.00', quantity: 9 },
      { ...base, market_hash_name: GRAFFITI, price: '0.03', quantity: 6 },
      { ...base, market_hash_name: CASE, price: '0.70', quantity: 25000 },
    ]);
    // Every row's icon, the unlisted sticker's too (an image is not a price).
    expect(result.icons!.map((icon) => icon.market_hash_name)).toEqual([AK, AWP, KARAMBIT, GRAFFITI, CASE, STICKER]);
    expect(result.icons![0]!.icon_url).toStartWith(
      '-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO4YmlhxYQknCRvCo04DEVlxkKgpot7HxfDhjxszJemkV',
    );
    // The page held 6 of 35 918 rows: the next run starts after them.
    expect(cursor.writes).toEqual([1206]);
  });

  test('wrong types, missing fields and absurd values are malformed rows; an odd description costs only the icon', () => {
    const parse = (text: string) => parseSteamSearchRow(parseJsonExact(text), NOW);
    for (const bad of [
      row(AK, '"3194"', '12'), // price as a string
      row(AK, '31.94', '12'), // price not in cents
      row(AK, '-3194', '12'),
      row(AK, '{"amount":3194}', '12'),
      row(AK, 'true', '12'),
      row(AK, 'null', '12'),
      row(AK, '3194', '"12"'), // listings as a string
      row(AK, '3194', '1.5'),
      row(AK, '3194', 'null'),
      row(AK, '2000000000000', '1'), // $20 000 000 000: above any CS2 item
      `{"name":"x","sell_listings":1,"sell_price":100}`, // no hash_name
      `{"hash_name":12,"sell_listings":1,"sell_price":100}`,
      `{"hash_name":"  ","sell_listings":1,"sell_price":100}`,
      '"a row"',
      'null',
      '[1,2]',
    ]) {
      expect(parse(bad)).toBe('malformed');
    }
    expect(parse(row(AK, '0', '0'))).toEqual({ observation: 'unpriced', icon: { market_hash_name: AK, icon_url: 'iconOf_30' } });
    expect(parse(row(AK, '120', '0'))).toMatchObject({ observation: 'unpriced' });
    expect(parse(row(AK, '0', '4'))).toMatchObject({ observation: 'unpriced' });
    const noIcon = (icon: string) => parse(row(AK, '120', '4', icon));
    for (const icon of ['"../../etc/passwd"', '"a/b"', '12', 'null', '""', JSON.stringify('x'.repeat(1025))])
      expect(noIcon(icon)).toMatchObject({ observation: { price: '1.20', quantity: 4 }, icon: null });
    expect(parse(`{"hash_name":${JSON.stringify(AK)},"sell_listings":4,"sell_price":120,"asset_description":"x"}`)).toMatchObject({
      observation: { price: '1.20' },
      icon: null,
    });
    expect(parse(`{"hash_name":${JSON.stringify(AK)},"sell_listings":4,"sell_price":120}`)).toMatchObject({ observation: { price: '1.20' }, icon: null });
    expect(parse(row(AK, '1', '1'))).toMatchObject({ observation: { price: '0.01' } });
  });

  test('a page of broken rows counts them in skipped and keeps the good ones', async () => {
    answer = (start) => page(start, 4, [row(AK, '3194', '12'), row(AWP, '"$2.30"', '1'), row(CASE, '70', 'true'), row(KARAMBIT, '61200', '9')]);
    const cursor = memoryCursor();
    const result = await ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 3, cursor }));
    expect(result.skipped).toBe(2);
    expect(result.observations.map((observation) => observation.market_hash_name)).toEqual([AK, KARAMBIT]);
    // The whole market (4 rows) in one page: the cursor wraps and the run stops there.
    expect(result.requests).toBe(1);
    expect(cursor.writes).toEqual([0]);
  });

  const hostile: [string, () => Response, (error: unknown) => void][] = [
    ['{success:false}', () => json('{"success":false}'), (error) => expect((error as Error).message).toContain('success is false')],
    [
      'results: null',
      () => json('{"success":true,"start":100,"pagesize":100,"total_count":500,"results":null}'),
      (error) => expect((error as Error).message).toContain('no results array'),
    ],
    [
      'no total_count',
      () => json('{"success":true,"start":100,"pagesize":100,"results":[]}'),
      (error) => expect((error as Error).message).toContain('no total_count'),
    ],
    [
      'total_count a string',
      () => json('{"success":true,"start":100,"pagesize":100,"total_count":"500","results":[]}'),
      (error) => expect((error as Error).message).toContain('no total_count'),
    ],
    ['a bare array', () => json('[]'), (error) => expect((error as Error).message).toContain('not an object')],
    ['truncated JSON', () => json(fixtureText.slice(0, 700)), (error) => expect((error as Error).message).toContain('unparseable')],
    ['an empty page below total_count', () => page(100, 500, []), (error) => expect((error as Error).message).toContain('empty below total_count')],
    ['HTTP 502', () => new Response('<html>Bad Gateway</html>', { status: 502 }), (error) => expect((error as Error).message).toContain('HTTP 502')],
  ];
  for (const [label, body, check] of hostile) {
    test(`${label} on the second page ends the run as unavailable, keeping the first page and its cursor`, async () => {
      answer = (start) => (start === 0 ? page(0, 500, [row(AK, '3194', '12')]) : body());
      const cursor = memoryCursor(0);
      const error = await failure(ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 5, names: [AK], cursor })));
      expect(error).toBeInstanceOf(SourceUnavailableError);
      check(error);
      const partial = (error as SourceUnavailableError).partial!;
      expect(partial.observations.map((observation) => observation.market_hash_name)).toEqual([AK]);
      expect(partial.requests).toBe(2);
      // The failed page is read again by the next run; priceoverview was never reached.
      expect(cursor.writes).toEqual([1]);
      expect(seen.some((request) => request.startsWith('/market/priceoverview/'))).toBe(false);
    });
  }

  test("429 with Retry-After, and Steam's own 429 (body null, no Retry-After): rate-limited, the first page kept", async () => {
    for (const [headers, retryAfterMs] of [
      [{ 'retry-after': '7' }, 7_000],
      [{}, 300_000],
    ] as const) {
      answer = (start) => (start === 0 ? page(0, 500, [row(AK, '3194', '12')]) : json('null', 429, headers));
      const error = await failure(ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 5, cursor: memoryCursor() })));
      expect(error).toBeInstanceOf(SourceRateLimitedError);
      expect(error).toMatchObject({ origin: 'upstream', retryAfterMs });
      expect((error as SourceRateLimitedError).partial!.observations.map((observation) => observation.market_hash_name)).toEqual([AK]);
    }
  });

  test('Steam answering fewer rows than asked: the cursor moves by the rows given', async () => {
    answer = (start) =>
      page(
        start,
        25,
        Array.from({ length: Math.min(10, 25 - start) }, (_, index) => row(`Item ${String(start + index).padStart(2, '0')}`, '100', '1')),
      );
    const cursor = memoryCursor();
    const first = await ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 2, cursor }));
    expect(first.observations.map((observation) => observation.market_hash_name)).toEqual(
      Array.from({ length: 20 }, (_, index) => `Item ${String(index).padStart(2, '0')}`),
    );
    expect(cursor.writes).toEqual([10, 20]);
    const second = await ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { maxPages: 2, cursor }));
    expect(second.observations).toHaveLength(5);
    expect(second.requests).toBe(1);
    expect(cursor.writes).toEqual([10, 20, 0]);
  });
});

describe('priceoverview: a 24 h sales window, never a price', () => {
  test('volume "1,234" and median → sales; no volume or "0" → volume 0 and no prices; unknown names counted', async () => {
    const result = await ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { names: [AK, CASE, AWP, 'Nope | Nothing (Field-Tested)', AK], maxPages: 0 }));
    expect(result.observations).toEqual([]);
    expect(result).toMatchObject({ skipped: 0, unknown: 1, requests: 4 });
    const window = { version: 'default', window: '24h' as const, mean: null, min: null, max: null, source_time: NOW };
    expect(result.sales).toEqual([
      { ...window, market_hash_name: AK, median: '32.10', volume: 1234 },
      { ...window, market_hash_name: CASE, median: null, volume: 0 },
      { ...window, market_hash_name: AWP, median: null, volume: 0 },
    ]);
    expect(seen.every((request) => request.startsWith('/market/priceoverview/?appid=730&currency=1&market_hash_name='))).toBe(true);
  });

  test('hostile bodies: wrong types are malformed, success false unknown, a 429 keeps what came before', async () => {
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":true,"volume":12}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":true,"volume":"12","median_price":2.4}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":true,"volume":"12","median_price":"-$2.40"}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":true,"volume":"1.234"}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"lowest_price":"$2.30"}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('null'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":"true"}'), NOW)).toBe('malformed');
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":false}'), NOW)).toBe('unknown');
    // lowest_price is an ask, not read: even a broken one leaves the sales window.
    expect(parseSteamOverviewSales(AK, parseJsonExact('{"success":true,"lowest_price":2.3,"volume":"3","median_price":"$2.40"}'), NOW)).toMatchObject({
      median: '2.40',
      volume: 3,
    });
    expect(parseSteamOverviewSales(AK, { success: true, volume: new JsonNumber('3') }, NOW)).toBe('malformed');

    const error = await failure(ADAPTERS.steam.fetchSnapshot(context(fakeUrl, { names: [AK, 'Odd', 'Throttled', CASE] })));
    expect(error).toBeInstanceOf(SourceRateLimitedError);
    const partial = (error as SourceRateLimitedError).partial!;
    expect(partial.sales!.map((sale) => sale.market_hash_name)).toEqual([AK]);
    expect(partial).toMatchObject({ skipped: 1, requests: 3 });
  });
});

// ---- against the simulator: pages, cursor, budget, runs -----------------------------------------

describe('against the market simulator', () => {
  /** 250 names: three pages of 100 (the last of 50). */
  const items: SimulatorItem[] = Array.from({ length: 250 }, (_, index) => ({
    market_hash_name: `Sim Item ${String(index).padStart(3, '0')} | Search (Field-Tested)`,
    phases: [],
  }));
  let sim: MarketSimulator;
  let redis: Redis;
  const prefix = `steamsearch${crypto.randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    sim = startMarketSimulator({
      items: [
        ...items,
        { market_hash_name: AK, phases: [] },
        { market_hash_name: KARAMBIT, phases: ['phase-2', 'ruby'] },
        { market_hash_name: STICKER, phases: [] },
      ],
      prices: {
        [AK]: { default: { price: '2.30', quantity: 1234 } },
        [KARAMBIT]: { 'phase-2': { price: '640.10', quantity: 3 }, ruby: { price: '3850', quantity: 1 } },
        [STICKER]: { default: { price: null, quantity: 0 } },
      },
      now: () => NOW,
    });
    redis = createRequestRedis(process.env.REDIS_URL!, 'steam-search-test');
    await eventually(async () => (redis.status === 'ready' ? true : undefined));
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await sim.stop();
  });
  afterEach(() => sim.setMode('all', 'ok'));
  const steamUrl = () => `${sim.url}/steam`;

  test('the simulator speaks the real format: sorted by name, count capped at 100, listings and icons', async () => {
    const body = (await (
      await fetch(`${steamUrl()}/market/search/render/?appid=730&norender=1&count=500&start=0&sort_column=name&sort_dir=asc&currency=1`)
    ).json()) as {
      success: boolean;
      start: number;
      pagesize: number;
      total_count: number;
      results: {
        hash_name: string;
        sell_listings: number;
        sell_price: number;
        sell_price_text: string;
        asset_description: { icon_url: string; market_hash_name: string; appid: number };
      }[];
    };
    expect(body).toMatchObject({ success: true, start: 0, pagesize: 100, total_count: 253 });
    expect(body.results).toHaveLength(100);
    const names = body.results.map((result) => result.hash_name);
    expect(names).toEqual([...names].sort());
    const ak = body.results.find((result) => result.hash_name === AK)!;
    expect(ak).toMatchObject({ sell_listings: 1234, sell_price: 230, sell_price_text: '$2.30', asset_description: { appid: 730, market_hash_name: AK } });
    expect(ak.asset_description.icon_url).toMatch(/^[A-Za-z0-9_-]{100,}$/);
    const last = (await (await fetch(`${steamUrl()}/market/search/render/?appid=730&norender=1&count=100&start=200`)).json()) as {
      results: { hash_name: string; sell_price: number; sell_listings: number }[];
    };
    expect(last.results).toHaveLength(53);
    // Nothing listed: still a row, with 0 listings at 0 (as Steam lists such items).
    expect(last.results.find((result) => result.hash_name === STICKER)).toMatchObject({ sell_price: 0, sell_listings: 0 });
    // The Doppler's one row (Steam has no phase rows) is its cheapest phase.
    expect(last.results.find((result) => result.hash_name === KARAMBIT)).toMatchObject({ sell_price: 64010 });
    expect((await fetch(`${steamUrl()}/market/search/render/?appid=730&count=100&start=0`)).status).toBe(400);
  });

  test("a new item (the simulator's newItems) is on the search pages from its time, not before", async () => {
    let at = NOW;
    const fresh = 'Souvenir Charm | Cologne 2026 Highlight | MATYS ACE';
    const market = startMarketSimulator({
      items: [{ market_hash_name: AK, phases: [] }],
      newItems: [{ market_hash_name: fresh, phases: [], afterBuckets: 2 }],
      now: () => at,
    });
    try {
      const names = async () =>
        (await ADAPTERS.steam.fetchSnapshot(context(`${market.url}/steam`, { maxPages: 1, now: () => at }))).observations.map(
          (observation) => observation.market_hash_name,
        );
      expect(await names()).toEqual([AK]);
      at = new Date(NOW.getTime() + 60_000);
      expect(await names()).toEqual([AK, fresh]);
    } finally {
      await market.stop();
    }
  });

  test('runs continue where the last stopped and wrap after total_count, so successive runs cover the market', async () => {
    const cursor = redisSourceCursor(redis, prefix, 'steam');
    const covered = new Set<string>();
    const run = async () => {
      const result = await ADAPTERS.steam.fetchSnapshot(context(steamUrl(), { maxPages: 2, cursor }));
      for (const observation of result.observations) covered.add(observation.market_hash_name);
      return result;
    };
    const first = await run();
    expect(first.requests).toBe(2);
    expect(await cursor.read()).toBe(200);
    expect(await redis.get(sourceCursorKey(prefix, 'steam'))).toBe('200');
    const second = await run();
    // 53 rows left: one page, then the cursor wraps and the run stops.
    expect(second.requests).toBe(1);
    expect(await cursor.read()).toBe(0);
    // Every priced name once over the two runs (the sticker has no listing).
    expect(covered.size).toBe(252);
    expect(covered.has(STICKER)).toBe(false);
    expect(second.icons!.map((icon) => icon.market_hash_name)).toContain(STICKER);
    const third = await run();
    expect(third.observations[0]!.market_hash_name).toBe([...covered].sort()[0]!);
  });

  test('partial and wrong_types: broken rows skipped and counted, the rest priced', async () => {
    sim.setMode('steam', 'partial');
    const partial = await ADAPTERS.steam.fetchSnapshot(context(steamUrl(), { maxPages: 1, cursor: memoryCursor() }));
    // Rows at positions 1, 4, 7, … (33 of 100) are broken.
    expect(partial.skipped).toBe(33);
    expect(partial.observations.length).toBe(67);
    sim.setMode('steam', 'wrong_types');
    const wrong = await ADAPTERS.steam.fetchSnapshot(context(steamUrl(), { maxPages: 1, cursor: memoryCursor() }));
    expect(wrong).toMatchObject({ skipped: 100, observations: [] });
    for (const mode of ['fail', 'malformed', 'rate_limit'] as const) {
      sim.setMode('steam', mode);
      expect(await failure(ADAPTERS.steam.fetchSnapshot(context(steamUrl(), { maxPages: 1, cursor: memoryCursor() })))).toBeInstanceOf(
        mode === 'rate_limit' ? SourceRateLimitedError : SourceUnavailableError,
      );
    }
  });

  test('never more requests than the budget: pages and names together stop at it, keeping what was read', async () => {
    const budget = createRequestBudget(redis, 'steam', { requests: 3, windowSeconds: 60, keyPrefix: `${prefix}:budget` });
    const before = sim.requestCount('steam');
    const error = await failure(
      ADAPTERS.steam.fetchSnapshot(context(steamUrl(), { maxPages: 2, names: [AK, KARAMBIT], acquire: budget.acquire, cursor: memoryCursor() })),
    );
    expect(error).toBeInstanceOf(SourceRateLimitedError);
    expect(error).toMatchObject({ origin: 'budget' });
    expect(sim.requestCount('steam') - before).toBe(3);
    const partial = (error as SourceRateLimitedError).partial!;
    expect(partial.requests).toBe(3);
    expect(partial.observations).toHaveLength(200);
    expect(partial.sales!.map((sale) => sale.market_hash_name)).toEqual([AK]);
  });

  test('a run spends its share on pages and the rest on names, within ~80 % of the budget per interval', () => {
    const real = sourceSettings(testConfig({ SOURCE_STEAM_URL: 'https://steamcommunity.com' }), ADAPTERS.steam);
    expect({ pages: real.paging.maxPages, names: real.batchSize }).toEqual({ pages: 12, names: 4 });
    expect(real.paging.maxPages! + real.batchSize).toBeLessThanOrEqual(0.8 * real.budget.requests);
    const local = sourceSettings(testConfig({ SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam' }), ADAPTERS.steam);
    expect(local.intervalSeconds).toBe(30);
    expect({ pages: local.paging.maxPages, names: local.batchSize }).toEqual({ pages: 40, names: 50 });
    expect(local.paging.maxPages! * STEAM_SEARCH_PAGE_SIZE).toBe(4_000);
    const quick = sourceSettings(testConfig({ SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam', SOURCE_STEAM_INTERVAL_SECONDS: '2' }), ADAPTERS.steam);
    expect(quick.paging.maxPages! + quick.batchSize).toBeLessThanOrEqual((0.8 * quick.budget.requests * 2) / 60);
  });
});

// ---- ingest runs in a database of their own: prices, icons, demand ---------------------------------

describe('steam ingest runs (Postgres and Redis)', () => {
  const CATALOG_NAMES = [AK, AWP, KARAMBIT, CASE, STICKER];
  let t: TestApp;
  let sim: MarketSimulator;
  let redis: Redis;
  let clock = new Date('2031-05-05T12:00:00Z').getTime();
  const now = () => new Date(clock);
  const ids = new Map<string, string>();

  beforeAll(async () => {
    sim = startMarketSimulator({
      items: CATALOG_NAMES.map((name) => ({ market_hash_name: name, phases: name === KARAMBIT ? ['phase-2', 'ruby'] : [] })),
      prices: { [AK]: { default: { price: '2.30', median_price: '2.45', quantity: 1234 } }, [STICKER]: { default: { price: null, quantity: 0 } } },
      now,
    });
    t = await scratchTestApp({
      tag: 'steamsearch',
      now,
      config: { SOURCES: 'steam', SOURCE_STEAM_URL: `${sim.url}/steam`, QUEUE_PREFIX: `steamrun${crypto.randomUUID().slice(0, 8)}` },
    });
    const catalog = generateCatalog().filter((item) => CATALOG_NAMES.includes(item.market_hash_name));
    expect(catalog).toHaveLength(CATALOG_NAMES.length);
    await syncCatalog(t.deps.sql, catalog);
    for (const item of catalog) ids.set(item.market_hash_name, item.catalog_id);
    redis = createRequestRedis(t.deps.config.REDIS_URL, 'steam-run-test');
    await eventually(async () => (redis.status === 'ready' ? true : undefined));
  });

  afterAll(async () => {
    const budget = requestBudgetKeys(sourceBudgetPrefix(t.deps.config.QUEUE_PREFIX), 'steam');
    const keys = await redis.keys(`${t.deps.config.QUEUE_PREFIX}:*`);
    await redis.del(budget.window, budget.blocked, ...keys);
    redis.disconnect();
    await sim.stop();
    await t.close();
  });

  const run = () => {
    clock += 30_000;
    return runSourceIngest({ sql: t.deps.sql, redis, config: t.deps.config, log: t.deps.log, now }, ADAPTERS.steam, now());
  };

  test('one run prices the whole (small) catalog from search pages, quantity = listings, and records every icon', async () => {
    const outcome = await run();
    expect(outcome).toMatchObject({ status: 'succeeded', written: 4, skipped: 0, unknownNames: 0 });
    const latest = await t.deps.sql<{ market_hash_name: string; price: string; quantity: number; median_price: string | null }[]>`
      select c.market_hash_name, l.price::text as price, l.quantity, l.median_price::text as median_price from latest_prices l
      join catalog_items c using (catalog_id) where l.source = 'steam' order by c.market_hash_name`;
    expect(latest.map((row) => row.market_hash_name).sort()).toEqual([AK, AWP, KARAMBIT, CASE].sort());
    expect(latest.find((row) => row.market_hash_name === AK)).toEqual({ market_hash_name: AK, price: '2.30', quantity: 1234, median_price: null });
    const icons = await t.deps.sql<
      { market_hash_name: string; version: string; icon_url: string }[]
    >`select market_hash_name, version, icon_url from item_icons order by market_hash_name`;
    expect(icons.map((icon) => icon.market_hash_name).sort()).toEqual([...CATALOG_NAMES].sort());
    expect(icons.every((icon) => icon.version === 'default' && /^[A-Za-z0-9_-]+$/.test(icon.icon_url))).toBe(true);
    // The item's image is now Steam's icon.
    const [image] = await itemImages(t.deps.sql, t.deps.config, [{ catalog_id: ids.get(AK)! }]);
    expect(image).toEqual({
      url: `${t.deps.config.STEAM_IMAGE_URL}/economy/image/${icons.find((icon) => icon.market_hash_name === AK)!.icon_url}`,
      source: 'steam',
    });
  });

  test('asked names get their priceoverview turn first, once an hour; the others by staleness', async () => {
    // The first run gave every catalog name its turn: an hour on, all are due again.
    clock += SALES_TURN_INTERVAL_MS;
    const queuePrefix = t.deps.config.QUEUE_PREFIX;
    const { key } = await workspaceWithKey(t, { scopes: ['prices:read'] });
    // A keyed price read records the item (sent within a second, or at flush).
    const response = await t.request(`/v2/prices/${ids.get(CASE)!}`, { headers: { 'x-api-key': key } });
    expect(response.status).toBe(200);
    await t.deps.priceDemand.flush();
    expect(await redis.zscore(priceDemandKey(queuePrefix), ids.get(CASE)!)).not.toBeNull();
    // An inventory seen: its items recorded through the same recorder.
    const demand = new PriceDemand(redis, queuePrefix, t.deps.log, () => now().getTime() + 1);
    demand.record([ids.get(AWP)!, 'itm_not_in_this_catalog']);
    await demand.flush();

    const deps = { sql: t.deps.sql, redis, queuePrefix, now };
    const first = await namesToRead(deps, 'steam', 3);
    // Asked (most recent first: the AWP, then the case), then the stalest of the rest.
    expect(first.slice(0, 2)).toEqual([AWP, CASE]);
    expect(first).toHaveLength(3);
    expect(await redis.zscore(salesTurnsKey(queuePrefix, 'steam'), AWP)).toBe(String(now().getTime()));
    // Within the hour none of them again: the other two catalog names, then nothing.
    const second = await namesToRead(deps, 'steam', 5);
    expect(second.sort()).toEqual(CATALOG_NAMES.filter((name) => !first.includes(name)).sort());
    expect(await namesToRead(deps, 'steam', 5)).toEqual([]);
    // An hour on, the asked names come back first, least recently read first.
    clock += SALES_TURN_INTERVAL_MS;
    const third = await namesToRead(deps, 'steam', 2);
    expect(third).toEqual([AWP, CASE]);
  });

  test('a run reads priceoverview for its names (sales only) beside the search pages', async () => {
    clock += SALES_TURN_INTERVAL_MS;
    const before = sim.requestCount('steam');
    const outcome = await run();
    expect(outcome).toMatchObject({ status: 'succeeded' });
    // One search page (the five names, then the wrap) and a priceoverview per catalog name.
    expect(sim.requestCount('steam') - before).toBe(1 + CATALOG_NAMES.length);
    const [akPrice] = await t.deps.sql<{ quantity: number }[]>`select quantity from latest_prices where source = 'steam' and catalog_id = ${ids.get(AK)!}`;
    expect(akPrice!.quantity).toBe(1234);
    // priceoverview's volume and median went to the 24 h sales window (the simulator's volume is the pinned quantity).
    const sales = await t.deps.sql<{ volume: number; median: string | null }[]>`
      select volume, median::text as median from source_sales where source = 'steam' and sales_window = '24h' and catalog_id = ${ids.get(AK)!}`;
    expect([...sales]).toEqual([{ volume: 1234, median: '2.45' }]);
  });
});
