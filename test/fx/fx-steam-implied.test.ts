import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import Decimal from 'decimal.js';
import { minorUnits } from '../../shared/fx/convert.ts';
import { formatSteamMoney, parseSteamMoney, STEAM_IMPLIED_CURRENCIES, STEAM_WALLET_CURRENCIES, steamWalletCurrency } from '../../shared/fx/steam-currencies.ts';
import {
  basketMedianRate,
  lowestPriceOf,
  MIN_BASKET_PRICES,
  refreshSteamImpliedRates,
  STEAM_DISABLED_REASON,
  STEAM_IMPLIED_BASKET,
  steamImpliedPaceMs,
} from '../../shared/fx/steam-implied.ts';
import { findSteamImpliedStates } from '../../shared/fx/steam-implied-repository.ts';
import { createRequestBudget } from '../../shared/sources/budget.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { sourceSettings } from '../../shared/sources/settings.ts';
import { ingestPool } from '../../workers/ingest/index.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { localHundredths, simulatedSteamRateMillionths } from '../fakes/simulator/steam-currencies.ts';
import { scratchTestApp, type TestApp, testConfig } from '../helpers.ts';

/**
 * Steam-implied exchange rates (docs/design.md §19): Steam's money in every wallet currency read exactly from
 * recorded answers, the basket median, and the `fx.steam_implied` run against the simulator with its
 * faults (too few prices, 429 with Retry-After, wrong types, unknown forms, steam disabled). On a
 * database of its own: the rates are global.
 */

type Fixture = {
  bodies: { currency: string; provenance: string; body: Record<string, unknown>; lowest: string; median: string | null }[];
  unknown_forms: { currency: string; text: string; why: string }[];
};
const fixture = (await Bun.file(join(import.meta.dir, '..', 'fixtures', 'upstream', 'steam-priceoverview-currencies.json')).json()) as Fixture;

