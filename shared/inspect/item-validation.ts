import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { z } from 'zod';
import type { ErrorDetail } from '../http/errors.ts';
import { FAMILY_BY_LIB_TYPE, ITEM_FAMILIES, type ItemFamily, type ItemSelector, MAX_NAME_TAG_LENGTH } from './selector.ts';

/**
 * The `item` of a render or viewer-session request (docs/design.md §10 "Item selector"), checked against the
 * catalog library so a renderer never receives an item it cannot draw. Renders and viewer sessions
 * call validateItemSelector and answer 400 `invalid_item` with its details.
 *
 * Bounds docs/design.md §10 leaves to us (documented in the OpenAPI schema below and docs/decisions.md):
 *  - sticker `scale` 0 < s ≤ 10 (a multiplier of the slot's size; 0 would draw nothing);
 *  - sticker `rotation` −360…360 degrees;
 *  - sticker `offset_x`/`offset_y` −2…2 (slot-relative texture units; real links stay within ±0.5);
 *  - charm `slot` 0–7 like sticker slots, `pattern` 0–100 000 (the game's charm pattern range);
 *  - charm `offset_x/y/z` −100…100 model units (real links sit near 5–10).
 * `paint_index` 0 means "no paint" and is valid on every family: the game writes it on charms.
 */

/** Decoded items carry float32 values, so bounds are inclusive and checked on the value as sent. */
const uint32 = z.number().int().min(0).max(0xffff_ffff);

export const STICKER_SCALE_MAX = 10;
export const STICKER_ROTATION_LIMIT = 360;
export const STICKER_OFFSET_LIMIT = 2;
export const CHARM_OFFSET_LIMIT = 100;
export const CHARM_PATTERN_MAX = 100_000;

const stickerRequestSchema = z
  .object({
    slot: z.number().int().min(0).max(7).describe('Sticker slot 0–7; slots may repeat'),
    sticker_id: uint32.describe('A sticker kit id known to the catalog (stickers, patches, graffiti)'),
    wear: z.number().min(0).max(1).optional().describe('Scrape, 0 (new) to 1 (gone)'),
    scale: z.number().gt(0).max(STICKER_SCALE_MAX).optional().describe(`Size multiplier, above 0 up to ${STICKER_SCALE_MAX}`),
    rotation: z.number().min(-STICKER_ROTATION_LIMIT).max(STICKER_ROTATION_LIMIT).optional().describe('Degrees, −360 to 360'),
    offset_x: z.number().min(-STICKER_OFFSET_LIMIT).max(STICKER_OFFSET_LIMIT).optional().describe('Slot-relative offset, −2 to 2'),
    offset_y: z.number().min(-STICKER_OFFSET_LIMIT).max(STICKER_OFFSET_LIMIT).optional().describe('Slot-relative offset, −2 to 2'),
  })
  .strict();

const charmOffset = z.number().min(-CHARM_OFFSET_LIMIT).max(CHARM_OFFSET_LIMIT).optional().describe('Model units, −100 to 100');

const charmRequestSchema = z
  .object({
    slot: z.number().int().min(0).max(7).describe('Charm attachment 0–7'),
    charm_id: uint32.describe('A charm id known to the catalog'),
    pattern: z.number().int().min(0).max(CHARM_PATTERN_MAX).optional().describe('Charm pattern 0–100000'),
    offset_x: charmOffset,
    offset_y: charmOffset,
    offset_z: charmOffset,
  })
  .strict();

const stateRequestSchema = z
  .object({
    paint_index: uint32.optional().describe('A paint kit valid for the definition; 0 = no paint'),
    paint_seed: z.number().int().min(0).max(1000).optional(),
    wear: z.number().min(0).max(1).optional(),
    stattrak: z.object({ value: uint32 }).strict().optional().describe('Present whenever the item has a kill counter, even at 0'),
    name_tag: z.string().min(1).max(MAX_NAME_TAG_LENGTH).optional(),
    stickers: z.array(stickerRequestSchema).max(32).optional(),
    charms: z.array(charmRequestSchema).max(8).optional(),
  })
  .strict();

/**
 * The request shape of an item selector, for OpenAPI and the first validation pass. The outer object
 * is not strict: docs/design.md §10 lets a client pass a whole inspect-decode answer (with rarity, quality,
 * origin, item_id, certificate), and only `item` and `state` are read. Inside them unknown fields are
 * refused, so a misspelt field (`paintseed`) is a 400, not a silently default render.
 */
export const itemSelectorRequestSchema = z
  .object({
    item: z
      .object({
        family: z.enum(ITEM_FAMILIES).describe('Must be the family of the definition'),
        definition_index: uint32.describe('A definition index known to the catalog library'),
      })
      .strict(),
    state: stateRequestSchema,
  })
  .describe('docs/design.md §10 item selector; an inspect-decode answer can be passed unchanged (other fields are ignored)');

