import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import type { InventoryAsset } from '../../shared/gameplatform/inventory/asset-record.ts';
import { normaliseInventory } from '../../shared/gameplatform/inventory/normalise.ts';
import type { InventoryPage } from '../../shared/gameplatform/inventory/steam-community.ts';
import { decodeCertificate, encodeCertificate, itemInsights } from '../../shared/inspect/index.ts';
import { INSPECT_LINK, type InventoryFixture, STEAM_2026_GERMAN_STEAM_ID, STEAM_2026_STEAM_ID, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { errorOf, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';
import { type InventoryPageBody, inventoryPage } from './inventory-fixtures.ts';

/**
 * GET /v2/inventories/{id} on inventories as Steam sends them since 2025 (docs/design.md §14 "Name tags and
 * charms as Steam sends them today", docs/design.md §11), over real Postgres and Redis with the Steam fake's
 * STEAM_2026_* fixtures (test/fakes/steam/data.ts, steam2026InventorySpecs): the name tag as
 * property 5, charm patterns as property 3 and in asset_accessories, German property names, the
 * legacy S…A…D… inspect action, and the certificate winning wherever it has the value.
 */

let fake: SteamFake;
let t: TestApp;
let key: string;

beforeAll(async () => {
  fake = await startSteamFake();
  t = await scratchTestApp({
    tag: 'inventory_2026',
    config: { STEAM_API_URL: fake.url, STEAM_COMMUNITY_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey },
  });
  // The whole catalog, so the legacy item (no certificate) is identified by its market name.
  await syncCatalog(t.deps.sql, generateCatalog());
  key = (await workspaceWithKey(t, { tier: 'enterprise', budgets: { minute: null, day: null } })).key;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const page = (id: string, query: Record<string, string> = {}) => inventoryPage(t, key, id, query);

/** The fake's raw page, as Steam would send it. */
async function raw(id: string): Promise<InventoryFixture> {
  return (await (await fetch(`${fake.url}/inventory/${id}/730/2?l=english&count=2000`)).json()) as InventoryFixture;
}

describe('GET /v2/inventories: an inventory as Steam sends it since 2025', () => {
  let body: InventoryPageBody;
  // steam2026InventorySpecs, in order (Steam's order is kept).
  const at = (position: number) => body.data[position]!;

  beforeAll(async () => {
    body = await page(STEAM_2026_STEAM_ID);
  });

  test('reads the name tag from property 5 when the certificate has none', async () => {
    const printstream = at(1);
    expect(printstream.market_hash_name).toBe('StatTrak™ M4A1-S | Printstream (Minimal Wear)');
    expect(decodeCertificate(printstream.certificate!).state.name_tag).toBeUndefined();
    expect(printstream.state.name_tag).toBe('Brasil 2026 ✓');
    expect(printstream.state.stattrak).toEqual({ value: 7 });
    expect(at(6).state.name_tag).toBe('Rubin');
    // The fake really sends it as property 5, and nowhere else but the description.
    const properties = (await raw(STEAM_2026_STEAM_ID)).asset_properties.find((entry) => entry.assetid === printstream.asset_id)!;
    expect(properties.asset_properties.find((property) => property.propertyid === 5)).toMatchObject({ string_value: 'Brasil 2026 ✓' });
  });

  test('reads an attached charm’s pattern from asset_accessories, and a standalone charm’s from property 3', () => {
    const redline = at(0);
    expect(redline.market_hash_name).toBe('AK-47 | Redline (Field-Tested)');
    // The certificate names the charm and its offsets but no pattern; the stickers stay as it says.
    expect(decodeCertificate(redline.certificate!).state.charms).toEqual([{ slot: 0, charm_id: 24, offset_x: 1.5, offset_y: 0.25, offset_z: -2.75 }]);
    expect(redline.state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 31337, offset_x: 1.5, offset_y: 0.25, offset_z: -2.75 }]);
    expect(redline.state.stickers).toEqual([
      { slot: 0, sticker_id: 37, wear: 0.125 },
      { slot: 1, sticker_id: 76 },
    ]);
    const standalone = at(3);
    expect(standalone.item).toEqual({ family: 'charm', definition_index: 1355 });
    expect(decodeCertificate(standalone.certificate!).state.charms).toEqual([{ slot: 0, charm_id: 24 }]);
    expect(standalone.state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 777 }]);
  });

  test('the certificate wins where it has the value: name tag, standalone pattern, attached pattern', () => {
    const glock = at(2);
    expect(glock.market_hash_name).toBe('Glock-18 | Fade (Factory New)');
    expect(glock.state.name_tag).toBe('from the certificate');
    expect(at(4).state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 1234 }]);
    expect(at(7).state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 47123, offset_x: 0, offset_y: 0, offset_z: 0 }]);
  });

  test('fills the legacy S…A…D… inspect action with owner and asset id; the state comes from properties 1 and 2 and the catalog', () => {
    const awp = at(5);
    expect(awp.market_hash_name).toBe('AWP | Asiimov (Field-Tested)');
    expect(awp.certificate).toBeNull();
    expect(awp.inspect_link).toMatch(
      new RegExp(`^steam://rungame/730/76561202255233023/\\+csgo_econ_action_preview%20S${STEAM_2026_STEAM_ID}A${awp.asset_id}D\\d+$`),
    );
    expect(awp.item).toEqual({ family: 'weapon', definition_index: 9 });
    expect(awp.state).toEqual({ paint_index: 279, paint_seed: 100, wear: Math.fround(0.2801) });
    expect(awp.insights).toEqual({ phase: null, fade_percentage: null, float: { wear_name: 'Field-Tested', min: 0.18, max: 1, percentile: '0.1221' } });
    // Every other item carries the 2025 form with its certificate.
    expect(body.data.filter((asset) => asset !== awp).every((asset) => asset.inspect_link === INSPECT_LINK.replace('%propid:6%', asset.certificate!))).toBe(
      true,
    );
  });

  test('a legacy link from a record is refused by inspect decode with 400 invalid_link (it needs the game coordinator)', async () => {
    const response = await t.request('/v2/inspect/decode', { method: 'POST', headers: { 'x-api-key': key }, json: { link: at(5).inspect_link } });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_link');
  });

  test('stores insights beside item and state on every record (docs/design.md §14)', async () => {
    expect(at(6).insights).toEqual({ phase: 'ruby', fade_percentage: null, float: { wear_name: 'Factory New', min: 0, max: 0.08, percentile: '0.1088' } });
    expect(at(2).insights).toEqual({ phase: null, fade_percentage: '86.9', float: { wear_name: 'Factory New', min: 0, max: 0.08, percentile: '0.3737' } });
    for (const asset of body.data) {
      expect(asset.insights).toEqual(itemInsights(asset.item, asset.state));
      expect(asset.state).not.toHaveProperty('insights');
    }
    const [row] = await t.deps.sql<{ missing: number }[]>`
      select count(*)::int as missing from inventory_assets where snapshot_id = ${body.snapshot_id} and not (record ? 'insights')`;
    expect(row!.missing).toBe(0);
  });

  test('parses German property names exactly as English ones (only propertyid is read)', async () => {
    const german = await raw(STEAM_2026_GERMAN_STEAM_ID);
    const names = new Set(german.asset_properties.flatMap((entry) => entry.asset_properties.map((property) => property.name)));
    expect(names).toContain('Namensschild');
    expect(names).not.toContain('Name Tag');
    const germanBody = await page(STEAM_2026_GERMAN_STEAM_ID);
    const comparable = (asset: InventoryAsset) => ({
      name: asset.market_hash_name,
      item: asset.item,
      state: asset.state,
      insights: asset.insights,
      legacy: asset.certificate === null,
    });
    expect(germanBody.data.map(comparable)).toEqual(body.data.map(comparable));
    expect(germanBody.data[1]!.state.name_tag).toBe('Brasil 2026 ✓');
  });
});

