import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { OPERATIONS } from '../../shared/http/operations.ts';
import type { MarketplaceSummary, MarketSummary } from '../../shared/market/summary.ts';
import { TtlCache } from '../../shared/market/summary.ts';
import { PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import { createTestApp, errorOf, eventually, scratchTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

// The summary reads every latest price, so the suite has a database of its own.
const clock = testClock('2030-06-15T12:00:00.000Z');
let t: TestApp;
const NOW = clock.now();
const at = (secondsAgo: number) => new Date(NOW.getTime() - secondsAgo * 1000);

type Item = { name: string; type: string; weapon?: string; exterior?: string; rarity?: string };
const ITEMS = {
  ak: { name: 'AK-47 | Redline (Field-Tested)', type: 'weapon', weapon: 'AK-47', exterior: 'field-tested', rarity: 'classified' },
  awp: { name: 'AWP | Asiimov (Factory New)', type: 'weapon', weapon: 'AWP', exterior: 'factory-new', rarity: 'covert' },
  sticker: { name: 'Sticker | Crown (Foil)', type: 'sticker', rarity: 'mil-spec' },
  knife: { name: '★ Karambit | Doppler (Minimal Wear)', type: 'knife', weapon: 'Karambit', exterior: 'minimal-wear', rarity: 'covert' },
} satisfies Record<string, Item>;
const id = (item: Item) => catalogIdFor(item.name);

type Price = { item: Item; source: string; version?: string; price: string; quantity: number | null; source_time: Date };
/**
 * steam goes stale after 60 s, skinport after 600 s, csfloat and csmarket after the 600 s default;
 * every source succeeded at NOW. `legacy` is not a marketplace this deployment knows: never counted.
 */
const PRICES: Price[] = [
  { item: ITEMS.ak, source: 'skinport', price: '1.5', quantity: 3, source_time: at(30) },
  { item: ITEMS.ak, source: 'steam', price: '2.25', quantity: 10, source_time: at(120) }, // stale
  { item: ITEMS.ak, source: 'csfloat', price: '1.40', quantity: null, source_time: at(30) },
  { item: ITEMS.ak, source: 'legacy', price: '0.01', quantity: 5, source_time: at(30) },
  { item: ITEMS.awp, source: 'skinport', price: '100', quantity: 1, source_time: at(10) },
  { item: ITEMS.awp, source: 'steam', price: '99.99', quantity: null, source_time: at(60.5) }, // age 60: fresh
  { item: ITEMS.sticker, source: 'skinport', price: '0.03', quantity: 1000, source_time: at(5) },
  { item: ITEMS.sticker, source: 'steam', price: '0.05', quantity: 7, source_time: at(-5) }, // ahead of our clock: fresh
  { item: ITEMS.knife, source: 'csfloat', price: '250.5', quantity: 2, source_time: at(700) }, // stale
  { item: ITEMS.knife, source: 'skinport', version: 'ruby', price: '1500.00', quantity: 0, source_time: at(20) },
  // One of docs/design.md §13's marketplaces, above the lowest price of its item and without a listing count.
  { item: ITEMS.awp, source: 'csmarket', price: '120.000', quantity: null, source_time: at(15) },
];
/** docs/design.md §13's and 14's marketplaces without a price in this suite: listed with zeros, after the ones above. */
const QUIET = ['lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals', 'skinbaron'] as const;

async function insertItems(app: TestApp, items: Item[]) {
  for (const item of items) {
    await app.deps.sql`
      insert into catalog_items (catalog_id, market_hash_name, type, weapon, exterior, rarity)
      values (${id(item)}, ${item.name}, ${item.type}, ${item.weapon ?? null}, ${item.exterior ?? null}, ${item.rarity ?? null})`;
  }
}

async function insertPrices(app: TestApp, prices: Price[]) {
  for (const row of prices) {
    await app.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id)
      values (${id(row.item)}, ${row.source}, ${row.version ?? 'default'}, ${row.price}::numeric, ${row.quantity},
              ${row.source_time}, ${row.source_time}, ${crypto.randomUUID()})`;
  }
}

let key: string;

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'summary', now: clock.now });
  await insertItems(t, Object.values(ITEMS));
  await t.deps.sql`insert into price_sources (name, stale_after_seconds, last_success_at) values ('steam', 60, ${NOW}), ('skinport', 600, ${NOW})`;
  await t.deps.sql`insert into price_sources (name, last_success_at) values ('csfloat', ${NOW}), ('csmarket', ${NOW}), ('legacy', ${NOW})`;
  await insertPrices(t, PRICES);
  // Pro tier: each summary costs 5 units, more than the free minute budget allows over this suite.
  key = (await workspaceWithKey(t, { scopes: ['market:read'], tier: 'pro' })).key;
});
afterAll(() => t?.close());

function get(query: Record<string, string> = {}, apiKey: string | null = key, app: TestApp = t) {
  const search = new URLSearchParams(query).toString();
  return app.request(`/v2/market/summary${search ? `?${search}` : ''}`, { headers: apiKey ? { 'x-api-key': apiKey } : {} });
}

async function summary(query: Record<string, string> = {}, app: TestApp = t): Promise<MarketSummary> {
  const response = await get(query, key, app);
  if (response.status !== 200) throw new Error(`summary failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as MarketSummary;
}

const none = (marketplace: MarketplaceSummary['marketplace']): MarketplaceSummary => ({
  marketplace,
  items_priced: 0,
  lowest_price_sum: '0',
  listed_value_sum: '0',
  listings: 0,
  items_with_quantity: 0,
  oldest_source_time: null,
  newest_source_time: null,
});

describe('GET /v2/market/summary', () => {
  test('the whole market: totals take the lowest price across marketplaces; every marketplace in order', async () => {
    const body = await summary();
    expect(body).toEqual({
      as_of: NOW.toISOString(),
      currency: 'USD',
      marketplace: null,
      segment: null,
      value: null,
      fresh_only: false,
      totals: {
        // ak, awp, sticker, knife default and knife ruby.
        items_priced: 5,
        // 1.40 (csfloat ak) + 99.99 (steam awp) + 0.03 + 250.5 + 1500.00
        lowest_price_sum: '1851.92',
        listed_value_sum: '658.35',
        listings: 1023,
      },
      marketplaces: [
        {
          marketplace: 'skinport',
          items_priced: 4,
          lowest_price_sum: '1601.53',
          // 1.5×3 + 100×1 + 0.03×1000 + 1500.00×0
          listed_value_sum: '134.50',
          listings: 1004,
          items_with_quantity: 4,
          oldest_source_time: at(30).toISOString(),
          newest_source_time: at(5).toISOString(),
        },
        {
          marketplace: 'steam',
          items_priced: 3,
          lowest_price_sum: '102.29',
          listed_value_sum: '22.85',
          listings: 17,
          items_with_quantity: 2,
          oldest_source_time: at(120).toISOString(),
          newest_source_time: at(-5).toISOString(),
        },
        {
          marketplace: 'csfloat',
          items_priced: 2,
          lowest_price_sum: '251.90',
          listed_value_sum: '501.0',
          listings: 2,
          items_with_quantity: 1,
          oldest_source_time: at(700).toISOString(),
          newest_source_time: at(30).toISOString(),
        },
        {
          marketplace: 'csmarket',
          items_priced: 1,
          lowest_price_sum: '120.000',
          listed_value_sum: '0',
          listings: 0,
          items_with_quantity: 0,
          oldest_source_time: at(15).toISOString(),
          newest_source_time: at(15).toISOString(),
        },
        ...QUIET.map(none),
      ],
    });
  });

  test('fresh_only=true counts only prices within their source threshold (floor of the age; ahead of our clock is fresh)', async () => {
    const body = await summary({ fresh_only: 'true' });
    expect(body.fresh_only).toBe(true);
    // Gone: steam ak (120 s > 60 s) and csfloat knife (700 s > 600 s, the default threshold).
    expect(body.totals).toEqual({ items_priced: 4, lowest_price_sum: '1601.42', listed_value_sum: '134.85', listings: 1011 });
    expect(body.marketplaces[0]).toMatchObject({ marketplace: 'skinport', items_priced: 4, lowest_price_sum: '1601.53' });
    expect(body.marketplaces[1]).toEqual({
      marketplace: 'steam',
      items_priced: 2,
      lowest_price_sum: '100.04',
      listed_value_sum: '0.35',
      listings: 7,
      items_with_quantity: 1,
      oldest_source_time: at(60.5).toISOString(),
      newest_source_time: at(-5).toISOString(),
    });
    // Only prices without a quantity left: the sums of no rows are "0".
    expect(body.marketplaces[2]).toEqual({
      marketplace: 'csfloat',
      items_priced: 1,
      lowest_price_sum: '1.40',
      listed_value_sum: '0',
      listings: 0,
      items_with_quantity: 0,
      oldest_source_time: at(30).toISOString(),
      newest_source_time: at(30).toISOString(),
    });
    expect((await summary({ fresh_only: 'false' })).totals.items_priced).toBe(5);
  });

  test('freshness follows the clock: one second later the 60.5 s-old steam price is 61 s old and stale', async () => {
    clock.advance(1_000);
    try {
      const body = await summary({ fresh_only: 'true', marketplace: 'steam' });
      expect(body.as_of).toBe(new Date(NOW.getTime() + 1_000).toISOString());
      expect(body.totals).toEqual({ items_priced: 1, lowest_price_sum: '0.05', listed_value_sum: '0.35', listings: 7 });
    } finally {
      clock.set(NOW);
    }
  });

  test('marketplace narrows the totals and the breakdown to that marketplace', async () => {
    const body = await summary({ marketplace: 'steam' });
    expect(body.marketplace).toBe('steam');
    expect(body.totals).toEqual({ items_priced: 3, lowest_price_sum: '102.29', listed_value_sum: '22.85', listings: 17 });
    expect(body.marketplaces.map((m) => m.marketplace)).toEqual(['steam']);
    expect(body.marketplaces[0]).toMatchObject({ items_priced: 3, lowest_price_sum: '102.29' });
    // A docs/design.md §13 marketplace works the same way.
    const csmarket = await summary({ marketplace: 'csmarket' });
    expect(csmarket.totals).toEqual({ items_priced: 1, lowest_price_sum: '120.000', listed_value_sum: '0', listings: 0 });
    expect(csmarket.marketplaces.map((m) => m.marketplace)).toEqual(['csmarket']);
    expect((await summary({ marketplace: 'bitskins' })).totals).toEqual({ items_priced: 0, lowest_price_sum: '0', listed_value_sum: '0', listings: 0 });
  });

  test('segment=weapon keeps that weapon’s items', async () => {
    const body = await summary({ segment: 'weapon', value: 'AK-47' });
    expect({ segment: body.segment, value: body.value }).toEqual({ segment: 'weapon', value: 'AK-47' });
    expect(body.totals).toEqual({ items_priced: 1, lowest_price_sum: '1.40', listed_value_sum: '27.00', listings: 13 });
    expect(body.marketplaces.map((m) => [m.marketplace, m.items_priced, m.lowest_price_sum, m.listed_value_sum, m.listings])).toEqual([
      ['skinport', 1, '1.5', '4.5', 3],
      ['steam', 1, '2.25', '22.50', 10],
      ['csfloat', 1, '1.40', '0', 0],
      ['csmarket', 0, '0', '0', 0],
      ...QUIET.map((name) => [name, 0, '0', '0', 0]),
    ]);
  });

  test('segment=type lists marketplaces without prices in it with zeros, and combines with fresh_only', async () => {
    const body = await summary({ segment: 'type', value: 'knife' });
    expect(body.totals).toEqual({ items_priced: 2, lowest_price_sum: '1750.50', listed_value_sum: '501.00', listings: 2 });
    expect(body.marketplaces).toEqual([
      {
        marketplace: 'skinport',
        items_priced: 1,
        lowest_price_sum: '1500.00',
        listed_value_sum: '0.00',
        listings: 0,
        items_with_quantity: 1,
        oldest_source_time: at(20).toISOString(),
        newest_source_time: at(20).toISOString(),
      },
      none('steam'),
      {
        marketplace: 'csfloat',
        items_priced: 1,
        lowest_price_sum: '250.5',
        listed_value_sum: '501.0',
        listings: 2,
        items_with_quantity: 1,
        oldest_source_time: at(700).toISOString(),
        newest_source_time: at(700).toISOString(),
      },
      none('csmarket'),
      ...QUIET.map(none),
    ]);
    const fresh = await summary({ segment: 'type', value: 'knife', fresh_only: 'true' });
    expect(fresh.totals).toEqual({ items_priced: 1, lowest_price_sum: '1500.00', listed_value_sum: '0.00', listings: 0 });
    expect(fresh.marketplaces[2]).toEqual(none('csfloat'));
  });

  test('rarity and exterior segments, alone and with a marketplace', async () => {
    expect((await summary({ segment: 'rarity', value: 'covert', marketplace: 'steam' })).totals).toEqual({
      items_priced: 1,
      lowest_price_sum: '99.99',
      listed_value_sum: '0',
      listings: 0,
    });
    // Items without the attribute (the sticker has no exterior) belong to no value of it.
    expect((await summary({ segment: 'exterior', value: 'factory-new' })).totals).toEqual({
      items_priced: 1,
      lowest_price_sum: '99.99',
      listed_value_sum: '100',
      listings: 1,
    });
  });

  test('a segment without prices is all zeros', async () => {
    const body = await summary({ segment: 'type', value: 'agent' });
    expect(body.totals).toEqual({ items_priced: 0, lowest_price_sum: '0', listed_value_sum: '0', listings: 0 });
    expect(body.marketplaces).toEqual(['skinport', 'steam', 'csfloat', 'csmarket', ...QUIET].map((name) => none(name as MarketplaceSummary['marketplace'])));
  });

  test('debits the operation’s 5 units and carries RateLimit headers', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['market:read'] });
    const response = await get({}, ws.key);
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toContain('"minute";r=115;');
  });

  test('is listed as a production capability needing market:read, and documented in OpenAPI', async () => {
    const capabilities = (await (await t.request('/v2/meta/capabilities')).json()) as {
      capabilities: { operation: string; status: string; scopes: string[]; units: number }[];
    };
    expect(capabilities.capabilities.find((c) => c.operation === 'market.summary')).toMatchObject({ status: 'production', scopes: ['market:read'], units: 5 });
    expect(OPERATIONS.find((o) => o.id === 'market.summary')).toMatchObject({ built: 'production', dependsOn: ['redis'] });
    const openapi = (await (await t.request('/openapi.json')).json()) as {
      paths: Record<string, { get?: { tags?: string[]; parameters?: { name: string }[] } }>;
    };
    const operation = openapi.paths['/v2/market/summary']?.get;
    expect(operation?.tags).toEqual(['market']);
    expect(operation?.parameters?.map((p) => p.name).sort()).toEqual(['currency', 'fresh_only', 'marketplace', 'segment', 'value']);
  });
});

