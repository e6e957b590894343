import { createHash } from 'node:crypto';
import { z } from 'zod';

/** docs/interface.md §9: catalog identity format. */
export const CATALOG_IDENTITY_FORMAT = 'cs2.market.v1';

const base32Alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
const CATALOG_ID_PATTERN = /^itm_[a-z2-7]{26}$/;

function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += base32Alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += base32Alphabet[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The identity of a market item is Steam's market_hash_name under `cs2.market.v1`; its catalog id is
 * a digest of that identity, so it is stable across rebuilds and releases and opaque to clients.
 */
export function catalogIdFor(marketHashName: string): string {
  const digest = createHash('sha256').update(`${CATALOG_IDENTITY_FORMAT}\n${marketHashName}`).digest();
  return `itm_${base32(digest).slice(0, 26)}`;
}

export function isCatalogId(value: string): boolean {
  return CATALOG_ID_PATTERN.test(value);
}

export const EXTERIORS = ['factory-new', 'minimal-wear', 'field-tested', 'well-worn', 'battle-scarred'] as const;
export type Exterior = (typeof EXTERIORS)[number];
/** Steam's spelling of each exterior, as it appears in parentheses in market_hash_name. */
export const EXTERIOR_NAMES: Record<Exterior, string> = {
  'factory-new': 'Factory New',
  'minimal-wear': 'Minimal Wear',
  'field-tested': 'Field-Tested',
  'well-worn': 'Well-Worn',
  'battle-scarred': 'Battle-Scarred',
};
/** Float ranges of each exterior: [from, to). */
export const EXTERIOR_WEAR_RANGES: Record<Exterior, [number, number]> = {
  'factory-new': [0, 0.07],
  'minimal-wear': [0.07, 0.15],
  'field-tested': [0.15, 0.38],
  'well-worn': [0.38, 0.45],
  'battle-scarred': [0.45, 1],
};

export const ITEM_TYPES = [
  'weapon',
  'knife',
  'gloves',
  'sticker',
  'patch',
  'charm',
  'graffiti',
  'container',
  'key',
  'agent',
  'music_kit',
  'collectible',
  'tool',
] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

export const RARITIES = ['stock', 'consumer', 'industrial', 'mil-spec', 'restricted', 'classified', 'covert', 'contraband'] as const;
export type Rarity = (typeof RARITIES)[number];

/** docs/design.md §9: price versions. */
export const PHASE_VERSIONS = ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'ruby', 'sapphire', 'black-pearl', 'emerald'] as const;
export type PhaseVersion = (typeof PHASE_VERSIONS)[number];
const VERSION_PATTERN = /^(default|phase-[1-4]|ruby|sapphire|black-pearl|emerald|pattern-(0|[1-9][0-9]{0,3})|tier-[1-9][0-9]?)$/;

/** `default`, a Doppler/Gamma Doppler phase, `pattern-<seed>` (0–1000) or `tier-<n>`. */
export function isPriceVersion(value: string): boolean {
  if (!VERSION_PATTERN.test(value)) return false;
  if (value.startsWith('pattern-')) return Number(value.slice(8)) <= 1000;
  return true;
}

/** Version names → the phase labels upstreams write ("Phase 2", "Black Pearl"): versionFromPhaseLabel's reverse. */
export const PHASE_LABELS: Readonly<Record<PhaseVersion, string>> = {
  'phase-1': 'Phase 1',
  'phase-2': 'Phase 2',
  'phase-3': 'Phase 3',
  'phase-4': 'Phase 4',
  ruby: 'Ruby',
  sapphire: 'Sapphire',
  'black-pearl': 'Black Pearl',
  emerald: 'Emerald',
};

/** Upstream phase labels ("Phase 2", "Ruby", "Black Pearl", "Emerald") → version names. */
export function versionFromPhaseLabel(label: string | null | undefined): string | null {
  if (!label) return 'default';
  const normalised = label.trim().toLowerCase().replace(/\s+/g, '-');
  return (PHASE_VERSIONS as readonly string[]).includes(normalised) ? normalised : null;
}

export const catalogItemSchema = z.object({
  catalog_id: z.string().describe('Opaque, stable id of the item (itm_…)'),
  market_hash_name: z.string(),
  type: z.enum(ITEM_TYPES),
  weapon: z.string().nullable(),
  exterior: z.enum(EXTERIORS).nullable(),
  rarity: z.enum(RARITIES).nullable(),
  stattrak: z.boolean(),
  souvenir: z.boolean(),
  definition_index: z.number().int().nullable(),
  paint_index: z.number().int().nullable(),
  phases: z.array(z.enum(PHASE_VERSIONS)).describe('Phase versions the item is priced in besides `default` (Doppler, Gamma Doppler)'),
});
export type CatalogItem = z.infer<typeof catalogItemSchema>;

/**
 * docs/design.md §19: a catalog item as GET /v2/catalog/items and `catalog.item_added` show it. `provisional`
 * items were added from market names before the library knew them (shared/catalog/provisional.ts).
 */
export const catalogRecordSchema = catalogItemSchema.extend({
  provisional: z
    .boolean()
    .describe(
      'true for an item added the day it appeared on the market, from its name alone (docs/design.md §19): priced like any item, with `rarity`, `definition_index` and `paint_index` null until a catalog sync with a newer @ianlucas/cs2-lib makes it a regular item under the same `catalog_id`',
    ),
});
export type CatalogRecord = z.infer<typeof catalogRecordSchema>;
