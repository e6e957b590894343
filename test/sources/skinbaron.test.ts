import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { recordFxSuccess, saveRateDays } from '../../shared/fx/repository.ts';
import { createRequestRedis, type Redis } from '../../shared/platform/redis.ts';
import { forgetCachedRates } from '../../shared/prices/currency.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { requestBudgetKeys, sourceBudgetPrefix } from '../../shared/sources/budget.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { enabledSources, unavailableSources } from '../../shared/sources/settings.ts';
import { ingestPool } from '../../workers/ingest/index.ts';
import { runSourceIngest } from '../../workers/ingest/run.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, eventually, scratchTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';

/**
 * Skinbaron end to end (docs/design.md §14): simulator → ingest (EUR → USD at the newest stored rates) →
 * Postgres → GET /v2/prices/{id} and the keyless lists, each skinbaron entry carrying its EUR
 * `original`, which `?currency=` leaves alone; no rates → a failed run and nothing stored; no key →
 * not enabled (absent from /health, `unavailable` in /v2/status). A database of its own, so "no rates
 * stored yet" and every skinbaron row are this suite's.
 */

const AK = 'AK-47 | Redline (Field-Tested)';
const KARAMBIT = '★ Karambit | Doppler (Factory New)';
const KEY = 'skinbaron-test-key-0123456789';
const START = new Date('2031-03-03T12:00:00Z');
const INTERVAL_MS = 300_000;

let t: TestApp;
let simulator: MarketSimulator;
let redis: Redis;
let akId: string;
let clock = START.getTime();
const now = () => new Date(clock);

beforeAll(async () => {
  simulator = startMarketSimulator({
    items: [
      { market_hash_name: AK, phases: [] },
      { market_hash_name: KARAMBIT, phases: ['phase-2', 'ruby'] },
    ],
    // Skinbaron pins are EUR, written as is: 27.95 EUR and 612 EUR (the Karambit's phase rows carry a doppler class).
    prices: {
      [AK]: { default: { price: '30.00', sources: { skinbaron: '27.95' } } },
      [KARAMBIT]: { default: { price: '700.00', sources: { skinbaron: '612' } } },
    },
    now,
  });
  t = await scratchTestApp({
    tag: 'skinbaron',
    now,
    // Its own QUEUE_PREFIX, under which the source's request budget and Retry-After block live: no
    // other suite's skinbaron runs (or 429s) can refuse this suite's.
    config: {
      SOURCES: 'skinbaron',
      SOURCE_SKINBARON_KEY: KEY,
      SOURCE_SKINBARON_URL: `${simulator.url}/skinbaron`,
      QUEUE_PREFIX: `skinbaron${crypto.randomUUID().slice(0, 8)}`,
    },
  });
  const catalog = generateCatalog().filter((item) => item.market_hash_name === AK || item.market_hash_name === KARAMBIT);
  expect(catalog).toHaveLength(2);
  await syncCatalog(t.deps.sql, catalog);
  akId = catalog.find((item) => item.market_hash_name === AK)!.catalog_id;
  redis = createRequestRedis(t.deps.config.REDIS_URL, 'skinbaron-test');
  await eventually(async () => (redis.status === 'ready' ? true : undefined));
});

afterAll(async () => {
  const budget = requestBudgetKeys(sourceBudgetPrefix(t.deps.config.QUEUE_PREFIX), 'skinbaron');
  await redis.del(budget.window, budget.blocked);
  redis.disconnect();
  await simulator.stop();
  await t.close();
});

/** One skinbaron run in the next interval's slot. */
async function run() {
  clock += INTERVAL_MS;
  return runSourceIngest({ sql: t.deps.sql, redis, config: t.deps.config, log: t.deps.log, now }, ADAPTERS.skinbaron, now());
}

async function storeRates(date: string, usd: string): Promise<void> {
  await saveRateDays(
    t.deps.sql,
    [
      {
        date,
        rates: new Map([
          ['USD', usd],
          ['GBP', '0.84290'],
          ['JPY', '162.41'],
        ]),
      },
    ],
    now(),
  );
  await recordFxSuccess(t.deps.sql, now(), 0);
  forgetCachedRates(t.deps.sql);
}

type SourceEntry = { source: string; price: string; original?: { price: string; currency: string } };