describe('Steam money in every wallet currency', () => {
  test("every recorded answer reads exactly, in each currency's own form (decimal symbol per currency)", () => {
    expect(new Set(fixture.bodies.map((entry) => entry.currency))).toEqual(new Set(STEAM_WALLET_CURRENCIES.map((currency) => currency.code)));
    for (const entry of fixture.bodies) {
      expect({ currency: entry.currency, lowest: lowestPriceOf(entry.body, entry.currency) }).toEqual({
        currency: entry.currency,
        lowest: { price: entry.lowest },
      });
      const median = entry.body.median_price;
      expect({ currency: entry.currency, median: typeof median === 'string' ? parseSteamMoney(median, entry.currency) : null }).toEqual({
        currency: entry.currency,
        median: entry.median,
      });
    }
  });

  test("a text not in the currency's form is no amount (skipped, never guessed)", () => {
    for (const entry of fixture.unknown_forms) expect({ ...entry, parsed: parseSteamMoney(entry.text, entry.currency) }).toEqual({ ...entry, parsed: null });
    expect(parseSteamMoney('$2.30', 'XYZ')).toBeNull();
    expect(parseSteamMoney('', 'USD')).toBeNull();
  });

  test('answers of the wrong types or without a price are told apart', () => {
    expect(lowestPriceOf({ success: true, lowest_price: 2.3 }, 'USD')).toBe('malformed');
    expect(lowestPriceOf({ success: true, lowest_price: { amount: '2.30' } }, 'USD')).toBe('malformed');
    expect(lowestPriceOf({ success: 'true', lowest_price: '$2.30' }, 'USD')).toBe('malformed');
    expect(lowestPriceOf(null, 'USD')).toBe('malformed');
    expect(lowestPriceOf([], 'USD')).toBe('malformed');
    expect(lowestPriceOf({ success: true, lowest_price: '$2.30' }, 'RUB')).toBe('malformed');
    expect(lowestPriceOf({ success: false }, 'RUB')).toBe('unknown');
    expect(lowestPriceOf({ success: true, volume: '12', median_price: '176,95 pуб.' }, 'RUB')).toBe('unpriced');
  });

  test("Steam's formatter, as the simulator answers with it, reads back exactly in every currency", () => {
    for (const currency of STEAM_WALLET_CURRENCIES) {
      for (const hundredths of [1n, 41n, 100n, 1_234n, 123_456n, 1_234_567_89n, 100_000_000n]) {
        const text = formatSteamMoney(hundredths, currency.code);
        const whole = hundredths % 100n === 0n;
        const expected = `${hundredths / 100n}${whole && currency.format.wholeUnits && currency.code !== 'RUB' ? '' : `.${String(hundredths % 100n).padStart(2, '0')}`}`;
        expect({ code: currency.code, text, parsed: parseSteamMoney(text, currency.code) }).toEqual({ code: currency.code, text, parsed: expected });
      }
    }
    expect(formatSteamMoney(123_456n, 'RUB')).toBe('1234,56 pуб.');
    expect(formatSteamMoney(123_400n, 'KZT')).toBe('1 234₸');
    expect(formatSteamMoney(123_400n, 'CLP')).toBe('CLP$ 1.234');
    expect(formatSteamMoney(1_234n, 'PEN')).toBe('S/.12.34');
    expect(formatSteamMoney(1_234n, 'ARS')).toBe('ARS$ 12,34');
    expect(formatSteamMoney(1_234n, 'KWD')).toBe('12.34 KD');
    expect(formatSteamMoney(1_234_500n, 'CRC')).toBe('₡12.345');
    expect(formatSteamMoney(1_234n, 'UYU')).toBe('$U12,34');
    expect(formatSteamMoney(1_200n, 'EUR')).toBe('12,--€');
  });

  test('the Steam-implied currencies are the wallet currencies the ECB lacks, with their ISO 4217 minor units', () => {
    expect([...STEAM_IMPLIED_CURRENCIES].sort()).toEqual([
      'AED',
      'ARS',
      'CLP',
      'COP',
      'CRC',
      'KWD',
      'KZT',
      'PEN',
      'QAR',
      'RUB',
      'SAR',
      'TWD',
      'UAH',
      'UYU',
      'VND',
    ]);
    for (const code of STEAM_IMPLIED_CURRENCIES) expect(steamWalletCurrency(code)).toBeDefined();
    expect(Object.fromEntries(STEAM_IMPLIED_CURRENCIES.map((code) => [code, minorUnits(code)]))).toEqual({
      RUB: 2,
      VND: 0,
      UAH: 2,
      CLP: 0,
      PEN: 2,
      COP: 2,
      TWD: 2,
      SAR: 2,
      AED: 2,
      ARS: 2,
      KZT: 2,
      KWD: 3,
      QAR: 2,
      CRC: 2,
      UYU: 2,
    });
  });
});

describe('the basket median', () => {
  /** An independent computation: decimal.js at 60 digits, median, half-even to 8 places. */
  const reference = (pairs: { usd: string; local: string }[]) => {
    const Exact = Decimal.clone({ precision: 60 });
    const ratios = pairs.map((pair) => new Exact(pair.local).dividedBy(pair.usd)).sort((a, b) => a.comparedTo(b));
    const middle = Math.floor(ratios.length / 2);
    const median = ratios.length % 2 === 1 ? ratios[middle]! : ratios[middle - 1]!.plus(ratios[middle]!).dividedBy(2);
    return median.toDecimalPlaces(8, Decimal.ROUND_HALF_EVEN).toFixed(8);
  };

  test('odd and even baskets, exactly, half-even to 8 places', () => {
    const odd = [
      { usd: '0.41', local: '33.42' },
      { usd: '1.05', local: '85.60' },
      { usd: '0.33', local: '26.90' },
      { usd: '2.17', local: '176.89' },
      { usd: '0.09', local: '7.34' },
    ];
    expect(basketMedianRate(odd)).toBe(reference(odd));
    expect(basketMedianRate(odd)).toBe('81.51612903'); // the middle ratio, 176.89 / 2.17 = 81.516129032…
    const even = odd.slice(0, 4);
    expect(basketMedianRate(even)).toBe(reference(even));
    // Whole-unit currencies and large rates.
    const vnd = [
      { usd: '0.41', local: '10640' },
      { usd: '1.05', local: '27248' },
      { usd: '0.33', local: '8565' },
    ];
    expect(basketMedianRate(vnd)).toBe(reference(vnd));
    // 10 / 80 000 000 = 0.000000125, a tie at the 9th place: half-even keeps the even 2.
    expect(basketMedianRate([{ usd: '80000000', local: '10' }])).toBe('0.00000012');
    expect(
      basketMedianRate([
        { usd: '80000000', local: '10' },
        { usd: '80000000', local: '10.8' },
      ]),
    ).toBe('0.00000013');
    expect(() => basketMedianRate([])).toThrow(RangeError);
    expect(() => basketMedianRate([{ usd: '0', local: '1' }])).toThrow(RangeError);
  });

  test('random baskets agree with decimal.js', () => {
    let state = 7;
    const next = (bound: number) => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) % bound;
    for (let round = 0; round < 500; round += 1) {
      const pairs = Array.from({ length: MIN_BASKET_PRICES + next(3) }, () => ({
        usd: `${1 + next(5000)}.${String(next(100)).padStart(2, '0')}`,
        local: `${1 + next(9_000_000)}.${String(next(100)).padStart(2, '0')}`,
      }));
      expect(basketMedianRate(pairs)).toBe(reference(pairs));
    }
  });
});