describe('GET /v2/market/summary errors', () => {
  async function expectInvalid(query: Record<string, string>, field: string, ...mentions: string[]) {
    const response = await get(query);
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(typeof error.request_id).toBe('string');
    expect(error.request_id).toBe(response.headers.get('x-request-id')!);
    const detail = error.details?.find((d) => d.field === field);
    expect(detail).toBeDefined();
    for (const mention of mentions) expect(`${error.message} ${detail!.message}`).toContain(mention);
  }

  test('an unknown marketplace is a 400 naming the allowed ones', async () => {
    await expectInvalid({ marketplace: 'buff163' }, 'query.marketplace', 'buff163', 'skinport, steam, csfloat');
    await expectInvalid({ marketplace: 'legacy' }, 'query.marketplace', 'skinport, steam, csfloat');
    await expectInvalid({ marketplace: '' }, 'query.marketplace');
  });

  test('an unknown segment is a 400 naming the segments', async () => {
    await expectInvalid({ segment: 'colour', value: 'red' }, 'query.segment', 'type, weapon, rarity, exterior');
  });

  test('segment without value, and value without segment, are 400s on value', async () => {
    await expectInvalid({ segment: 'weapon' }, 'query.value', 'required');
    await expectInvalid({ value: 'AK-47' }, 'query.value', 'segment');
  });

  test('an unknown value is a 400 listing the allowed values (fixed lists and the catalog’s weapons)', async () => {
    await expectInvalid({ segment: 'type', value: 'sword' }, 'query.value', 'weapon', 'knife', 'sticker');
    await expectInvalid({ segment: 'rarity', value: 'legendary' }, 'query.value', 'covert', 'mil-spec');
    await expectInvalid({ segment: 'exterior', value: 'Field-Tested' }, 'query.value', 'field-tested');
    await expectInvalid({ segment: 'weapon', value: 'AK47' }, 'query.value', '"AK-47"', '"AWP"', '"Karambit"');
  });

  test.each([['yes'], ['1'], ['TRUE'], ['']])('fresh_only=%p is a 400', async (value) => {
    await expectInvalid({ fresh_only: value }, 'query.fresh_only', 'true or false');
  });

  test('an unknown query parameter is a 400 naming it', async () => {
    await expectInvalid({ sort: 'price' }, 'query', 'sort');
    await expectInvalid({ marketplace: 'steam', limit: '10' }, 'query', 'limit');
  });

  test('a missing or unknown key is 401', async () => {
    for (const apiKey of [null, 'cs2_not-a-real-key']) {
      const response = await get({}, apiKey);
      expect(response.status).toBe(401);
      expect((await errorOf(response)).code).toBe('unauthorized');
    }
  });

  test('a key without market:read is 403 naming the scope', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['catalog:read'] });
    const response = await get({}, ws.key);
    expect(response.status).toBe(403);
    const error = await errorOf(response);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('market:read');
    expect(error.details).toEqual([{ field: 'scope', message: 'market:read' }]);
  });
});

