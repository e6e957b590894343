import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { type ModelFamily, modelFamilyOf } from './stand-ins.ts';

/**
 * What the item files cover, read from @ianlucas/cs2-lib (the catalog's library, docs/design.md §9): every
 * definition index, every paint kit of weapons, knives and gloves, every sticker kit (stickers and
 * patches share that numbering) and every charm. Built once per process on first use.
 */
export type ItemFileCatalog = {
  models: Array<{ definitionIndex: number; family: ModelFamily }>;
  paints: Array<{ paintIndex: number; name: string | undefined; rarity: string | undefined }>;
  stickers: Array<{ stickerId: number; rarity: string | undefined }>;
  charms: Array<{ charmId: number; rarity: string | undefined }>;
};

let cached: ItemFileCatalog | undefined;

/** English names (for the paints' pattern words) without the 29-language bundle; as in shared/catalog/generate.ts. */
function englishNames(): Record<string, { name: string } | undefined> {
  const path = fileURLToPath(new URL('./english.mjs', import.meta.resolve('@ianlucas/cs2-lib/translations')));
  return (createRequire(import.meta.url)(path) as { english: Record<string, { name: string } | undefined> }).english;
}

export function itemFileCatalog(): ItemFileCatalog {
  if (cached) return cached;
  const names = englishNames();
  const models = new Map<number, ModelFamily>();
  const paints = new Map<number, { paintIndex: number; name: string | undefined; rarity: string | undefined }>();
  const stickers = new Map<number, { stickerId: number; rarity: string | undefined }>();
  const charms = new Map<number, { charmId: number; rarity: string | undefined }>();
  for (const item of CS2_ITEMS) {
    // The first item of a definition is its base (the lib lists stock items before skins).
    if (item.def !== undefined && !models.has(item.def)) models.set(item.def, modelFamilyOf(item));
    if (item.index === undefined) continue;
    if ((item.type === 'weapon' || item.type === 'melee' || item.type === 'glove') && item.index > 0 && !paints.has(item.index)) {
      paints.set(item.index, { paintIndex: item.index, name: names[String(item.id)]?.name, rarity: item.rarity });
    } else if ((item.type === 'sticker' || item.type === 'patch') && !stickers.has(item.index)) {
      stickers.set(item.index, { stickerId: item.index, rarity: item.rarity });
    } else if (item.type === 'keychain' && !charms.has(item.index)) {
      charms.set(item.index, { charmId: item.index, rarity: item.rarity });
    }
  }
  const byKey = <T>(map: Map<number, T>) => [...map.entries()].sort((a, b) => a[0] - b[0]).map(([, value]) => value);
  cached = {
    models: [...models.entries()].sort((a, b) => a[0] - b[0]).map(([definitionIndex, family]) => ({ definitionIndex, family })),
    paints: byKey(paints),
    stickers: byKey(stickers),
    charms: byKey(charms),
  };
  return cached;
}

/** A paint's catalog entry, or just its index for a paint the library does not know (still drawable). */
export function paintInfo(paintIndex: number): { paintIndex: number; name?: string | undefined; rarity?: string | undefined } {
  return itemFileCatalog().paints.find((paint) => paint.paintIndex === paintIndex) ?? { paintIndex };
}