describe('the fx.steam_implied run', () => {
  let t: TestApp;
  let simulator: MarketSimulator;
  const NOW = new Date('2026-11-25T10:00:00Z');
  const SEED = 11;
  // The basket in USD, pinned: the implied rates can be recomputed from the simulator's own rates.
  const USD = {
    'Recoil Case': '0.41',
    'Dreams & Nightmares Case': '1.05',
    'Fracture Case': '0.33',
    'Revolution Case': '2.17',
    'Snakebite Case': '0.09',
  } as Record<string, string>;
  const config = (overrides: Record<string, string> = {}) =>
    testConfig({
      DATABASE_URL: t.deps.config.DATABASE_URL,
      SOURCES: 'steam',
      SOURCE_STEAM_URL: `${simulator.url}/steam`,
      QUEUE_PREFIX: `fxsteam${process.pid}`,
      ...overrides,
    });
  const deps = (overrides: Record<string, string> = {}) => ({ ...t.deps, config: config(overrides), now: () => NOW });
  const clearBudget = async () => {
    const keys = await t.deps.redis.keys(`fxsteam${process.pid}:*`);
    if (keys.length > 0) await t.deps.redis.del(...keys);
  };

  beforeAll(async () => {
    t = await scratchTestApp({ tag: 'fxsteam' });
    simulator = startMarketSimulator({
      items: [...STEAM_IMPLIED_BASKET, 'Kilowatt Case'].map((name) => ({ market_hash_name: name, phases: [] })),
      prices: Object.fromEntries(Object.entries(USD).map(([name, price]) => [name, { default: price }])),
      now: () => NOW,
      seed: SEED,
    });
  }, 60_000);

  afterAll(async () => {
    await clearBudget();
    await simulator?.stop();
    await t?.close();
  });

  test('paced to the part of the steam budget the ingest run leaves', () => {
    expect(steamImpliedPaceMs({ budget: { requests: 20, windowSeconds: 60, keyPrefix: 'x' }, batchSize: 16, intervalSeconds: 60 })).toBe(15_000);
    const local = sourceSettings(testConfig({ SOURCE_STEAM_URL: 'http://127.0.0.1:1/steam' }), ADAPTERS.steam);
    expect(steamImpliedPaceMs(local)).toBeLessThanOrEqual(200);
  });

  test('scheduled on the fx interval only while steam is enabled; run once at start-up either way', () => {
    const schedules = (overrides: Record<string, string>) => (typeof ingestPool.schedules === 'function' ? ingestPool.schedules(testConfig(overrides)) : []);
    expect(schedules({ SOURCES: 'steam', SOURCE_FX_INTERVAL_SECONDS: '3600' }).find((schedule) => schedule.id === 'ingest-fx-steam')).toMatchObject({
      job: 'fx.steam_implied',
      everyMs: 3_600_000,
    });
    expect(schedules({ SOURCES: 'skinport' }).map((schedule) => schedule.id)).not.toContain('ingest-fx-steam');
    expect(ingestPool.startupJobs?.map((job) => job.job)).toContain('fx.steam_implied');
  });

  test("reads the basket in USD and in every Steam-implied currency, in each one's money format, and stores the exact median", async () => {
    await clearBudget();
    const before = simulator.requestCount('steam');
    const outcome = await refreshSteamImpliedRates(deps(), { paceMs: 0 });
    expect(outcome).toMatchObject({
      status: 'succeeded',
      unavailable: [],
      skipped: 0,
      requests: STEAM_IMPLIED_BASKET.length * (1 + STEAM_IMPLIED_CURRENCIES.length),
    });
    expect(simulator.requestCount('steam') - before).toBe(80);
    const states = await findSteamImpliedStates(t.deps.sql);
    expect([...states.keys()].sort()).toEqual([...STEAM_IMPLIED_CURRENCIES].sort());
    for (const code of STEAM_IMPLIED_CURRENCIES) {
      const state = states.get(code)!;
      const currency = steamWalletCurrency(code)!;
      const rate = simulatedSteamRateMillionths(SEED, code, NOW);
      // What the simulator answered, recomputed: its rate applied to each pinned USD price.
      const basket = STEAM_IMPLIED_BASKET.map((name) => {
        const usd = USD[name]!;
        const local = localHundredths(BigInt(usd.replace('.', '')), currency, rate);
        const whole = local % 100n === 0n && currency.format.wholeUnits && code !== 'RUB';
        return { market_hash_name: name, usd, local: `${local / 100n}${whole ? '' : `.${String(local % 100n).padStart(2, '0')}`}` };
      });
      expect(state).toMatchObject({ currency: code, as_of: '2026-11-25', reason: null, basket });
      expect(state.rate).toBe(basketMedianRate(basket));
      // Close to the simulator's rate (rounding of cheap items in whole units aside).
      const relative = new Decimal(state.rate!).dividedBy(new Decimal(rate.toString()).dividedBy(1_000_000)).minus(1).abs();
      expect(relative.lessThan(0.05)).toBe(true);
    }
    expect(await t.deps.sql`select consecutive_failures, last_error from fx_sources where name = 'steam-implied'`).toEqual([
      { consecutive_failures: 0, last_error: null },
    ] as never);
  }, 30_000);

  test('fewer than three basket prices: the currency is not offered, with the reason (never an older rate)', async () => {
    await clearBudget();
    // A Steam where only two basket items sell in KZT (a fake in front of the simulator).
    const proxy = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const url = new URL(request.url);
        const name = url.searchParams.get('market_hash_name') ?? '';
        if (url.searchParams.get('currency') === '37' && !['Recoil Case', 'Fracture Case'].includes(name)) {
          // One not listed at all, one with no seller, the others in forms KZT does not use.
          if (name === 'Snakebite Case') return Response.json({ success: false });
          if (name === 'Revolution Case') return Response.json({ success: true, volume: '12', median_price: '1 050₸' });
          return Response.json({ success: true, lowest_price: '1.050,00₸', volume: '12' });
        }
        return fetch(`${simulator.url}${url.pathname}${url.search}`);
      },
    });
    try {
      const outcome = await refreshSteamImpliedRates(deps({ SOURCE_STEAM_URL: `http://127.0.0.1:${proxy.port}/steam` }), { paceMs: 0 });
      expect(outcome).toMatchObject({ status: 'succeeded', skipped: 1 });
      if (outcome.status !== 'succeeded') throw new Error('unreachable');
      expect(outcome.unavailable).toEqual([{ currency: 'KZT', reason: expect.stringContaining('only 2 of 5 basket items') }]);
      expect(outcome.rated).toHaveLength(STEAM_IMPLIED_CURRENCIES.length - 1);
      const kzt = (await findSteamImpliedStates(t.deps.sql)).get('KZT')!;
      expect(kzt).toMatchObject({ rate: null, as_of: null, reason: expect.stringContaining(`(${MIN_BASKET_PRICES} needed)`) });
      expect(kzt.basket.map((pair) => pair.market_hash_name).sort()).toEqual(['Fracture Case', 'Recoil Case']);
    } finally {
      await proxy.stop(true);
    }
  }, 30_000);

  test('a 429 with Retry-After blocks the shared steam budget, ends the run, and keeps every other currency as it was', async () => {
    await clearBudget();
    const before = await findSteamImpliedStates(t.deps.sql);
    simulator.setMode('steam', 'rate_limit');
    simulator.setRetryAfter('120');
    try {
      const outcome = await refreshSteamImpliedRates(deps(), { paceMs: 0 });
      expect(outcome).toMatchObject({ status: 'failed', retryAfterMs: 120_000, requests: 1, consecutiveFailures: 1, rated: [] });
      // The ingest run's budget is the same one: it waits out the Retry-After too.
      const settings = sourceSettings(config(), ADAPTERS.steam);
      const blocked = await createRequestBudget(t.deps.redis, 'steam', settings.budget).blockedFor();
      expect(blocked).toBeGreaterThan(100_000);
      expect(await findSteamImpliedStates(t.deps.sql)).toEqual(before);
      // A run while blocked sends nothing and says how long is left.
      simulator.setMode('steam', 'ok');
      const count = simulator.requestCount('steam');
      const again = await refreshSteamImpliedRates(deps(), { paceMs: 0 });
      expect(again).toMatchObject({ status: 'failed', requests: 0, consecutiveFailures: 2 });
      if (again.status === 'failed') expect(again.retryAfterMs).toBeGreaterThan(100_000);
      expect(simulator.requestCount('steam')).toBe(count);
      const [source] = await t.deps.sql<
        { last_error: string; consecutive_failures: number }[]
      >`select last_error, consecutive_failures from fx_sources where name = 'steam-implied'`;
      expect(source).toMatchObject({ consecutive_failures: 2, last_error: expect.stringContaining('rate-limited') });
    } finally {
      simulator.setMode('steam', 'ok');
      simulator.setRetryAfter('30');
      await clearBudget();
    }
  }, 30_000);

  test('answers of the wrong types are counted and skipped: with no USD basket no currency is offered', async () => {
    await clearBudget();
    simulator.setMode('steam', 'wrong_types');
    try {
      const outcome = await refreshSteamImpliedRates(deps(), { paceMs: 0 });
      expect(outcome).toMatchObject({ status: 'succeeded', rated: [], skipped: STEAM_IMPLIED_BASKET.length, requests: STEAM_IMPLIED_BASKET.length });
      const states = await findSteamImpliedStates(t.deps.sql);
      for (const code of STEAM_IMPLIED_CURRENCIES)
        expect(states.get(code)).toMatchObject({ rate: null, reason: expect.stringContaining('only 0 of 5 basket items have a lowest price on Steam in USD') });
    } finally {
      simulator.setMode('steam', 'ok');
    }
  }, 30_000);

  test('with the steam source disabled nothing is read and every such currency is not offered, saying why', async () => {
    const count = simulator.requestCount('steam');
    expect(await refreshSteamImpliedRates(deps({ SOURCES: 'skinport' }), { paceMs: 0 })).toEqual({ status: 'disabled' });
    expect(simulator.requestCount('steam')).toBe(count);
    const states = await findSteamImpliedStates(t.deps.sql);
    for (const code of STEAM_IMPLIED_CURRENCIES) expect(states.get(code)).toMatchObject({ rate: null, reason: STEAM_DISABLED_REASON });
  });

  test('one run at a time: a second one while the first holds the lock does nothing', async () => {
    await clearBudget();
    await t.deps.redis.set(`fxsteam${process.pid}:fx-steam-implied:lock`, 'other', 'PX', 10_000);
    try {
      expect(await refreshSteamImpliedRates(deps(), { paceMs: 0 })).toEqual({ status: 'busy' });
    } finally {
      await clearBudget();
    }
  });
});
