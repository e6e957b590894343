import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import sharp from 'sharp';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { readSnapshotPage, storeInventorySnapshot } from '../../shared/gameplatform/inventory/snapshots.ts';
import type { InventoryPage } from '../../shared/gameplatform/inventory/steam-community.ts';
import { itemImage } from '../../shared/media/images/item-images.ts';
import { expectedColourOf } from '../fakes/images/server.ts';
import { inventoryOf } from '../fakes/steam/items.ts';
import { type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import type { InventoryFixture } from '../fakes/steam/types.ts';
import { createTestApp, sharedImageFake, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * docs/design.md §18 on inventories: each record carries the icon its own Steam description carries, and each
 * stored snapshot records the icons it saw per name and version (item_icons), first and last seen.
 */
let fake: SteamFake;
let t: TestApp;
let key: Record<string, string>;
const images = sharedImageFake().url;
let nextSteamId = 76561198000300000n;
const newOwner = () => String(nextSteamId++);
let nextAsset = 71_000_000_000n;

beforeAll(async () => {
  fake = await startSteamFake();
  t = createTestApp({ config: { STEAM_API_URL: fake.url, STEAM_COMMUNITY_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey } });
  await t.deps.ready();
  await syncCatalog(t.deps.sql, generateCatalog());
  key = (await workspaceWithKey(t)).keyHeaders;
});
afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const pagesOf = (fixture: InventoryFixture): InventoryPage[] => [
  { ...fixture, total_inventory_count: fixture.assets.length, more_items: 0, success: 1 } as unknown as InventoryPage,
];

function fixtureOf(owner: string, specs: Parameters<typeof inventoryOf>[1]): InventoryFixture {
  const fixture = inventoryOf(owner, specs, nextAsset);
  nextAsset -= 1_000n;
  return fixture;
}

async function iconRows(name: string) {
  return t.deps.sql<{ version: string; icon_url: string; first_seen_at: Date; last_seen_at: Date }[]>`
    select version, icon_url, first_seen_at, last_seen_at from item_icons where market_hash_name = ${name} order by first_seen_at, icon_url`;
}

describe('inventory records carry the asset’s own icon', () => {
  test('GET /v2/inventories: every record’s image is its description’s icon on STEAM_IMAGE_URL, and the fake serves it', async () => {
    const owner = newOwner();
    const fixture = fixtureOf(owner, [
      { item: 'AK-47 | Redline', wear: 0.25, seed: 1 },
      { item: 'Karambit | Doppler', phase: 'Ruby', wear: 0.01, seed: 2 },
      { item: 'Sticker | Crown (Foil)' },
    ]);
    fake.setInventory(owner, fixture);
    const response = await t.request(`/v2/inventories/${owner}`, { headers: key });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { class_id: string; instance_id: string; image: { url: string; source: string } | null }[] };
    const iconOf = new Map(fixture.descriptions.map((description) => [`${description.classid}_${description.instanceid}`, description.icon_url]));
    expect(body.data).toHaveLength(3);
    for (const asset of body.data) {
      expect(asset.image).toEqual({ url: `${images}/economy/image/${iconOf.get(`${asset.class_id}_${asset.instance_id}`)}`, source: 'steam' });
    }
    const png = await fetch(body.data[0]!.image!.url);
    expect(png.headers.get('content-type')).toBe('image/png');
    const { data, info } = await sharp(Buffer.from(await png.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    const at = (Math.floor(info.height * 0.4) * info.width + Math.floor(info.width / 2)) * info.channels;
    expect([data[at], data[at + 1], data[at + 2]]).toEqual([...expectedColourOf(body.data[0]!.image!.url).primary]);
  });

  test('a description without an icon falls back to cs2-lib’s image of the skin by wear', async () => {
    const owner = newOwner();
    const fixture = fixtureOf(owner, [{ item: 'AK-47 | Redline', wear: 0.5, seed: 3 }]);
    for (const description of fixture.descriptions) delete (description as { icon_url?: string }).icon_url;
    const snapshot = await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), new Date(), t.deps.config);
    const { rows } = await readSnapshotPage(t.deps.sql, snapshot.id, -1, 10, t.deps.config);
    const record = JSON.parse(rows[0]!.record) as { image: { url: string; source: string } };
    expect(record.image.source).toBe('cs2-lib');
    expect(record.image.url).toStartWith(`${images}/images/`);
    expect(record.image.url).toEndWith('_medium.webp');
  });

  test('records stored before images existed get cs2-lib’s image when read', async () => {
    const owner = newOwner();
    const snapshot = await storeInventorySnapshot(
      t.deps.sql,
      owner,
      pagesOf(fixtureOf(owner, [{ item: 'AK-47 | Redline', wear: 0.1, seed: 4 }])),
      new Date(),
      t.deps.config,
    );
    await t.deps.sql`update inventory_assets set record = record - 'image' where snapshot_id = ${snapshot.id}`;
    const { rows } = await readSnapshotPage(t.deps.sql, snapshot.id, -1, 10, t.deps.config);
    expect(rows[0]!.complete).toBe(false);
    expect((JSON.parse(rows[0]!.record) as { image: { url: string; source: string } }).image).toMatchObject({ source: 'cs2-lib' });
    expect((JSON.parse(rows[0]!.record) as { image: { url: string } }).image.url).toEndWith('_light.webp');
  });
});

describe('item_icons: the icons every snapshot saw', () => {
  test('stored per name and version (the paint index decides a Doppler phase), with first and last seen', async () => {
    const owner = newOwner();
    const fixture = fixtureOf(owner, [
      { item: 'Karambit | Doppler', phase: 'Phase 2', wear: 0.01, seed: 7 },
      { item: 'Karambit | Doppler', phase: 'Phase 2', wear: 0.02, seed: 8 },
      { item: 'Karambit | Doppler', phase: 'Sapphire', wear: 0.01, seed: 9 },
    ]);
    const name = fixture.descriptions[0]!.market_hash_name;
    // Icons unique to this test, so other suites' snapshots of the same names do not interfere.
    for (const description of fixture.descriptions) description.icon_url = `iconTest1${description.classid}`;
    const first = new Date('2030-01-01T00:00:00Z');
    await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), first, t.deps.config);
    const rows = (await iconRows(name)).filter((row) => row.icon_url.startsWith('iconTest1'));
    expect(rows.map((row) => row.version).sort()).toEqual(['phase-2', 'sapphire']);
    for (const row of rows) {
      expect(row.first_seen_at.toISOString()).toBe(first.toISOString());
      expect(row.last_seen_at.toISOString()).toBe(first.toISOString());
    }
    // Seen again within the hour: the row is left alone; two hours later last_seen_at moves, first_seen_at stays.
    await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), new Date('2030-01-01T00:30:00Z'), t.deps.config);
    expect((await iconRows(name)).filter((row) => row.icon_url.startsWith('iconTest1')).map((row) => row.last_seen_at.toISOString())).toEqual([
      first.toISOString(),
      first.toISOString(),
    ]);
    const later = new Date('2030-01-01T02:00:00Z');
    await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), later, t.deps.config);
    for (const row of (await iconRows(name)).filter((row) => row.icon_url.startsWith('iconTest1'))) {
      expect(row.first_seen_at.toISOString()).toBe(first.toISOString());
      expect(row.last_seen_at.toISOString()).toBe(later.toISOString());
    }
  });

  test('the catalog item’s image follows the newest icon: Valve’s update replaces it', async () => {
    const owner = newOwner();
    const fixture = fixtureOf(owner, [{ item: 'M4A1-S | Hyper Beast', wear: 0.3, seed: 10 }]);
    const name = fixture.descriptions[0]!.market_hash_name;
    const [catalog] = await t.deps.sql<{ catalog_id: string }[]>`select catalog_id from catalog_items where market_hash_name = ${name}`;
    // Steam's market search (another suite's ingest runs) records icons for every name it lists: start from none.
    await t.deps.sql`delete from item_icons where market_hash_name = ${name}`;
    expect((await itemImage(t.deps.sql, t.deps.config, catalog!.catalog_id))!.source).toBe('cs2-lib');
    fixture.descriptions[0]!.icon_url = 'hyperBeastBefore';
    await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), new Date('2030-02-01T00:00:00Z'), t.deps.config);
    expect(await itemImage(t.deps.sql, t.deps.config, catalog!.catalog_id)).toEqual({ url: `${images}/economy/image/hyperBeastBefore`, source: 'steam' });
    fixture.descriptions[0]!.icon_url = 'hyperBeastAfter';
    await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), new Date('2030-03-01T00:00:00Z'), t.deps.config);
    expect((await itemImage(t.deps.sql, t.deps.config, catalog!.catalog_id))!.url).toBe(`${images}/economy/image/hyperBeastAfter`);
  });

  test('an icon_url that is not a CDN path segment is neither stored nor shown', async () => {
    const owner = newOwner();
    const fixture = fixtureOf(owner, [{ item: 'AK-47 | Redline', wear: 0.2, seed: 11 }]);
    fixture.descriptions[0]!.icon_url = '../../evil?x=1';
    const snapshot = await storeInventorySnapshot(t.deps.sql, owner, pagesOf(fixture), new Date(), t.deps.config);
    const { rows } = await readSnapshotPage(t.deps.sql, snapshot.id, -1, 10, t.deps.config);
    expect((JSON.parse(rows[0]!.record) as { image: { source: string } }).image.source).toBe('cs2-lib');
    expect(await t.deps.sql`select 1 from item_icons where icon_url like '%evil%'`).toHaveLength(0);
  });
});
