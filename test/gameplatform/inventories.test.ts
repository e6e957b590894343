import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { brotliDecompressSync } from 'node:zlib';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { convertUsd } from '../../shared/fx/convert.ts';
import { findLatestRates } from '../../shared/fx/repository.ts';
import type { InventoryAsset } from '../../shared/gameplatform/inventory/asset-record.ts';
import { parseTradeHold } from '../../shared/gameplatform/inventory/holds.ts';
import { type CertificateInput, encodeCertificate } from '../../shared/inspect/index.ts';
import { PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import type { InventoryFixture } from '../fakes/steam/server.ts';
import { BIG_STEAM_ID, EMPTY_STEAM_ID, PRIVATE_STEAM_ID, PUBLIC_STEAM_ID, type SteamFake, startSteamFake, UNKNOWN_STEAM_ID } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, eventually, scratchTestApp, seedFreshFxRates, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

/** GET /v2/inventories/{gameplatform_id} (docs/design.md §11) over real Postgres and Redis, Steam played by the fake. */

const clock = testClock();
let fake: SteamFake;
let t: TestApp;
let key: string;
const TTL_MS = 300_000;

type Page = {
  steam_id: string;
  snapshot_id: string;
  fetched_at: string;
  stale: boolean;
  total_assets: number;
  data: InventoryAsset[];
  next_cursor: string | null;
};

beforeAll(async () => {
  fake = await startSteamFake();
  t = await scratchTestApp({
    tag: 'inventories',
    now: clock.now,
    config: { STEAM_API_URL: fake.url, STEAM_COMMUNITY_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey },
  });
  // The whole catalog, so every real name of the fake's inventories has its catalog_id.
  await syncCatalog(t.deps.sql, generateCatalog());
  key = (await workspaceWithKey(t, { tier: 'enterprise', budgets: { minute: null, day: null } })).key;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const inventoryCalls = (steamId: string) => fake.requests.filter((request) => request.path.startsWith(`/inventory/${steamId}/`));

function get(id: string, query: Record<string, string> = {}, apiKey: string | null = key, app: TestApp = t) {
  const search = new URLSearchParams(query).toString();
  return app.request(`/v2/inventories/${encodeURIComponent(id)}${search ? `?${search}` : ''}`, { headers: apiKey ? { 'x-api-key': apiKey } : {} });
}

async function page(id: string, query: Record<string, string> = {}): Promise<Page> {
  const response = await get(id, query);
  if (response.status !== 200) throw new Error(`inventory failed: ${response.status} ${await response.text()}`);
  expect(response.headers.get('content-type')).toStartWith('application/json');
  return (await response.json()) as Page;
}

async function catalogIdOf(name: string): Promise<string> {
  const [row] = await t.deps.sql<{ catalog_id: string }[]>`select catalog_id from catalog_items where market_hash_name = ${name}`;
  if (!row) throw new Error(`not in the catalog: ${name}`);
  return row.catalog_id;
}

/**
 * The fake's rich inventory, with the certificates of a few assets replaced by ones made with our
 * encoder (shared/inspect), so the expected state is known here exactly.
 */
async function richInventory(owner: string): Promise<number> {
  const raw = (await (await fetch(`${fake.url}/inventory/${PUBLIC_STEAM_ID}/730/2?l=english&count=2000`)).json()) as InventoryFixture;
  const names = new Map(raw.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d.market_hash_name]));
  const nameOf = (assetId: string) => {
    const asset = raw.assets.find((a) => a.assetid === assetId)!;
    return names.get(`${asset.classid}_${asset.instanceid}`) ?? '';
  };
  const counts = new Map<string, number>();
  const nth = (kind: string) => {
    const seen = counts.get(kind) ?? 0;
    counts.set(kind, seen + 1);
    return seen;
  };
  const certificateFor = (assetId: string): CertificateInput | undefined => {
    const name = nameOf(assetId);
    let input: CertificateInput | undefined;
    if (name === 'AK-47 | Redline (Field-Tested)' && nth('redline') === 0) {
      input = {
        item: { definition_index: 7 },
        state: {
          paint_index: 282,
          paint_seed: 661,
          wear: 0.25,
          stickers: [
            { slot: 0, sticker_id: 76, offset_x: 0.125, offset_y: -0.5 },
            { slot: 1, sticker_id: 180, wear: 0.25 },
            { slot: 2, sticker_id: 1800, wear: 0.5, rotation: 15 },
          ],
          charms: [{ slot: 0, charm_id: 1, pattern: 47123, offset_x: 1.5, offset_y: 0.25, offset_z: -2.75 }],
        },
      };
    } else if (name.includes('Printstream')) {
      const seen = nth('printstream');
      input = {
        item: { definition_index: 60 },
        state: {
          paint_index: 984,
          paint_seed: 12,
          wear: 0.125,
          stattrak: { value: seen === 0 ? 1337 : 0 },
          ...(seen === 0 ? { name_tag: 'Printer go brrr' } : {}),
        },
      };
    } else if (name.includes('Karambit | Doppler')) {
      const seen = nth('doppler');
      input = { item: { definition_index: 507 }, state: { paint_index: [419, 415, 417][seen] ?? 418, paint_seed: 412, wear: 0.0125 } };
    }
    return input;
  };
  for (const entry of raw.asset_properties) {
    const input = certificateFor(entry.assetid);
    if (!input) continue;
    const certificate = encodeCertificate({ item: input.item, state: input.state }, { key: 0x70 });
    entry.asset_properties = entry.asset_properties.map((property) =>
      property.propertyid === 6 ? { ...property, string_value: certificate } : property,
    ) as typeof entry.asset_properties;
  }
  fake.setInventory(owner, raw);
  return raw.assets.length;
}

describe('GET /v2/inventories/{gameplatform_id}: the rich inventory', () => {
  const OWNER = '76561198000000111';
  let body: Page;
  let upstreamCount: number;
  const byName = (name: string) => body.data.filter((asset) => asset.market_hash_name === name);

  beforeAll(async () => {
    upstreamCount = await richInventory(OWNER);
    body = await page(OWNER);
  });

  test('answers one record per asset, in upstream order, with catalog ids for known names', () => {
    expect(body.steam_id).toBe(OWNER);
    expect(body.stale).toBe(false);
    expect(body.total_assets).toBe(upstreamCount);
    expect(body.data).toHaveLength(upstreamCount);
    expect(body.next_cursor).toBeNull();
    expect(new Set(body.data.map((asset) => asset.asset_id)).size).toBe(upstreamCount);
    for (const asset of body.data) {
      expect(Object.keys(asset).sort()).toEqual(
        [
          'asset_id',
          'catalog_id',
          'certificate',
          'class_id',
          'image',
          'insights',
          'inspect_link',
          'instance_id',
          'item',
          'market_hash_name',
          'marketable',
          'name',
          'protection',
          'state',
          'tradable',
          'trade_hold_until',
          'type',
          'value',
        ].sort(),
      );
      expect(asset.value).toBeNull();
      if (!asset.market_hash_name?.includes('Coin')) expect(asset.catalog_id).toStartWith('itm_');
    }
    // The game's certificate is kept as is and the inspect link carries it.
    expect(body.data.filter((asset) => asset.certificate).every((asset) => asset.inspect_link?.endsWith(asset.certificate!))).toBe(true);
  });

  test('reads stickers with offsets and a charm with its pattern from the certificate', () => {
    const [redline] = byName('AK-47 | Redline (Field-Tested)').filter((asset) => asset.state.stickers);
    expect(redline).toBeDefined();
    expect(redline!.item).toEqual({ family: 'weapon', definition_index: 7 });
    expect(redline!.state.paint_index).toBe(282);
    expect(redline!.state.paint_seed).toBe(661);
    expect(redline!.state.wear).toBe(0.25);
    expect(redline!.state.stickers).toEqual([
      { slot: 0, sticker_id: 76, offset_x: 0.125, offset_y: -0.5 },
      { slot: 1, sticker_id: 180, wear: 0.25 },
      { slot: 2, sticker_id: 1800, wear: 0.5, rotation: 15 },
    ]);
    expect(redline!.state.charms).toEqual([{ slot: 0, charm_id: 1, pattern: 47123, offset_x: 1.5, offset_y: 0.25, offset_z: -2.75 }]);
    // %propid:6% replaced by the certificate.
    expect(redline!.inspect_link).toBe(`steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20${redline!.certificate}`);
  });

  test('reads StatTrak (including a counter at 0) and a name tag', () => {
    const printstreams = body.data.filter((asset) => asset.market_hash_name?.includes('Printstream'));
    const tagged = printstreams.find((asset) => asset.state.name_tag === 'Printer go brrr');
    expect(tagged?.state.stattrak).toEqual({ value: 1337 });
    expect(printstreams.some((asset) => asset.state.stattrak?.value === 0)).toBe(true);
  });

  test('parses "Tradable/Marketable After … GMT" into trade_hold_until and leaves it null otherwise', () => {
    const awp = byName('AWP | Asiimov (Field-Tested)')[0]!;
    expect(awp.tradable).toBe(false);
    expect(awp.trade_hold_until).toMatch(/T07:00:00\.000Z$/);
    const days = (new Date(awp.trade_hold_until!).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6);
    expect(days).toBeLessThan(8);
    const blaze = body.data.find((asset) => asset.market_hash_name?.startsWith('Desert Eagle | Blaze'))!;
    expect(blaze.tradable).toBe(false);
    expect(blaze.trade_hold_until).toBeNull();
    expect(byName('AK-47 | Redline (Field-Tested)')[0]!.trade_hold_until).toBeNull();
    expect(parseTradeHold([{ value: 'Tradable After Jun 20, 2025 (7:00:00) GMT' }])).toBe('2025-06-20T07:00:00.000Z');
    expect(parseTradeHold([{ value: 'Tradable After Feb 30, 2025 (7:00:00) GMT' }, { value: 'nothing' }])).toBeNull();
  });

  test('values assets at a marketplace’s latest price as decimal strings, Doppler phases at their phase version', async () => {
    const redlineId = await catalogIdOf('AK-47 | Redline (Field-Tested)');
    const dopplerId = await catalogIdOf('★ Karambit | Doppler (Factory New)');
    const insert = (catalogId: string, version: string, price: string) => t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogId}, 'skinport', ${version}, ${price}::numeric, now(), now(), ${crypto.randomUUID()})`;
    await insert(redlineId, 'default', '12.30');
    await insert(dopplerId, 'default', '700.00');
    await insert(dopplerId, 'phase-2', '1234.567');
    await insert(dopplerId, 'ruby', '9876543210.12');
    const valued = await page(OWNER, { valuation: 'skinport' });
    const values = new Map(valued.data.map((asset) => [asset.asset_id, asset.value]));
    for (const asset of valued.data.filter((a) => a.market_hash_name === 'AK-47 | Redline (Field-Tested)')) {
      expect(values.get(asset.asset_id)).toMatchObject({ marketplace: 'skinport', price: '12.30', currency: 'USD' });
    }
    const dopplers = valued.data.filter((asset) => asset.market_hash_name === '★ Karambit | Doppler (Factory New)');
    expect(dopplers.map((asset) => asset.value?.price ?? null)).toEqual(['1234.567', '9876543210.12']);
    // A Black Pearl with no price of its phase has no price (never the default's): docs/design.md §14's one rule.
    const blackPearl = valued.data.find((asset) => asset.state.paint_index === 417)!;
    expect(blackPearl.catalog_id).toStartWith('itm_');
    expect(blackPearl.value).toMatchObject({ marketplace: 'skinport', price: null });
    expect(blackPearl.value!.unpriced).toContain('item');
    // The same page valued at a marketplace without prices: no item has a price, and each says so.
    const unvalued = (await page(OWNER, { valuation: 'csfloat' })).data;
    expect(unvalued.every((asset) => asset.value!.price === null && asset.value!.unpriced.includes('item'))).toBe(true);
    // Without valuation there is no value at all.
    expect((await page(OWNER, {})).data.every((asset) => asset.value === null)).toBe(true);
  });

  test('valuation in another currency: every amount of each value converted once, fx at the top; 400 for a bad currency', async () => {
    await seedFreshFxRates(t.deps.sql);
    const rates = (await findLatestRates(t.deps.sql))!;
    const currency = rates.rates.has('JPY') ? 'JPY' : 'EUR';
    const usd = await page(OWNER, { valuation: 'skinport' });
    const converted = (await page(OWNER, { valuation: 'skinport', currency })) as Page & { currency: string; fx: { quote: string } };
    expect(converted.currency).toBe(currency);
    expect(converted.fx.quote).toBe(currency);
    usd.data.forEach((asset, index) => {
      const value = asset.value!;
      const other = converted.data[index]!.value!;
      expect(other.currency).toBe(currency);
      expect(other.price).toBe(value.price === null ? null : convertUsd(value.price, rates, currency));
      expect(other.total).toBe(convertUsd(value.total, rates, currency));
      expect(other.stickers_total).toBe(convertUsd(value.stickers_total, rates, currency));
      expect(other.unpriced).toEqual(value.unpriced);
    });
    expect((await get(OWNER, { valuation: 'skinport', currency: 'eur' })).status).toBe(400);
  });

  test('answers 400 for an unknown marketplace, limit out of range, or a tampered cursor', async () => {
    const queries: Record<string, string>[] = [{ valuation: 'ebay' }, { limit: '0' }, { limit: '1001' }, { cursor: 'not.a.cursor' }, { refresh: 'yes' }];
    for (const query of queries) {
      const response = await get(PUBLIC_STEAM_ID, query);
      expect(response.status).toBe(400);
    }
  });
});

describe('GET /v2/inventories/{gameplatform_id}: paging a 5 000-asset inventory', () => {
  test('fetches three upstream pages by start_assetid, then pages by our cursor with no skips or repeats, pinned to one snapshot', async () => {
    const first = await page(BIG_STEAM_ID, { limit: '1000' });
    const calls = inventoryCalls(BIG_STEAM_ID);
    expect(calls).toHaveLength(3);
    expect(calls.map((call) => call.query.count)).toEqual(['2000', '2000', '2000']);
    expect(calls[0]!.query.start_assetid).toBeUndefined();
    expect(calls[1]!.query.start_assetid).toBeDefined();
    expect(calls[2]!.query.start_assetid).toBeDefined();
    expect(first.total_assets).toBe(5000);

    // A refresh between pages makes a new snapshot; the cursor keeps paging the first one.
    const refreshed = await page(BIG_STEAM_ID, { refresh: 'true', limit: '1' });
    expect(refreshed.snapshot_id).not.toBe(first.snapshot_id);
    expect(inventoryCalls(BIG_STEAM_ID)).toHaveLength(6);

    const ids = first.data.map((asset) => asset.asset_id);
    let cursor = first.next_cursor;
    let pages = 1;
    while (cursor) {
      const next = await page(BIG_STEAM_ID, { limit: pages % 2 ? '700' : '1000', cursor });
      expect(next.snapshot_id).toBe(first.snapshot_id);
      ids.push(...next.data.map((asset) => asset.asset_id));
      cursor = next.next_cursor;
      pages += 1;
    }
    expect(ids).toHaveLength(5000);
    expect(new Set(ids).size).toBe(5000);
    expect(pages).toBe(6);
    // Upstream order is kept.
    const upstream: string[] = [];
    for (let start: string | undefined; ; ) {
      const raw = (await (
        await fetch(`${fake.url}/inventory/${BIG_STEAM_ID}/730/2?l=english&count=2000${start ? `&start_assetid=${start}` : ''}`)
      ).json()) as InventoryFixture & { last_assetid?: string };
      upstream.push(...raw.assets.map((asset) => asset.assetid));
      if (!raw.last_assetid) break;
      start = raw.last_assetid;
    }
    expect(ids).toEqual(upstream);
    // The default page size is 500.
    expect((await page(BIG_STEAM_ID)).data).toHaveLength(500);
  });

  test('refuses a cursor used for another inventory', async () => {
    const first = await page(BIG_STEAM_ID, { limit: '2' });
    const response = await get(PUBLIC_STEAM_ID, { cursor: first.next_cursor! });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_cursor');
  });
});

describe('GET /v2/inventories/{gameplatform_id}: caching and upstream failures', () => {
  const OWNER = '76561198000000321';

  test('serves a fresh snapshot from Postgres without calling Steam, and fetches again after INVENTORY_TTL_SECONDS', async () => {
    fake.setInventory(OWNER, (await import('../fakes/steam/server.ts')).bigInventory(OWNER, 30));
    const first = await page(OWNER);
    expect(inventoryCalls(OWNER)).toHaveLength(1);
    const again = await page(OWNER);
    expect(again.snapshot_id).toBe(first.snapshot_id);
    expect(inventoryCalls(OWNER)).toHaveLength(1);
    clock.advance(TTL_MS + 1_000);
    const later = await page(OWNER);
    expect(later.snapshot_id).not.toBe(first.snapshot_id);
    expect(later.stale).toBe(false);
    expect(inventoryCalls(OWNER)).toHaveLength(2);
  });

  test('serves the cached snapshot with stale: true when Steam answers 5xx or a long 429', async () => {
    const cached = await page(OWNER);
    clock.advance(TTL_MS + 1_000);
    for (const failure of [{ status: 500 }, { status: 429, retryAfter: 120 }]) {
      fake.failNext('inventory', failure);
      const body = await page(OWNER);
      expect(body.stale).toBe(true);
      expect(body.snapshot_id).toBe(cached.snapshot_id);
      expect(body.data).toHaveLength(30);
    }
  });

  test('answers 503 upstream_unavailable with Retry-After when Steam fails and no snapshot exists', async () => {
    const owner = '76561198000000654';
    fake.setInventory(owner, (await import('../fakes/steam/server.ts')).bigInventory(owner, 3));
    fake.failNext('inventory', { status: 429, retryAfter: 120 });
    const throttled = await get(owner);
    expect(throttled.status).toBe(503);
    expect(throttled.headers.get('retry-after')).toBe('120');
    expect((await errorOf(throttled)).code).toBe('upstream_unavailable');
    fake.failNext('inventory', { status: 503 });
    const failed = await get(owner);
    expect(failed.status).toBe(503);
    expect(Number(failed.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  test('waits out a short Retry-After and answers 200', async () => {
    const owner = '76561198000000987';
    fake.setInventory(owner, (await import('../fakes/steam/server.ts')).bigInventory(owner, 3));
    fake.failNext('inventory', { status: 429, retryAfter: 1 });
    const started = performance.now();
    const body = await page(owner);
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(body.data).toHaveLength(3);
    expect(inventoryCalls(owner)).toHaveLength(2);
  });

  test('answers 403 inventory_private, 404 inventory_not_found, and 200 with no data for an empty inventory', async () => {
    const privateResponse = await get(PRIVATE_STEAM_ID);
    expect(privateResponse.status).toBe(403);
    expect((await errorOf(privateResponse)).code).toBe('inventory_private');
    const missing = await get(UNKNOWN_STEAM_ID);
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('inventory_not_found');
    const empty = await page(EMPTY_STEAM_ID);
    expect(empty.data).toEqual([]);
    expect(empty.total_assets).toBe(0);
    expect(empty.next_cursor).toBeNull();
  });

  test('answers 400 invalid_gameplatform_id before any upstream call, 401 without a key, 403 without inventory:read', async () => {
    const before = fake.requests.length;
    const invalid = await get('[g:1:4]');
    expect(invalid.status).toBe(400);
    expect((await errorOf(invalid)).code).toBe('invalid_gameplatform_id');
    expect(fake.requests.length).toBe(before);
    expect((await get(PUBLIC_STEAM_ID, {}, null)).status).toBe(401);
    const profilesOnly = await workspaceWithKey(t, { scopes: ['profiles:read'] });
    const forbidden = await get(PUBLIC_STEAM_ID, {}, profilesOnly.key);
    expect(forbidden.status).toBe(403);
    expect((await errorOf(forbidden)).code).toBe('insufficient_scope');
  });
});

describe('GET /v2/inventories/{gameplatform_id}: the per-process cache (PRICE_CACHE_MS)', () => {
  const OWNER = '76561198000000777';
  let cached: TestApp;
  let cachedKey: string;

  beforeAll(async () => {
    fake.setInventory(OWNER, (await import('../fakes/steam/server.ts')).bigInventory(OWNER, 30));
    // A second API process over the same database, with the cache on; `t` (cache off) answers from Postgres.
    cached = createTestApp({
      now: clock.now,
      config: {
        DATABASE_URL: t.deps.config.DATABASE_URL,
        PRICE_CACHE_MS: '60000',
        STEAM_API_URL: fake.url,
        STEAM_COMMUNITY_URL: fake.url,
        STEAM_WEB_API_KEY: fake.apiKey,
      },
    });
    cachedKey = (await workspaceWithKey(cached, { tier: 'enterprise', budgets: { minute: null, day: null } })).key;
  });

  afterAll(() => cached?.close());

  async function cachedText(query: Record<string, string>): Promise<string> {
    const response = await get(OWNER, query, cachedKey, cached);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toStartWith('application/json');
    return response.text();
  }
  async function uncachedText(query: Record<string, string>): Promise<string> {
    const response = await get(OWNER, query);
    expect(response.status).toBe(200);
    return response.text();
  }

  test('a cached valued page answers what Postgres holds until prices change, then the new values after an invalidation or a price-snapshot announcement', async () => {
    const query = { limit: '10', valuation: 'steam' };
    const first = await cachedText(query);
    expect(await uncachedText(query)).toBe(first);
    const assets = (JSON.parse(first) as Page).data;
    expect(assets.every((asset) => asset.value!.price === null)).toBe(true);
    // An item valued at its `default` version (a Doppler would be valued at its phase).
    const target = assets.find((asset) => asset.catalog_id !== null && !asset.market_hash_name?.includes('Doppler'))!;
    const catalogId = target.catalog_id!;
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogId}, 'steam', 'default', '4.56'::numeric, now(), now(), ${crypto.randomUUID()})`;
    // Within PRICE_CACHE_MS and before any announcement, the cached page is served as rendered.
    expect(await cachedText(query)).toBe(first);
    const repriced = await uncachedText(query);
    expect((JSON.parse(repriced) as Page).data.find((asset) => asset.asset_id === target.asset_id)!.value).toMatchObject({
      marketplace: 'steam',
      price: '4.56',
      currency: 'USD',
    });

    cached.deps.inventories.clear();
    expect(await cachedText(query)).toBe(repriced);

    await t.deps.sql`update latest_prices set price = '7.89'::numeric where catalog_id = ${catalogId} and source = 'steam' and version = 'default'`;
    expect(await cachedText(query)).toBe(repriced);
    // An ingest run's snapshot announcement drops valued pages in every API process.
    const announced = await eventually(async () => {
      await cached.deps.redis.publish(PRICE_SNAPSHOT_CHANNEL, '0');
      const text = await cachedText(query);
      return text !== repriced ? text : undefined;
    }, 5_000);
    expect(announced).toBe(await uncachedText(query));
    expect((JSON.parse(announced) as Page).data.some((asset) => asset.value?.price === '7.89')).toBe(true);
  });

  test('a client that accepts br or gzip gets the cached page compressed, the same JSON as identity', async () => {
    const path = `/v2/inventories/${OWNER}?limit=20`;
    const identity = await cachedText({ limit: '20' });
    for (const [accept, coding] of [
      ['br', 'br'],
      ['gzip', 'gzip'],
      ['gzip, br;q=0', 'gzip'],
      ['identity', null],
    ] as const) {
      const response = await cached.request(path, { headers: { 'x-api-key': cachedKey, 'accept-encoding': accept } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-encoding')).toBe(coding);
      expect(response.headers.get('vary')).toContain('Accept-Encoding');
      const bytes = new Uint8Array(await response.arrayBuffer());
      const text =
        coding === 'br'
          ? brotliDecompressSync(bytes).toString()
          : coding === 'gzip'
            ? Buffer.from(Bun.gunzipSync(bytes)).toString()
            : Buffer.from(bytes).toString();
      expect(text).toBe(identity);
    }
  });

  test('cached pages never mix snapshots: a cursor keeps its snapshot after a refresh, new pages come from the new one, stale is computed per request', async () => {
    const first = JSON.parse(await cachedText({ limit: '10' })) as Page;
    const second = JSON.parse(await cachedText({ limit: '10', cursor: first.next_cursor! })) as Page;
    expect(second.snapshot_id).toBe(first.snapshot_id);

    const refreshed = JSON.parse(await cachedText({ limit: '10', refresh: 'true' })) as Page;
    expect(refreshed.snapshot_id).not.toBe(first.snapshot_id);
    // This process stored the new snapshot: its next pages come from it at once, never from the cached old one.
    const latestText = await cachedText({ limit: '10' });
    const latest = JSON.parse(latestText) as Page;
    expect(latest.snapshot_id).toBe(refreshed.snapshot_id);
    expect(await uncachedText({ limit: '10' })).toBe(latestText);
    const latestSecond = JSON.parse(await cachedText({ limit: '10', cursor: latest.next_cursor! })) as Page;
    expect(latestSecond.snapshot_id).toBe(refreshed.snapshot_id);
    // The old cursor, at the same position and limit, still pages the old snapshot.
    const oldSecond = await cachedText({ limit: '10', cursor: first.next_cursor! });
    expect(JSON.parse(oldSecond)).toEqual(second);
    expect(await uncachedText({ limit: '10', cursor: first.next_cursor! })).toBe(oldSecond);

    // Older than INVENTORY_TTL_SECONDS with Steam failing: the same cached page, marked stale.
    clock.advance(TTL_MS + 1_000);
    try {
      fake.failNext('inventory', { status: 500, times: 2 });
      const staleText = await cachedText({ limit: '10' });
      expect(staleText).toBe(await uncachedText({ limit: '10' }));
      expect(JSON.parse(staleText)).toEqual({ ...latest, stale: true });
    } finally {
      clock.advance(-(TTL_MS + 1_000));
    }
    expect((JSON.parse(await cachedText({ limit: '10' })) as Page).stale).toBe(false);
  });
});
