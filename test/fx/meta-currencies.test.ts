import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import Decimal from 'decimal.js';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { saveRateDays } from '../../shared/fx/repository.ts';
import { STEAM_IMPLIED_CURRENCIES } from '../../shared/fx/steam-currencies.ts';
import { refreshSteamImpliedRates, STEAM_IMPLIED_BASKET } from '../../shared/fx/steam-implied.ts';
import { findSteamImpliedStates, saveSteamImpliedUnavailable } from '../../shared/fx/steam-implied-repository.ts';
import { forgetCachedRates } from '../../shared/prices/currency.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { errorOf, scratchTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';

/**
 * Every Steam wallet currency through `?currency=` (docs/design.md §19) and GET /v2/meta/currencies: rates
 * implied by Steam's prices read from the simulator by the real job, then the keyless and keyed price
 * answers converted at them with `fx.source: "steam-implied"`, the ECB currencies as before. On a
 * database of its own: the rates are global.
 */

let t: TestApp;
let simulator: MarketSimulator;
let headers: Record<string, string>;
let item: { catalog_id: string; market_hash_name: string };
let address = 0;
const keyless = (path: string) => t.request(path, { headers: { 'x-forwarded-for': `198.51.100.${(address += 1) % 250}` } });
const keyed = (path: string) => t.request(path, { headers });
// biome-ignore lint/suspicious/noExplicitAny: answers of many shapes read field by field, each field checked by an expect; a declared type per answer would restate what the expects check
const read = (response: Response): Promise<any> => response.json();
const ECB_DAY = {
  date: '2026-11-24',
  rates: new Map([
    ['USD', '1.0834'],
    ['JPY', '162.41'],
    ['GBP', '0.84290'],
  ]),
};
/** An independent computation: usd × rate, half-even to `places`. */
const times = (usd: string, rate: string, places: number) => new Decimal(usd).times(rate).toDecimalPlaces(places, Decimal.ROUND_HALF_EVEN).toFixed(places);

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'metacurrencies' });
  headers = (await workspaceWithKey(t, { scopes: ['prices:read'], tier: 'pro' })).keyHeaders;
  const name = `★ Wallet Currency Knife | Fade ${crypto.randomUUID()} (Factory New)`;
  item = { catalog_id: catalogIdFor(name), market_hash_name: name };
  await t.deps.sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${item.catalog_id}, ${name}, 'knife')`;
  const now = new Date();
  for (const [source, price] of [
    ['skinport', '10.00'],
    ['steam', '12.34'],
  ] as const) {
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${item.catalog_id}, ${source}, 'default', ${price}::numeric, ${now}, ${now}, ${crypto.randomUUID()})`;
    await t.deps.sql`insert into price_sources (name, last_success_at) values (${source}, ${now})`;
  }
  await buildPriceSnapshot(t.deps.sql, now);
  simulator = startMarketSimulator({ items: STEAM_IMPLIED_BASKET.map((basketName) => ({ market_hash_name: basketName, phases: [] })), seed: 5 });
}, 60_000);

afterAll(async () => {
  await simulator?.stop();
  await t?.close();
});

const runSteamImplied = async () => {
  const config = testConfig({
    DATABASE_URL: t.deps.config.DATABASE_URL,
    SOURCES: 'steam',
    SOURCE_STEAM_URL: `${simulator.url}/steam`,
    QUEUE_PREFIX: `metacur${process.pid}`,
  });
  const outcome = await refreshSteamImpliedRates({ ...t.deps, config }, { paceMs: 0 });
  forgetCachedRates(t.deps.sql);
  return outcome;
};

describe('before any rates', () => {
  test('GET /v2/meta/currencies needs no key: USD alone, EUR and every Steam-implied currency unavailable with the reason', async () => {
    const response = await t.request('/v2/meta/currencies');
    expect(response.status).toBe(200);
    const body = await read(response);
    expect(body.base).toBe('USD');
    expect(body.currencies).toEqual([{ code: 'USD', source: 'base', minor_units: 2, rate: null, as_of: null }]);
    expect(body.unavailable.map((entry: { code: string }) => entry.code)).toEqual(['EUR', ...STEAM_IMPLIED_CURRENCIES].sort());
    expect(body.unavailable.find((entry: { code: string }) => entry.code === 'RUB')).toEqual({
      code: 'RUB',
      source: 'steam-implied',
      reason: 'no Steam basket read has completed yet',
    });
    // Asking for one: a 503 naming the reason; EUR as before (no ECB rates yet).
    const rub = await keyed(`/v2/prices/${item.catalog_id}?currency=RUB`);
    expect(rub.status).toBe(503);
    expect(await errorOf(rub)).toMatchObject({ code: 'fx_unavailable', message: expect.stringContaining('no Steam basket read has completed yet') });
    expect((await errorOf(await keyed(`/v2/prices/${item.catalog_id}?currency=EUR`))).code).toBe('fx_unavailable');
  });
});