describe('TtlCache', () => {
  function deferred<T>() {
    let resolve!: (value: T) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  test('concurrent misses share one load; the value lives for the TTL from when it loaded', async () => {
    let time = 1_000;
    const cache = new TtlCache<string>(500, 100, () => time);
    let loads = 0;
    const pending = deferred<string>();
    const load = () => {
      loads += 1;
      return pending.promise;
    };
    const [a, b] = [cache.get('k', load), cache.get('k', load)];
    time += 10_000; // still in flight: never expired
    const c = cache.get('k', load);
    pending.resolve('v1');
    expect(await Promise.all([a, b, c])).toEqual(['v1', 'v1', 'v1']);
    expect(loads).toBe(1);
    time += 499;
    expect(await cache.get('k', async () => 'v2')).toBe('v1');
    time += 1;
    expect(await cache.get('k', async () => 'v2')).toBe('v2');
    expect(await cache.get('other', async () => 'o')).toBe('o');
  });

  test('clear drops every entry; a failed load is not kept; a TTL of 0 always loads', async () => {
    const cache = new TtlCache<string>(60_000, 100, () => 0);
    expect(await cache.get('k', async () => 'v1')).toBe('v1');
    cache.clear();
    expect(cache.size).toBe(0);
    expect(await cache.get('k', async () => 'v2')).toBe('v2');
    await expect(cache.get('bad', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.get('bad', async () => 'ok')).toBe('ok');

    const off = new TtlCache<string>(0);
    expect(off.enabled).toBe(false);
    let loads = 0;
    await off.get('k', async () => `v${++loads}`);
    expect(await off.get('k', async () => `v${++loads}`)).toBe('v2');
    expect(off.size).toBe(0);
  });
});

// Last: it adds a price to the suite's database (and removes it again).
describe('the per-process summary cache', () => {
  test('serves the computed body within its TTL, keyed by the whole query, until a price snapshot is announced', async () => {
    const cached = createTestApp({ now: clock.now, config: { DATABASE_URL: t.deps.config.DATABASE_URL, PRICE_CACHE_MS: '60000' } });
    const extra: Item = { name: 'Sticker | Cache (Holo)', type: 'sticker', rarity: 'restricted' };
    try {
      const ws = await workspaceWithKey(cached, { scopes: ['market:read'], tier: 'pro' });
      const read = async (query: Record<string, string> = {}) => {
        const response = await get(query, ws.key, cached);
        expect(response.status).toBe(200);
        return (await response.json()) as MarketSummary;
      };
      const first = await read();
      expect(first.totals.items_priced).toBe(5);

      await insertItems(cached, [extra]);
      await insertPrices(cached, [{ item: extra, source: 'skinport', price: '2', quantity: 1, source_time: at(1) }]);
      clock.advance(5_000);
      // The same query within the TTL: the same body, as of when it was computed.
      expect(await read()).toEqual(first);
      // Another query is another entry, computed now.
      const fresh = await read({ fresh_only: 'true' });
      expect(fresh.totals.items_priced).toBe(5);
      expect(fresh.as_of).toBe(clock.now().toISOString());

      cached.deps.marketSummaries.clear();
      const recomputed = await read();
      expect(recomputed.totals).toMatchObject({ items_priced: 6, lowest_price_sum: '1853.92' });
      expect(recomputed.as_of).toBe(clock.now().toISOString());

      // An ingest run's snapshot announcement clears it in every API process.
      await cached.deps.sql`delete from latest_prices where catalog_id = ${id(extra)}`;
      expect((await read()).totals.items_priced).toBe(6);
      await eventually(async () => {
        await cached.deps.redis.publish(PRICE_SNAPSHOT_CHANNEL, '0');
        return (await read()).totals.items_priced === 5 ? true : undefined;
      }, 5_000);
    } finally {
      clock.set(NOW);
      await cached.deps.sql`delete from latest_prices where catalog_id = ${id(extra)}`;
      await cached.deps.sql`delete from catalog_items where catalog_id = ${id(extra)}`;
      await cached.close();
    }
  });
});