describe('skinbaron: EUR stored as USD with its original', () => {
  test('without stored rates the run fails, is recorded, asks nothing upstream and stores nothing', async () => {
    const outcome = await run();
    expect(outcome).toMatchObject({ status: 'failed' });
    expect((outcome as { error: string }).error).toContain('no exchange rates stored');
    expect(simulator.requestCount('skinbaron')).toBe(0);
    const [source] = await t.deps.sql<
      { last_success_at: Date | null; last_error: string }[]
    >`select last_success_at, last_error from price_sources where name = 'skinbaron'`;
    expect(source!.last_success_at).toBeNull();
    expect(source!.last_error).toContain('no exchange rates stored');
    const [runs] = await t.deps.sql<{ failed: number }[]>`select count(*)::int as failed from ingest_runs where source = 'skinbaron' and status = 'failed'`;
    expect(runs!.failed).toBe(1);
    const [stored] = await t.deps.sql<{ latest: number; observations: number }[]>`
      select (select count(*)::int from latest_prices where source = 'skinbaron') as latest,
             (select count(*)::int from price_observations where source = 'skinbaron') as observations`;
    expect(stored).toEqual({ latest: 0, observations: 0 });
    // Enabled (the key is set) and never succeeded: /health answers 503 for it.
    const health = await t.request('/health');
    expect(health.status).toBe(503);
    expect(((await health.json()) as { sources: Record<string, { status: string }> }).sources.skinbaron!.status).toBe('never_succeeded');
  });

  test('with rates: EUR × rate(USD) half-even to cents, the EUR kept beside it; unchanged runs write nothing', async () => {
    await storeRates('2031-03-02', '1.0834');
    const first = await run();
    expect(first).toMatchObject({ status: 'succeeded', written: 2, skipped: 0, unknownNames: 0 });
    expect(simulator.lastRequest('skinbaron')?.headers['x-requested-with']).toBe('XMLHttpRequest');
    const latest = await t.deps.sql<{ version: string; price: string; original_price: string; original_currency: string }[]>`
      select l.version, l.price::text as price, l.original_price::text as original_price, l.original_currency
      from latest_prices l where l.source = 'skinbaron' order by l.price`;
    // 27.95 × 1.0834 = 30.281030; 612 × 1.0834 = 663.0408; only `default` versions.
    expect([...latest]).toEqual([
      { version: 'default', price: '30.28', original_price: '27.95', original_currency: 'EUR' },
      { version: 'default', price: '663.04', original_price: '612', original_currency: 'EUR' },
    ]);
    const observations = await t.deps.sql<{ price: string; original_price: string }[]>`
      select price::text as price, original_price::text as original_price from price_observations where source = 'skinbaron' order by price`;
    expect([...observations]).toEqual([
      { price: '30.28', original_price: '27.95' },
      { price: '663.04', original_price: '612' },
    ]);
    const again = await run();
    expect(again).toMatchObject({ status: 'succeeded', written: 0 });
  });

  test('newer rates reprice the same EUR: 27.95 × 1.1 = 30.745 → 30.74 (half-even)', async () => {
    await storeRates('2031-03-03', '1.1');
    expect(await run()).toMatchObject({ status: 'succeeded', written: 2, changed: 2 });
    const [ak] = await t.deps.sql<{ price: string; original_price: string }[]>`
      select price::text as price, original_price::text as original_price from latest_prices where source = 'skinbaron' and catalog_id = ${akId}`;
    expect(ak).toEqual({ price: '30.74', original_price: '27.95' });
  });

  test('GET /v2/prices/{id}: the source entry carries original, and ?currency= converts the price but never it', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'], tier: 'pro' });
    const entryOf = async (query: string) => {
      const response = await t.request(`/v2/prices/${akId}${query}`, { headers: ws.keyHeaders });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { currency: string; versions: { version: string; sources: SourceEntry[] }[] };
      return {
        currency: body.currency,
        entry: body.versions.find((version) => version.version === 'default')!.sources.find((source) => source.source === 'skinbaron')!,
      };
    };
    const usd = await entryOf('');
    expect(usd.currency).toBe('USD');
    expect(usd.entry).toMatchObject({ price: '30.74', original: { price: '27.95', currency: 'EUR' } });
    // USD → EUR: 30.74 × 1 / 1.1 = 27.9454… → 27.95; the original is the upstream's own 27.95, untouched.
    const eur = await entryOf('?currency=EUR');
    expect(eur.currency).toBe('EUR');
    expect(eur.entry).toMatchObject({ price: '27.95', original: { price: '27.95', currency: 'EUR' } });
    // USD → GBP: 30.74 × 0.84290 / 1.1 = 23.5551… → 23.56.
    const gbp = await entryOf('?currency=GBP');
    expect(gbp.entry).toMatchObject({ price: '23.56', original: { price: '27.95', currency: 'EUR' } });
  });

  test('GET /v1/prices and /v1/prices/{name}: original in the skinbaron entry, unchanged by ?currency=', async () => {
    await buildPriceSnapshot(t.deps.sql, now());
    let address = 0;
    const keyless = (path: string) => t.request(path, { headers: { 'x-forwarded-for': `203.0.113.${(address += 1)}` } });
    type ListBody = { currency: string; items: { market_hash_name: string; sources: Record<string, SourceEntry> }[] };
    const list = await eventually(
      async () => {
        const response = await keyless('/v1/prices?source=skinbaron');
        if (response.status !== 200) return undefined;
        const body = (await response.json()) as ListBody;
        return body.items.some((item) => item.market_hash_name === AK) ? body : undefined;
      },
      15_000,
      100,
    );
    const ak = list.items.find((item) => item.market_hash_name === AK)!;
    expect(ak.sources.skinbaron).toMatchObject({ price: '30.74', original: { price: '27.95', currency: 'EUR' } });
    const everything = (await (await keyless('/v1/prices')).json()) as ListBody;
    expect(everything.items.find((item) => item.market_hash_name === AK)!.sources.skinbaron!.original).toEqual({ price: '27.95', currency: 'EUR' });
    const inGbp = (await (await keyless('/v1/prices?currency=GBP')).json()) as ListBody;
    expect(inGbp.currency).toBe('GBP');
    expect(inGbp.items.find((item) => item.market_hash_name === AK)!.sources.skinbaron).toMatchObject({
      price: '23.56',
      original: { price: '27.95', currency: 'EUR' },
    });
    const one = (await (await keyless(`/v1/prices/${encodeURIComponent(AK)}?currency=JPY`)).json()) as {
      versions: { version: string; sources: Record<string, SourceEntry> }[];
    };
    // 30.74 × 162.41 / 1.1 = 4538.6… → 4539 (JPY has no minor units).
    expect(one.versions[0]!.sources.skinbaron).toMatchObject({ price: '4539', original: { price: '27.95', currency: 'EUR' } });
  });
});

