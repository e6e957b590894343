import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { englishNames } from '../catalog/generate.ts';
import { EXTERIOR_NAMES, EXTERIOR_WEAR_RANGES, EXTERIORS, type Exterior, RARITIES, type Rarity } from '../catalog/identity.ts';
import { phaseVersionOfPaint, wearRangeOf } from '../inspect/insights.ts';
import type { Config } from '../platform/config.ts';
import type { Queryable } from '../platform/db.ts';
import { charmImageUrl, itemImages, stickerImageUrl } from './images/item-images.ts';
import type { ItemCard, ViewerItem } from './viewer/contract.ts';
import { viewerImagePath } from './viewer/images.ts';

/**
 * docs/design.md §18: the item card of a definition without a real 3D model. Its name, rarity and catalog id
 * come from the catalog (the market item the selector is: definition, paint, exterior by wear,
 * StatTrak), else from cs2-lib; its images are paths on our own origin (shared/media/viewer/images.ts)
 * that resolve through the same image cache as GET /v2/images.
 */

/** The rarity colours of the game's inventory (the border and name colours Steam shows). */
export const RARITY_COLOURS: Record<Rarity, string> = {
  stock: '#b0c3d9',
  consumer: '#b0c3d9',
  industrial: '#5e98d9',
  'mil-spec': '#4b69ff',
  restricted: '#8847ff',
  classified: '#d32ce6',
  covert: '#eb4b4b',
  contraband: '#e4ae39',
};
const RARITY_NAMES: Record<Rarity, string> = {
  stock: 'Stock',
  consumer: 'Consumer Grade',
  industrial: 'Industrial Grade',
  'mil-spec': 'Mil-Spec',
  restricted: 'Restricted',
  classified: 'Classified',
  covert: 'Covert',
  contraband: 'Contraband',
};

/** Image sizes asked of the cache (powers of two, as GET /v2/images rounds them). */
export const CARD_STICKER_IMAGE_SIZE = 128;
export const CARD_MAX_IMAGE_SIZE = 1024;

/** The smallest power of two from 64 to 1024 at least `pixels` (the item image's longest side on the card). */
export function cardImageSize(pixels: number): number {
  let size = 64;
  while (size < pixels && size < CARD_MAX_IMAGE_SIZE) size *= 2;
  return size;
}

export function exteriorOfWear(wear: number): Exterior {
  for (const exterior of EXTERIORS) {
    const [from, to] = EXTERIOR_WEAR_RANGES[exterior];
    if (wear >= from && wear < to) return exterior;
  }
  return 'battle-scarred';
}

type CardCatalogRow = { catalog_id: string; market_hash_name: string; rarity: string | null };

/**
 * The catalog's market item for a selector: same definition and paint (a Doppler phase's paint finds
 * its merged item by phase), the exterior of the wear first, then StatTrak as asked, plain before
 * souvenir.
 */
async function findCardCatalogItem(
  db: Queryable,
  input: { definitionIndex: number; paintIndex: number | null; phase: string | null; exterior: Exterior | null; stattrak: boolean },
): Promise<CardCatalogRow | null> {
  const [row] = await db<CardCatalogRow[]>`
    select catalog_id, market_hash_name, rarity from catalog_items
    where definition_index = ${input.definitionIndex}
      and (paint_index = ${input.paintIndex}
           or (paint_index is null and ${input.paintIndex}::int is null and phases = '{}')
           or (paint_index is null and ${input.phase}::text is not null and ${input.phase}::text = any(phases)))
    order by (exterior is not distinct from ${input.exterior}::text) desc, (stattrak = ${input.stattrak}) desc, souvenir, market_hash_name
    limit 1`;
  return row ?? null;
}

let libraryNames: Map<string, { name: string; rarityColour: string | undefined }> | undefined;

/** cs2-lib's English name and rarity colour of a definition and paint, for an item the catalog lacks. */
function libraryItem(definitionIndex: number, paintIndex: number | null): { name: string; rarityColour: string | undefined } | undefined {
  if (!libraryNames) {
    const names = englishNames();
    libraryNames = new Map();
    for (const item of CS2_ITEMS) {
      if (item.def === undefined) continue;
      const key = `${item.def}:${item.index ?? 0}`;
      const name = names[String(item.id)]?.name;
      if (name && !libraryNames.has(key)) libraryNames.set(key, { name, rarityColour: item.rarity });
    }
  }
  return libraryNames.get(`${definitionIndex}:${paintIndex ?? 0}`);
}

/** "StatTrak™ AK-47 | Redline (Field-Tested)" → "AK-47 | Redline": the card shows the counter and exterior apart. */
export function cardName(marketHashName: string): string {
  return marketHashName.replace(/^StatTrak™ /, '').replace(/ \((Factory New|Minimal Wear|Field-Tested|Well-Worn|Battle-Scarred)\)$/, '');
}

export type ItemCardDeps = { sql: Queryable; config: Config };

