import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { versionFromPhaseLabel } from '../../catalog/identity.ts';
import { kitCatalog } from '../../catalog/kit-catalog.ts';
import type { Config } from '../../platform/config.ts';
import type { Queryable } from '../../platform/db.ts';
import type { ItemImage } from './item-image-schema.ts';

/**
 * Item images (docs/design.md §18; docs/decisions.md "Item images"). An item's image, per catalog item and
 * price version, is the Steam icon first seen most recently for its market_hash_name and version
 * (item_icons, filled from every stored inventory snapshot and steam's search pages) on STEAM_IMAGE_URL, else
 * @ianlucas/cs2-lib's image path on ITEM_ASSETS_URL (its `_light`/`_medium`/`_heavy` variant by wear,
 * as the library's getImage picks it), else null. The art is Valve's.
 */
export { type ItemImage, itemImageSchema } from './item-image-schema.ts';
export type ImageHosts = Pick<Config, 'STEAM_IMAGE_URL' | 'ITEM_ASSETS_URL'>;
export type ItemImageKey = { catalog_id: string; version?: string | null; wear?: number | null };

/** Steam's icon_url: a path segment of its icon CDN (item_icons checks the same). */
export const ICON_URL_PATTERN = /^[A-Za-z0-9_-]{1,1024}$/;

/** `${STEAM_IMAGE_URL}/economy/image/<icon_url>`: how Steam's community pages load an item's icon. */
export function steamIconImage(hosts: Pick<Config, 'STEAM_IMAGE_URL'>, iconUrl: string): ItemImage {
  return { url: `${hosts.STEAM_IMAGE_URL}/economy/image/${iconUrl}`, source: 'steam' };
}

type LibItem = (typeof CS2_ITEMS)[number];

type LibImages = {
  /** Weapon, knife and glove skins by definition and paint index. */
  skins: Map<number, LibItem>;
  /** Doppler-style phase items by definition: paint index and version of each. */
  phases: Map<number, { paintIndex: number; version: string; item: LibItem }[]>;
  /** The unpainted item of a weapon, knife or glove definition (a vanilla knife's image). */
  vanilla: Map<number, LibItem>;
  /** Items without a paint whose definition index is theirs alone (cases, keys, agents, pins, tools). */
  uniqueDefinitions: Map<number, LibItem>;
  stickers: Map<number, LibItem>;
  charms: Map<number, LibItem>;
  /** Catalog id → sticker kit id / charm id (the inverse of shared/catalog/kit-catalog-ids.json). */
  kitByCatalogId: Map<string, { kind: 'sticker' | 'charm'; id: number }>;
};

let lib: LibImages | undefined;
const skinKey = (definitionIndex: number, paintIndex: number) => definitionIndex * 100_000 + paintIndex;
const PAINTED = new Set(['weapon', 'melee', 'glove']);