describe('GET /v2/inventories: odd property and accessory data', () => {
  const OWNER = '76561198000000226';
  const AK = { item: { definition_index: 7 }, state: { paint_index: 282, paint_seed: 7, wear: 0.25, charms: [{ slot: 0, charm_id: 24 }] } };

  test('ignores bad name tags, patterns and accessory shapes without failing, and reads a page-level asset_accessories list', async () => {
    const base = await raw(STEAM_2026_STEAM_ID);
    const redline = base.assets[0]!;
    const assets = [0, 1, 2, 3].map((i) => ({ ...redline, assetid: String(90_000_000_000 + i) }));
    const certificate = encodeCertificate(AK, { key: 0x21 });
    const entry = (assetid: string, extra: Record<string, unknown>, properties: unknown[] = []) => ({
      appid: 730,
      contextid: '2',
      assetid,
      asset_properties: [{ propertyid: 6, string_value: certificate, name: 'Item Certificate' }, ...properties],
      ...extra,
    });
    const fixture = {
      assets,
      descriptions: base.descriptions,
      asset_properties: [
        // Too long a name tag, an empty one; a pattern out of range; accessories that are not a list.
        entry(assets[0]!.assetid, { asset_accessories: 'garbage' }, [
          { propertyid: 5, string_value: 'x'.repeat(500), name: 'Name Tag' },
          { propertyid: 5, string_value: '', name: 'Name Tag' },
        ]),
        entry(assets[1]!.assetid, {
          asset_accessories: [
            null,
            5,
            { standalone_properties: 'x' },
            { standalone_properties: [{ propertyid: 3, int_value: '-1' }] },
            { standalone_properties: [{ propertyid: 3, int_value: '100001' }] },
          ],
        }),
        entry(
          assets[2]!.assetid,
          { asset_accessories: [{ classid: '1', standalone_properties: [{ propertyid: '3', int_value: 4242, name: 'Charm Template' }] }] },
          [{ propertyid: 5, string_value: 42, name: 'Name Tag' }],
        ),
        entry(assets[3]!.assetid, {}),
      ],
    } as unknown as InventoryFixture;
    fake.setInventory(OWNER, fixture);
    const body = await page(OWNER);
    expect(body.data).toHaveLength(4);
    const [tooLong, badAccessories, numeric] = body.data;
    expect(tooLong!.state.name_tag).toBeUndefined();
    expect(tooLong!.state.charms).toEqual([{ slot: 0, charm_id: 24 }]);
    expect(badAccessories!.state.charms).toEqual([{ slot: 0, charm_id: 24 }]);
    // A numeric id and value are Steam's JSON numbers, read as such; a name tag must be a string.
    expect(numeric!.state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 4242 }]);
    expect(numeric!.state.name_tag).toBeUndefined();
    // Should Steam ever list accessories beside asset_properties (keyed by asset id) rather than in
    // each entry, as some clients describe it, they are read too; the fake sends the nested form.
    const pageLevel = {
      ...fixture,
      asset_accessories: [{ assetid: assets[3]!.assetid, classid: '1', standalone_properties: [{ propertyid: 3, int_value: '99' }] }],
    };
    const [record] = normaliseInventory(OWNER, [pageLevel as InventoryPage], new Map()).records.filter((asset) => asset.asset_id === assets[3]!.assetid);
    expect(record!.state.charms).toEqual([{ slot: 0, charm_id: 24, pattern: 99 }]);
  });

  test('a record stored before insights existed is answered with them, computed when read', async () => {
    const owner = '76561198000000227';
    fake.setInventory(owner, await raw(STEAM_2026_STEAM_ID));
    const before = await page(owner);
    await t.deps.sql`update inventory_assets set record = record - 'insights' where snapshot_id = ${before.snapshot_id}`;
    // Another limit is another rendered page (the per-process cache holds the first one).
    const after = await page(owner, { limit: '100' });
    expect(after.snapshot_id).toBe(before.snapshot_id);
    expect(after.data.map((asset) => asset.insights)).toEqual(before.data.map((asset) => asset.insights));
  });
});