describe('with ECB and Steam-implied rates', () => {
  beforeAll(async () => {
    await saveRateDays(t.deps.sql, [ECB_DAY], new Date());
    expect(await runSteamImplied()).toMatchObject({ status: 'succeeded', unavailable: [] });
    // One currency's basket came back too thin (as a run would store it).
    await saveSteamImpliedUnavailable(
      t.deps.sql,
      ['KWD'],
      'only 2 of 5 basket items have a lowest price on Steam in both USD and KWD (3 needed): not offered rather than guessed',
      [],
      new Date(),
    );
    forgetCachedRates(t.deps.sql);
  }, 30_000);

  test('GET /v2/meta/currencies lists each offered currency with its source, minor units, rate and as_of, and the unavailable ones with the reason', async () => {
    const body = await read(await t.request('/v2/meta/currencies'));
    const states = await findSteamImpliedStates(t.deps.sql);
    const byCode = new Map(body.currencies.map((entry: { code: string }) => [entry.code, entry]));
    expect(body.currencies.map((entry: { code: string }) => entry.code)).toEqual(
      ['EUR', 'GBP', 'JPY', 'USD', ...STEAM_IMPLIED_CURRENCIES.filter((code) => code !== 'KWD')].sort(),
    );
    expect(byCode.get('USD')).toEqual({ code: 'USD', source: 'base', minor_units: 2, rate: null, as_of: null });
    expect(byCode.get('EUR')).toEqual({ code: 'EUR', source: 'ecb', minor_units: 2, rate: '0.92302012', as_of: '2026-11-24' });
    expect(byCode.get('JPY')).toMatchObject({ source: 'ecb', minor_units: 0 });
    for (const code of STEAM_IMPLIED_CURRENCIES.filter((currency) => currency !== 'KWD')) {
      const state = states.get(code)!;
      expect(byCode.get(code)).toEqual({
        code,
        source: 'steam-implied',
        minor_units: code === 'CLP' || code === 'VND' ? 0 : 2,
        rate: new Decimal(state.rate!).toFixed(8),
        as_of: state.as_of,
      });
    }
    expect(body.unavailable).toEqual([{ code: 'KWD', source: 'steam-implied', reason: expect.stringContaining('only 2 of 5 basket items') }]);
  });

  test('keyless GET /v1/prices/{name}?currency=RUB: every price at the Steam-implied rate, fx.source "steam-implied"', async () => {
    const rate = (await findSteamImpliedStates(t.deps.sql)).get('RUB')!;
    const response = await keyless(`/v1/prices/${encodeURIComponent(item.market_hash_name)}?currency=RUB`);
    expect(response.status).toBe(200);
    const body = await read(response);
    expect(body.currency).toBe('RUB');
    expect(body.fx).toEqual({ base: 'USD', quote: 'RUB', rate: new Decimal(rate.rate!).toFixed(8), as_of: rate.as_of, source: 'steam-implied' });
    expect(body.versions[0].sources.skinport.price).toBe(times('10.00', rate.rate!, 2));
    expect(body.versions[0].sources.steam.price).toBe(times('12.34', rate.rate!, 2));
    // The keyless list too, one body per currency.
    const list = await read(await keyless('/v1/prices?currency=RUB'));
    expect(list.fx.source).toBe('steam-implied');
    expect(list.items.find((entry: { catalog_id: string }) => entry.catalog_id === item.catalog_id).sources.skinport.price).toBe(times('10.00', rate.rate!, 2));
  });

  test('keyed GET /v2/prices/{id}?currency=KZT, and the whole-unit CLP and VND', async () => {
    const states = await findSteamImpliedStates(t.deps.sql);
    const kzt = states.get('KZT')!;
    const body = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=KZT`));
    expect(body.currency).toBe('KZT');
    expect(body.fx).toEqual({ base: 'USD', quote: 'KZT', rate: new Decimal(kzt.rate!).toFixed(8), as_of: kzt.as_of, source: 'steam-implied' });
    const prices = Object.fromEntries(body.versions[0].sources.map((source: { source: string; price: string }) => [source.source, source.price]));
    expect(prices).toEqual({ skinport: times('10.00', kzt.rate!, 2), steam: times('12.34', kzt.rate!, 2) });
    for (const code of ['CLP', 'VND']) {
      const converted = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=${code}`));
      expect(converted.versions[0].sources.map((source: { price: string }) => source.price)).toContain(times('10.00', states.get(code)!.rate!, 0));
    }
  });

  test('ECB currencies are unchanged: fx.source "ecb" at the ECB rate', async () => {
    const body = await read(await keyed(`/v2/prices/${item.catalog_id}?currency=EUR`));
    expect(body.fx).toEqual({ base: 'USD', quote: 'EUR', rate: '0.92302012', as_of: '2026-11-24', source: 'ecb' });
    expect(body.versions[0].sources.find((source: { source: string }) => source.source === 'skinport').price).toBe('9.23');
    const usd = await read(await keyed(`/v2/prices/${item.catalog_id}`));
    expect(usd.fx).toBeUndefined();
  });

  test('a Steam currency not offered is a 503 naming the reason; an unknown code stays a 400 listing what is offered', async () => {
    const kwd = await keyed(`/v2/prices/${item.catalog_id}?currency=KWD`);
    expect(kwd.status).toBe(503);
    expect(await errorOf(kwd)).toMatchObject({ code: 'fx_unavailable', message: expect.stringContaining('only 2 of 5 basket items') });
    const unknown = await keyed(`/v2/prices/${item.catalog_id}?currency=XYZ`);
    expect(unknown.status).toBe(400);
    const error = await errorOf(unknown);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('RUB');
    expect(error.message).not.toContain('KWD');
    expect((await keyless('/v1/prices?currency=KWD')).status).toBe(503);
  });
});
