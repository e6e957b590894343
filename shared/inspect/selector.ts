import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { z } from 'zod';

/**
 * docs/design.md §10 "Item selector" (docs/interface.md §2.5): `{item: {family, definition_index}, state}`. It is also the
 * inspect-decode answer and the item state of inventory assets (docs/design.md §11), so renders and viewer
 * sessions can take a decoded certificate unchanged.
 */

export const ITEM_FAMILIES = ['weapon', 'knife', 'gloves', 'agent', 'sticker', 'charm', 'case', 'other'] as const;
export type ItemFamily = (typeof ITEM_FAMILIES)[number];

const uint32 = z.number().int().min(0).max(0xffff_ffff);
// zod 4 numbers reject NaN and ±Infinity, which a float32 field of a crafted certificate can hold.
const finite = z.number();

export const stickerSchema = z.object({
  slot: z.number().int().min(0).max(7), // docs/design.md §10: slots 0–7, and slots may repeat
  sticker_id: uint32,
  wear: z.number().min(0).max(1).optional(),
  scale: finite.optional(),
  rotation: finite.optional(),
  offset_x: finite.optional(),
  offset_y: finite.optional(),
});

export const charmSchema = z.object({
  slot: uint32,
  charm_id: uint32,
  pattern: uint32.optional(),
  offset_x: finite.optional(),
  offset_y: finite.optional(),
  offset_z: finite.optional(),
});

/** Longest name tag we accept; the game allows 20 characters, the margin covers multi-unit ones. */
export const MAX_NAME_TAG_LENGTH = 100;

export const itemStateSchema = z.object({
  paint_index: uint32.optional(),
  paint_seed: z.number().int().min(0).max(1000).optional(),
  wear: z.number().min(0).max(1).optional(),
  // docs/design.md §10: present whenever the item has a kill counter, even at 0.
  stattrak: z.object({ value: uint32 }).optional(),
  name_tag: z.string().min(1).max(MAX_NAME_TAG_LENGTH).optional(),
  stickers: z.array(stickerSchema).max(32).optional(),
  charms: z.array(charmSchema).max(8).optional(),
});

export const itemIdentitySchema = z.object({
  family: z.enum(ITEM_FAMILIES),
  definition_index: uint32,
});

export const itemSelectorSchema = z.object({
  item: itemIdentitySchema,
  state: itemStateSchema,
});

export type StickerState = z.infer<typeof stickerSchema>;
export type CharmState = z.infer<typeof charmSchema>;
export type ItemState = z.infer<typeof itemStateSchema>;
export type ItemIdentity = z.infer<typeof itemIdentitySchema>;
export type ItemSelector = z.infer<typeof itemSelectorSchema>;

// cs2-lib item types → selector families. Each definition index has one lib type (checked for
// 7.33.1); paint kits, sticker kits and charm kits share their definition (1209 stickers, 1355 charms).
export const FAMILY_BY_LIB_TYPE: Partial<Record<string, ItemFamily>> = {
  weapon: 'weapon',
  melee: 'knife',
  glove: 'gloves',
  agent: 'agent',
  sticker: 'sticker',
  keychain: 'charm',
  case: 'case',
};

let familyByDefinition: Map<number, ItemFamily> | undefined;

/** Family of a definition index from the catalog library; unknown definitions are `other`. */
export function familyOfDefinition(definitionIndex: number): ItemFamily {
  if (!familyByDefinition) {
    // Built on first use: reading the lib's 25 000 items costs a few ms that imports should not pay.
    familyByDefinition = new Map();
    for (const item of CS2_ITEMS) {
      if (item.def === undefined || familyByDefinition.has(item.def)) continue;
      familyByDefinition.set(item.def, FAMILY_BY_LIB_TYPE[item.type] ?? 'other');
    }
  }
  return familyByDefinition.get(definitionIndex) ?? 'other';
}