export type ItemValidationResult = { ok: true; selector: ItemSelector } | { ok: false; details: ErrorDetail[] };

type Catalog = {
  familyByDefinition: Map<number, ItemFamily>;
  /** Paint indices per paintable definition (weapons, knives, gloves). */
  paintsByDefinition: Map<number, Set<number>>;
  stickerIds: Set<number>;
  charmIds: Set<number>;
};

const PAINTABLE_LIB_TYPES = new Set(['weapon', 'melee', 'glove']);
// Patches (on agents) and graffiti are sticker kits in the game, and their certificates name them in stickers[].
const STICKER_KIT_LIB_TYPES = new Set(['sticker', 'patch', 'graffiti']);

let catalog: Catalog | undefined;

/** Built on first use: scanning the lib's 25 000 items costs a few ms that imports should not pay. */
function loadCatalog(): Catalog {
  if (catalog) return catalog;
  const built: Catalog = { familyByDefinition: new Map(), paintsByDefinition: new Map(), stickerIds: new Set(), charmIds: new Set() };
  for (const item of CS2_ITEMS) {
    if (item.def !== undefined && !built.familyByDefinition.has(item.def)) {
      built.familyByDefinition.set(item.def, FAMILY_BY_LIB_TYPE[item.type] ?? 'other');
    }
    if (item.index === undefined) continue;
    if (PAINTABLE_LIB_TYPES.has(item.type) && item.def !== undefined) {
      let paints = built.paintsByDefinition.get(item.def);
      if (!paints) built.paintsByDefinition.set(item.def, (paints = new Set()));
      paints.add(item.index);
    } else if (STICKER_KIT_LIB_TYPES.has(item.type)) {
      built.stickerIds.add(item.index);
    } else if (item.type === 'keychain') {
      built.charmIds.add(item.index);
    }
  }
  catalog = built;
  return built;
}

function fieldOf(prefix: string, path: readonly PropertyKey[]): string {
  return [prefix, ...path.map(String)].filter(Boolean).join('.');
}

/**
 * docs/design.md §10: unknown definition, a paint not valid for the definition, or out-of-range state →
 * `invalid_item`. Details name fields as the request spells them, under `options.field` (default
 * `body.item`, where renders and viewer sessions carry the selector). The selector returned holds
 * only `item` and `state`, whatever else the input had.
 */
export function validateItemSelector(input: unknown, options: { field?: string } = {}): ItemValidationResult {
  const prefix = options.field ?? 'body.item';
  const parsed = itemSelectorRequestSchema.safeParse(input);
  if (!parsed.success) {
    // An unknown field is named itself (`body.item.state.paintseed`), not the object holding it.
    const details = parsed.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({ field: fieldOf(prefix, [...issue.path, key]), message: 'unknown field' }))
        : [{ field: fieldOf(prefix, issue.path), message: issue.message }],
    );
    return { ok: false, details };
  }
  const { item, state } = parsed.data;
  const lib = loadCatalog();
  const details: ErrorDetail[] = [];
  const at = (...path: PropertyKey[]) => fieldOf(prefix, path);

  const family = lib.familyByDefinition.get(item.definition_index);
  if (family === undefined) {
    details.push({ field: at('item', 'definition_index'), message: `definition ${item.definition_index} is not in the item catalog` });
  } else if (family !== item.family) {
    details.push({ field: at('item', 'family'), message: `definition ${item.definition_index} is family ${family}, not ${item.family}` });
  }

  if (state.paint_index !== undefined && state.paint_index !== 0 && family !== undefined) {
    const paints = lib.paintsByDefinition.get(item.definition_index);
    if (!paints) {
      details.push({ field: at('state', 'paint_index'), message: `definition ${item.definition_index} (${family}) takes no paint` });
    } else if (!paints.has(state.paint_index)) {
      details.push({ field: at('state', 'paint_index'), message: `paint ${state.paint_index} does not exist for definition ${item.definition_index}` });
    }
  }

  state.stickers?.forEach((sticker, position) => {
    if (!lib.stickerIds.has(sticker.sticker_id)) {
      details.push({ field: at('state', 'stickers', position, 'sticker_id'), message: `sticker ${sticker.sticker_id} is not in the item catalog` });
    }
  });
  state.charms?.forEach((charm, position) => {
    if (!lib.charmIds.has(charm.charm_id)) {
      details.push({ field: at('state', 'charms', position, 'charm_id'), message: `charm ${charm.charm_id} is not in the item catalog` });
    }
  });

  if (details.length > 0) return { ok: false, details };
  return { ok: true, selector: { item, state } };
}