/** The library's lookups, built once per process (CS2_ITEMS only: no translations are loaded). */
function libImages(): LibImages {
  if (lib) return lib;
  const skins = new Map<number, LibItem>();
  const phases = new Map<number, { paintIndex: number; version: string; item: LibItem }[]>();
  const byDefinition = new Map<number, LibItem[]>();
  const vanilla = new Map<number, LibItem>();
  const stickers = new Map<number, LibItem>();
  const charms = new Map<number, LibItem>();
  for (const item of CS2_ITEMS) {
    if (!item.image) continue;
    if (PAINTED.has(item.type) && item.def !== undefined && item.index !== undefined && item.index > 0) {
      if (!skins.has(skinKey(item.def, item.index))) skins.set(skinKey(item.def, item.index), item);
      const version = item.altName ? versionFromPhaseLabel(item.altName) : null;
      if (version && version !== 'default') {
        const list = phases.get(item.def) ?? [];
        list.push({ paintIndex: item.index, version, item });
        phases.set(item.def, list);
      }
      continue;
    }
    if (PAINTED.has(item.type) && item.def !== undefined) {
      if (!vanilla.has(item.def)) vanilla.set(item.def, item);
      continue;
    }
    if ((item.type === 'sticker' || item.type === 'patch') && item.index !== undefined) {
      if (!stickers.has(item.index)) stickers.set(item.index, item);
      continue;
    }
    if (item.type === 'keychain' && item.index !== undefined) {
      if (!charms.has(item.index)) charms.set(item.index, item);
      continue;
    }
    if (item.def !== undefined && !item.free && !item.base) {
      const list = byDefinition.get(item.def) ?? [];
      list.push(item);
      byDefinition.set(item.def, list);
    }
  }
  const uniqueDefinitions = new Map<number, LibItem>();
  for (const [definition, items] of byDefinition) if (items.length === 1) uniqueDefinitions.set(definition, items[0]!);
  const kits = kitCatalog();
  const kitByCatalogId = new Map<string, { kind: 'sticker' | 'charm'; id: number }>();
  for (const [id, catalogId] of kits.stickers) kitByCatalogId.set(catalogId, { kind: 'sticker', id });
  for (const [id, catalogId] of kits.charms) kitByCatalogId.set(catalogId, { kind: 'charm', id });
  lib = { skins, phases, vanilla, uniqueDefinitions, stickers, charms, kitByCatalogId };
  return lib;
}

/** What the lookup needs of a catalog item (catalog_items columns). */
export type CatalogImageFacts = {
  catalog_id: string;
  market_hash_name: string;
  type: string;
  definition_index: number | null;
  paint_index: number | null;
  phases: readonly string[];
};

/**
 * The phase item of a merged Doppler catalog item (paint index null, docs/design.md §9) for a version. A knife
 * has a Doppler and a Gamma Doppler family sharing the phase names: a Gamma Doppler's paints sit next
 * to its Emerald's (568–572, 1119–1123), a Doppler's do not.
 */
function phaseItem(definitionIndex: number, marketHashName: string, version: string): LibItem | undefined {
  const candidates = (libImages().phases.get(definitionIndex) ?? []).filter((phase) => phase.version === version);
  if (candidates.length <= 1) return candidates[0]?.item;
  const emeralds = (libImages().phases.get(definitionIndex) ?? []).filter((phase) => phase.version === 'emerald').map((phase) => phase.paintIndex);
  const isGamma = (paintIndex: number) => emeralds.some((emerald) => Math.abs(paintIndex - emerald) <= 10);
  const gamma = marketHashName.includes('Gamma Doppler');
  return candidates.find((phase) => isGamma(phase.paintIndex) === gamma)?.item ?? candidates[0]?.item;
}

/** The cs2-lib item whose image shows this catalog item at this version, if the library has one. */
function libItemOf(facts: CatalogImageFacts, version: string): LibItem | undefined {
  const images = libImages();
  const kit = images.kitByCatalogId.get(facts.catalog_id);
  if (kit) return kit.kind === 'sticker' ? images.stickers.get(kit.id) : images.charms.get(kit.id);
  const definition = facts.definition_index;
  if (definition === null) return undefined;
  if (facts.type === 'weapon' || facts.type === 'knife' || facts.type === 'gloves') {
    if (facts.paint_index !== null) return images.skins.get(skinKey(definition, facts.paint_index));
    if (facts.phases.length > 0) {
      // `default` of a merged phase item: its first phase's image stands for it.
      const wanted = version !== 'default' && facts.phases.includes(version) ? version : facts.phases[0]!;
      return phaseItem(definition, facts.market_hash_name, wanted);
    }
    // A vanilla knife: the definition's unpainted item.
    return images.vanilla.get(definition);
  }
  return images.uniqueDefinitions.get(definition);
}