describe('skinbaron without a key', () => {
  test('not enabled: no schedule, absent from GET /health, `unavailable` with the reason in /v2/status (not degraded)', async () => {
    const withoutKey = testConfig({ SOURCES: 'skinport,skinbaron' });
    expect(enabledSources(withoutKey)).toEqual(['skinport']);
    expect(unavailableSources(withoutKey)).toEqual([{ name: 'skinbaron', reason: expect.stringContaining('SOURCE_SKINBARON_KEY') }]);
    const schedules = (config: ReturnType<typeof testConfig>) =>
      (typeof ingestPool.schedules === 'function' ? ingestPool.schedules(config) : []).map((schedule) => schedule.id);
    expect(schedules(withoutKey)).not.toContain('ingest-skinbaron');
    expect(schedules(testConfig({ SOURCES: 'skinport,skinbaron', SOURCE_SKINBARON_KEY: 'k' }))).toContain('ingest-skinbaron');
    // Not named in SOURCES: neither enabled nor listed.
    expect(unavailableSources(testConfig({ SOURCES: 'skinport' }))).toEqual([]);

    const app = createTestApp({ config: { SOURCES: 'skinbaron' } });
    try {
      const health = (await (await app.request('/health')).json()) as { sources: Record<string, unknown> };
      expect(health.sources).toEqual({});
      await eventually(async () => (app.deps.redis.status === 'ready' ? true : undefined));
      const status = (await (await app.request('/v2/status')).json()) as {
        degraded: string[];
        components: { sources: Record<string, Record<string, unknown>> };
      };
      expect(status.components.sources.skinbaron).toEqual({
        status: 'unavailable',
        reason: expect.stringContaining('SOURCE_SKINBARON_KEY is not set'),
        updated_at: null,
        unknown_names: null,
        rows_skipped: null,
      });
      expect(status.degraded).not.toContain('sources.skinbaron');
    } finally {
      await app.close();
    }
  });
});