/**
 * cs2-lib draws skins in three wear variants, by thirds of the float (shared/media/images/item-images.ts):
 * the card asks for its image with the middle of the wear's third, so every float of a third shares
 * one image path (one entry in the page's and the cache's memory).
 */
const wearVariant = (wear: number | undefined): number | null =>
  wear === undefined ? null : [1 / 6, 1 / 2, 5 / 6][Math.min(2, Math.floor(clampUnit(wear) * 3))]!;
const clampUnit = (value: number) => Math.min(1, Math.max(0, value));

type CardFacts = { row: CardCatalogRow | null; image: string | null };
// What the catalog says of a (definition, paint, exterior, StatTrak, wear variant), kept a minute per
// process: a render pool draws the same items over and over, and these are two queries each time.
const FACTS_TTL_MS = 60_000;
const FACTS_LIMIT = 5_000;
const factsCache = new Map<string, { until: number; facts: Promise<CardFacts> }>();

function cardFacts(
  deps: ItemCardDeps,
  input: {
    definitionIndex: number;
    paintIndex: number | null;
    phase: string | null;
    exterior: Exterior | null;
    stattrak: boolean;
    wear: number | null;
    imageSize: number;
  },
): Promise<CardFacts> {
  const key = JSON.stringify(input);
  const now = Date.now();
  const cached = factsCache.get(key);
  if (cached && cached.until > now) return cached.facts;
  if (factsCache.size >= FACTS_LIMIT) factsCache.clear();
  const facts = (async (): Promise<CardFacts> => {
    const row = await findCardCatalogItem(deps.sql, input);
    if (!row) return { row, image: null };
    const [found] = await itemImages(deps.sql, deps.config, [{ catalog_id: row.catalog_id, version: input.phase, wear: input.wear }]);
    return { row, image: found ? viewerImagePath({ kind: 'item', id: row.catalog_id, version: input.phase, wear: input.wear, size: input.imageSize }) : null };
  })();
  factsCache.set(key, { until: now + FACTS_TTL_MS, facts });
  // A failed lookup is not kept.
  facts.catch(() => factsCache.delete(key));
  return facts;
}

/**
 * The card of `item`. `imageSize` is the longest side, in pixels, the item image will be drawn at
 * (the render's output; the interactive page asks for the largest).
 */
export async function buildItemCard(deps: ItemCardDeps, item: ViewerItem, options: { imageSize: number }): Promise<ItemCard> {
  const { state } = item;
  const definitionIndex = item.item.definition_index;
  // Paint index 0 is "no paint" in the game's data.
  const paintIndex = state.paint_index !== undefined && state.paint_index > 0 ? state.paint_index : null;
  const phase = phaseVersionOfPaint(paintIndex);
  const exterior = state.wear !== undefined && paintIndex !== null ? exteriorOfWear(state.wear) : null;
  const { row, image } = await cardFacts(deps, {
    definitionIndex,
    paintIndex,
    phase,
    exterior,
    stattrak: state.stattrak !== undefined,
    wear: wearVariant(state.wear),
    imageSize: cardImageSize(options.imageSize),
  });
  const library = row ? undefined : libraryItem(definitionIndex, paintIndex);
  const rarity = row?.rarity && (RARITIES as readonly string[]).includes(row.rarity) ? (row.rarity as Rarity) : null;
  const range = state.wear !== undefined && paintIndex !== null ? wearRangeOf(definitionIndex, paintIndex) : undefined;
  return {
    name: row ? cardName(row.market_hash_name) : (library?.name ?? `Item ${definitionIndex}`),
    rarity: rarity ? { name: RARITY_NAMES[rarity], colour: RARITY_COLOURS[rarity] } : library?.rarityColour ? { name: '', colour: library.rarityColour } : null,
    exterior: exterior ? EXTERIOR_NAMES[exterior] : null,
    wear: state.wear !== undefined ? { value: state.wear, min: range?.min ?? 0, max: range?.max ?? 1 } : null,
    stattrak: state.stattrak ? state.stattrak.value : null,
    name_tag: state.name_tag ?? null,
    image,
    stickers: (state.stickers ?? []).map((sticker) => ({
      slot: sticker.slot,
      image: stickerImageUrl(deps.config, sticker.sticker_id)
        ? viewerImagePath({ kind: 'sticker', id: String(sticker.sticker_id), version: null, size: CARD_STICKER_IMAGE_SIZE })
        : null,
      wear: sticker.wear ?? 0,
      scale: sticker.scale ?? 1,
      rotation: sticker.rotation ?? 0,
      offset_x: sticker.offset_x ?? 0,
      offset_y: sticker.offset_y ?? 0,
    })),
    charms: (state.charms ?? []).map((charm) => ({
      slot: charm.slot,
      image: charmImageUrl(deps.config, charm.charm_id)
        ? viewerImagePath({ kind: 'charm', id: String(charm.charm_id), version: null, size: CARD_STICKER_IMAGE_SIZE })
        : null,
      offset_x: charm.offset_x ?? 0,
      offset_y: charm.offset_y ?? 0,
    })),
  };
}
