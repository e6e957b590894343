import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { InventoryAsset } from '../../shared/gameplatform/inventory/asset-record.ts';
import { ensureInventorySnapshot } from '../../shared/gameplatform/inventory/snapshots.ts';
import { HOLDS_2026_STEAM_ID, inventoryOf, PUBLIC_STEAM_ID, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { capturingLog, createTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { inventoryPage } from './inventory-fixtures.ts';

/**
 * GET /v2/inventories (docs/design.md §11, §17) reading holds and protection: every text form the fake serves
 * (read with preserve_bbcode=1), protection on each record, and snapshots stored before the field.
 */

const clock = testClock();
let fake: SteamFake;
let t: TestApp;
let key: string;

beforeAll(async () => {
  fake = await startSteamFake();
  t = await createTestApp({ now: clock.now, config: { STEAM_API_URL: fake.url, STEAM_COMMUNITY_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey } });
  key = (await workspaceWithKey(t, { tier: 'enterprise', budgets: { minute: null, day: null } })).key;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const page = (id: string, query: Record<string, string> = {}) => inventoryPage(t, key, id, query);

/** 07:00 GMT `days` after the fake started (holds2026InventorySpecs's instants). */
function holdEnd(days: number): string {
  const end = new Date(Date.now() + days * 86_400_000);
  end.setUTCHours(7, 0, 0, 0);
  return end.toISOString();
}

describe('every hold and protection form, through the API', () => {
  let data: InventoryAsset[];
  beforeAll(async () => {
    data = (await page(HOLDS_2026_STEAM_ID, { refresh: 'true' })).data;
  });

  test('asks Steam with preserve_bbcode=1', () => {
    const calls = fake.requests.filter((request) => request.path === `/inventory/${HOLDS_2026_STEAM_ID}/730/2`);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((call) => call.query.preserve_bbcode === '1' && call.query.l === 'english' && call.query.count === '2000')).toBe(true);
  });

  test('each form gives its instant; protection says protected, why and until when', () => {
    // Steam order (newest first) is the spec order (data.ts holds2026InventorySpecs).
    const forms: unknown[] = data.map((asset) => ({ trade_hold_until: asset.trade_hold_until, protection: asset.protection, tradable: asset.tradable }));
    const notProtected = { protected: false, reason: null, until: null, context: 2 };
    expect(forms).toEqual([
      { trade_hold_until: holdEnd(7), protection: { protected: true, reason: 'trade_protected', until: holdEnd(7), context: 2 }, tradable: false },
      { trade_hold_until: holdEnd(6), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(5), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(4), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(3), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(2), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(1), protection: notProtected, tradable: false },
      { trade_hold_until: holdEnd(8), protection: { protected: true, reason: 'trade_protected', until: holdEnd(8), context: 2 }, tradable: false },
      { trade_hold_until: null, protection: { protected: true, reason: 'market_listing', until: null, context: 2 }, tradable: false },
      { trade_hold_until: null, protection: notProtected, tradable: true },
    ]);
  });

  test('an asset the fake protects leaves the public read (context 16; the snapshot says contexts [2]) and comes back when protection ends', async () => {
    const [assetId] = fake.assetIds(PUBLIC_STEAM_ID);
    const until = new Date(Math.floor(Date.now() / 1000) * 1000 + 5 * 86_400_000);
    fake.protectItems(PUBLIC_STEAM_ID, [assetId!], until);
    const hidden = await page(PUBLIC_STEAM_ID, { refresh: 'true' });
    expect(hidden.contexts).toEqual([2]);
    expect(hidden.data.map((record) => record.asset_id)).not.toContain(assetId!);
    fake.endTradeHolds(PUBLIC_STEAM_ID, [assetId!]);
    const free = (await page(PUBLIC_STEAM_ID, { refresh: 'true' })).data.find((record) => record.asset_id === assetId)!;
    expect(free.protection).toEqual({ protected: false, reason: null, until: null, context: 2 });
  });
});

describe('hold text no form reads', () => {
  test('keeps a null hold, is not an error, and the read logs how many assets had it', async () => {
    const owner = '76561198022222222';
    const fixture = inventoryOf(
      owner,
      [
        { item: 'AK-47 | Redline', wear: 0.2, seed: 3 },
        { item: 'AWP | Asiimov', wear: 0.3, seed: 4 },
      ],
      74_000_000_000n,
    );
    const [withoutDate] = fixture.descriptions;
    withoutDate!.owner_descriptions = [{ type: 'html', value: '⇆ This item is trade-protected and cannot be consumed, modified, or transferred.' }];
    fake.setInventory(owner, fixture);
    const { log, lines } = capturingLog();
    const { snapshot } = await ensureInventorySnapshot({ config: t.deps.config, sql: t.deps.sql, log, now: clock.now }, owner, { maxAgeSeconds: 0 });
    expect(snapshot.total_assets).toBe(2);
    const warned = lines
      .map((line) => JSON.parse(line) as { msg: string; unreadable_holds?: number })
      .filter((line) => line.msg === 'inventory hold text without a readable instant');
    expect(warned).toEqual([expect.objectContaining({ unreadable_holds: 1, steam_id: owner })]);
    const record = (await page(owner)).data.find((asset) => asset.class_id === withoutDate!.classid)!;
    expect(record.trade_hold_until).toBeNull();
    expect(record.protection).toEqual({ protected: true, reason: 'trade_protected', until: null, context: 2 });
  });
});

describe('snapshots stored before protection existed', () => {
  test('their records are served with protection as read from context 2, not protected (never stored back)', async () => {
    const steamId = '76561198011111111';
    const snapshotId = crypto.randomUUID();
    const record = {
      asset_id: '123',
      class_id: '1',
      instance_id: '0',
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      catalog_id: null,
      name: 'AK-47 | Redline',
      type: 'Classified Rifle',
      tradable: false,
      marketable: false,
      trade_hold_until: '2030-01-01T07:00:00.000Z',
      item: null,
      state: {},
      insights: { phase: null },
      certificate: null,
      inspect_link: null,
    };
    await t.deps.sql`insert into inventory_snapshots (id, steam_id, fetched_at, total_assets) values (${snapshotId}, ${steamId}, ${clock.now()}, 1)`;
    await t.deps
      .sql`insert into inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record) values (${snapshotId}, 0, '123', false, null, ${t.deps.sql.json(record)})`;
    const body = await page(steamId);
    expect(body.snapshot_id).toBe(snapshotId);
    expect(body.data[0]).toMatchObject({
      asset_id: '123',
      trade_hold_until: '2030-01-01T07:00:00.000Z',
      protection: { protected: false, reason: null, until: null, context: 2 },
      value: null,
    });
    const [stored] = await t.deps.sql<{ has: boolean }[]>`select record ? 'protection' as has from inventory_assets where snapshot_id = ${snapshotId}`;
    expect(stored!.has).toBe(false);
  });
});
