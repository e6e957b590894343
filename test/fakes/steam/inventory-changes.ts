/**
 * Changes to a fake inventory between reads, as they happen on Steam (docs/design.md §15's inventory watch
 * is tested against them): items arrive (a drop, a purchase, a trade received: new asset ids,
 * listed first, as Steam lists newest first), leave (sold, traded away), come back from a trade
 * under a new asset id (Steam gives every traded item a new one, and the certificate's item id with
 * it), items come under trade protection (docs/design.md §17), and holds and protection end (the description
 * loses its "Tradable/Marketable After" or protection line and `sealed`, and the item becomes
 * tradable and marketable, under a new instance id as Steam gives every distinct description).
 *
 * Each change builds a new fixture object (community-inventory.ts indexes fixtures by identity), and
 * asset ids come from one counter per fake, above every fixture's, so they never collide.
 */
import { CEconItemPreviewDataBlock } from '@csfloat/cs2-inspect-serializer';
import { resolveInventory } from './community-inventory.ts';
import { buildItem, certificateHex, holdFields, type ItemSpec } from './items.ts';
import type { FakeState } from './state.ts';
import type { InventoryFixture, SteamAsset, SteamAssetProperties, SteamDescription } from './types.ts';

export class FakeInventoryError extends Error {}

function inventoryOfOwner(state: FakeState, steamId64: string): InventoryFixture {
  const inventory = resolveInventory(state, steamId64);
  if (inventory === undefined || inventory === 'private' || inventory === 'not_found') throw new FakeInventoryError(`no public inventory for ${steamId64}`);
  return inventory;
}

function nextAssetId(state: FakeState): string {
  state.nextAssetId += 1n;
  return String(state.nextAssetId);
}