/** The lib's image path, with getImage's wear variant (light < 1/3 ≤ medium < 2/3 ≤ heavy) for items with wear. */
function libImagePath(item: LibItem, wear: number | null | undefined): string {
  const image = item.image!;
  const hasWear = PAINTED.has(item.type) && !item.free && item.index !== 0;
  if (!hasWear || wear === null || wear === undefined || !Number.isFinite(wear)) return image;
  const variant = wear < 1 / 3 ? '_light' : wear < 2 / 3 ? '_medium' : '_heavy';
  return image.replace('.webp', `${variant}.webp`);
}

/** cs2-lib's image of a catalog item at a version (and wear), on ITEM_ASSETS_URL; null when the library has none. */
export function libImageOf(hosts: Pick<Config, 'ITEM_ASSETS_URL'>, facts: CatalogImageFacts, version: string, wear?: number | null): ItemImage | null {
  const item = libItemOf(facts, version);
  return item ? { url: `${hosts.ITEM_ASSETS_URL}${libImagePath(item, wear)}`, source: 'cs2-lib' } : null;
}

/** cs2-lib's image of a skin by definition and paint index (and wear); for records that name no catalog item. */
export function libSkinImage(hosts: Pick<Config, 'ITEM_ASSETS_URL'>, definitionIndex: number, paintIndex: number, wear?: number | null): ItemImage | null {
  const item = libImages().skins.get(skinKey(definitionIndex, paintIndex));
  return item ? { url: `${hosts.ITEM_ASSETS_URL}${libImagePath(item, wear)}`, source: 'cs2-lib' } : null;
}

/** cs2-lib's image url of a sticker (or patch) kit id, or null when the library has none. */
export function stickerImageUrl(hosts: Pick<Config, 'ITEM_ASSETS_URL'>, stickerId: number): string | null {
  const item = libImages().stickers.get(stickerId);
  return item ? `${hosts.ITEM_ASSETS_URL}${item.image}` : null;
}

/** cs2-lib's image url of a charm id, or null when the library has none. */
export function charmImageUrl(hosts: Pick<Config, 'ITEM_ASSETS_URL'>, charmId: number): string | null {
  const item = libImages().charms.get(charmId);
  return item ? `${hosts.ITEM_ASSETS_URL}${item.image}` : null;
}

type ImageRow = CatalogImageFacts & { position: number; version: string; icon_url: string | null };

/**
 * The image of each key (same order; null for an unknown catalog id or an item with no image), in one
 * query: each key's catalog row and its newest icon (item_icons_newest). A phase version takes only
 * its own icons; `default` (or no version) prefers `default` icons, then any version's, so a Doppler's
 * top-level image is the phase Steam showed it with most recently.
 */
export async function itemImages(db: Queryable, hosts: ImageHosts, keys: readonly ItemImageKey[]): Promise<(ItemImage | null)[]> {
  if (keys.length === 0) return [];
  const versions = keys.map((key) => key.version ?? 'default');
  const rows = await db<ImageRow[]>`
    select k.position::int as position, k.version, c.catalog_id, c.market_hash_name, c.type, c.definition_index, c.paint_index, c.phases,
           (select i.icon_url from item_icons i
             where i.market_hash_name = c.market_hash_name and (i.version = k.version or k.version = 'default')
             order by (i.version = k.version) desc, i.first_seen_at desc, i.last_seen_at desc limit 1) as icon_url
    from unnest(${keys.map((key) => key.catalog_id)}::text[], ${versions}::text[]) with ordinality as k(catalog_id, version, position)
    join catalog_items c on c.catalog_id = k.catalog_id`;
  const out: (ItemImage | null)[] = keys.map(() => null);
  for (const row of rows) {
    const index = row.position - 1;
    out[index] = row.icon_url ? steamIconImage(hosts, row.icon_url) : libImageOf(hosts, row, row.version, keys[index]!.wear);
  }
  return out;
}

/** The image of one catalog item at a version (default `default`). */
export async function itemImage(db: Queryable, hosts: ImageHosts, catalogId: string, version?: string | null): Promise<ItemImage | null> {
  const [image] = await itemImages(db, hosts, [{ catalog_id: catalogId, version: version ?? null }]);
  return image ?? null;
}