function withoutUnusedDescriptions(fixture: InventoryFixture): InventoryFixture {
  const used = new Set(fixture.assets.map((asset) => `${asset.classid}_${asset.instanceid}`));
  const seen = new Set<string>();
  const descriptions = fixture.descriptions.filter((d) => {
    const key = `${d.classid}_${d.instanceid}`;
    if (!used.has(key) || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return { ...fixture, descriptions };
}

/** The asset ids of an inventory, in Steam's order (newest first). */
export function assetIdsOf(state: FakeState, steamId64: string): string[] {
  return inventoryOfOwner(state, steamId64).assets.map((asset) => asset.assetid);
}

/** New items, listed first; returns their asset ids in the order of `specs`. */
export function addItems(state: FakeState, steamId64: string, specs: readonly ItemSpec[]): string[] {
  const current = inventoryOfOwner(state, steamId64);
  const built = specs.map((spec) => buildItem(spec, nextAssetId(state), steamId64));
  const next: InventoryFixture = {
    assets: [...built.map((item) => item.asset).reverse(), ...current.assets],
    descriptions: [...current.descriptions, ...built.map((item) => item.description)],
    asset_properties: [...built.flatMap((item) => (item.properties ? [item.properties] : [])).reverse(), ...current.asset_properties],
  };
  state.inventories.set(steamId64, withoutUnusedDescriptions(next));
  return built.map((item) => item.asset.assetid);
}

/** Items gone from the inventory (sold, traded away); unknown ids are an error. */
export function removeItems(state: FakeState, steamId64: string, assetIds: readonly string[]): void {
  const current = inventoryOfOwner(state, steamId64);
  const gone = new Set(assetIds);
  for (const id of gone)
    if (!current.assets.some((asset) => asset.assetid === id)) throw new FakeInventoryError(`asset ${id} is not in ${steamId64}'s inventory`);
  state.inventories.set(
    steamId64,
    withoutUnusedDescriptions({
      assets: current.assets.filter((asset) => !gone.has(asset.assetid)),
      descriptions: current.descriptions,
      asset_properties: current.asset_properties.filter((entry) => !gone.has(entry.assetid)),
    }),
  );
}

/** The certificate of the same item under a new item id (the mask key kept). */
function rekeyedCertificate(hex: string, itemId: string): string {
  const bytes = Buffer.from(hex, 'hex');
  const key = bytes[0]!;
  const unmasked = bytes.map((byte) => byte ^ key);
  const block = CEconItemPreviewDataBlock.fromBinary(unmasked.subarray(1, unmasked.length - 4));
  return certificateHex({ ...block, itemid: BigInt(itemId) }, key);
}

/**
 * The same items back under new asset ids (a trade away and back, a trade-up of ownership): each
 * keeps its description, seed, wear and stickers; its certificate carries the new item id. Returns
 * the new ids in the order of `assetIds`; the items move to the top of the list.
 */
export function tradeItems(state: FakeState, steamId64: string, assetIds: readonly string[]): string[] {
  const current = inventoryOfOwner(state, steamId64);
  const renamed = new Map<string, string>();
  for (const id of assetIds) {
    if (!current.assets.some((asset) => asset.assetid === id)) throw new FakeInventoryError(`asset ${id} is not in ${steamId64}'s inventory`);
    renamed.set(id, nextAssetId(state));
  }
  const moved: SteamAsset[] = [];
  const kept: SteamAsset[] = [];
  for (const asset of current.assets) {
    const newId = renamed.get(asset.assetid);
    if (newId) moved.push({ ...asset, assetid: newId });
    else kept.push(asset);
  }
  const properties: SteamAssetProperties[] = current.asset_properties.map((entry) => {
    const newId = renamed.get(entry.assetid);
    if (!newId) return entry;
    const asset_properties = entry.asset_properties.map((property) =>
      property.propertyid === 6 ? { ...property, string_value: rekeyedCertificate(property.string_value, newId) } : property,
    );
    return { ...entry, assetid: newId, asset_properties };
  });
  state.inventories.set(steamId64, { assets: [...moved.reverse(), ...kept], descriptions: current.descriptions, asset_properties: properties });
  return assetIds.map((id) => renamed.get(id)!);
}

/**
 * Items put under trade protection until `until` (docs/design.md §17; default 7 days from now, as a trade
 * received today): moved to context 16 (gone from the public read, seen with the owner's token),
 * `sealed: 1`, untradable, with the protection line; asset ids stay, each gets a new instance id (Steam gives every distinct description one). endTradeHolds lifts it.
 */
export function protectItems(state: FakeState, steamId64: string, assetIds: readonly string[], until = new Date(Date.now() + 7 * 86_400_000)): void {
  const current = inventoryOfOwner(state, steamId64);
  const protecting = new Set(assetIds);
  for (const id of protecting)
    if (!current.assets.some((asset) => asset.assetid === id)) throw new FakeInventoryError(`asset ${id} is not in ${steamId64}'s inventory`);
  const descriptions = new Map(current.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d]));
  const added: SteamDescription[] = [];
  const assets = current.assets.map((asset) => {
    if (!protecting.has(asset.assetid)) return asset;
    const free = descriptions.get(`${asset.classid}_${asset.instanceid}`);
    if (!free) return asset;
    const instanceid = `${free.instanceid}16${Math.floor(until.getTime() / 1000)}`;
    const { market_actions: _listable, ...rest } = free;
    const sealed: SteamDescription = { ...rest, instanceid, tradable: 0, marketable: 0, ...holdFields({ protectedUntil: until }) };
    if (!descriptions.has(`${sealed.classid}_${instanceid}`)) {
      descriptions.set(`${sealed.classid}_${instanceid}`, sealed);
      added.push(sealed);
    }
    return { ...asset, contextid: '16' as const, instanceid };
  });
  const properties = current.asset_properties.map((entry) => (protecting.has(entry.assetid) ? { ...entry, contextid: '16' as const } : entry));
  state.inventories.set(steamId64, withoutUnusedDescriptions({ assets, descriptions: [...current.descriptions, ...added], asset_properties: properties }));
}

/** Trade holds and protection over: the items become tradable and marketable, back in context 2; asset ids stay. */
export function endTradeHolds(state: FakeState, steamId64: string, assetIds: readonly string[]): void {
  const current = inventoryOfOwner(state, steamId64);
  const ending = new Set(assetIds);
  const descriptions = new Map(current.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d]));
  const added: SteamDescription[] = [];
  const assets = current.assets.map((asset) => {
    if (!ending.has(asset.assetid)) return asset;
    const held = descriptions.get(`${asset.classid}_${asset.instanceid}`);
    if (!held) return asset;
    const owner = (held.owner_descriptions ?? []).filter(
      (line) => !/Tradable(\/Marketable)? After|trade-protected|listed on the Steam Community Market/.test(line.value),
    );
    const instanceid = `${held.instanceid}1`;
    const { owner_descriptions: _dropped, sealed: _sealed, sealed_type: _sealedType, item_expiration: _expiration, ...rest } = held;
    const free: SteamDescription = {
      ...rest,
      instanceid,
      tradable: 1,
      marketable: 1,
      ...(owner.some((line) => line.value.trim() !== '') ? { owner_descriptions: owner } : {}),
    };
    if (!descriptions.has(`${free.classid}_${free.instanceid}`)) {
      descriptions.set(`${free.classid}_${free.instanceid}`, free);
      added.push(free);
    }
    return { ...asset, contextid: '2' as const, instanceid };
  });
  const properties = current.asset_properties.map((entry) => (ending.has(entry.assetid) ? { ...entry, contextid: '2' as const } : entry));
  state.inventories.set(steamId64, withoutUnusedDescriptions({ assets, descriptions: [...current.descriptions, ...added], asset_properties: properties }));
}

/** The owner makes the inventory private (403 null) or public again, its items unchanged. */
export function setInventoryVisibility(state: FakeState, steamId64: string, visibility: 'public' | 'private'): void {
  if (visibility === 'private') {
    if (state.hiddenInventories.has(steamId64)) return;
    state.hiddenInventories.set(steamId64, inventoryOfOwner(state, steamId64));
    state.inventories.set(steamId64, 'private');
    return;
  }
  const hidden = state.hiddenInventories.get(steamId64);
  if (!hidden) return;
  state.hiddenInventories.delete(steamId64);
  state.inventories.set(steamId64, hidden);
}
