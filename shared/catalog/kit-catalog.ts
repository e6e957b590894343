import { readFileSync } from 'node:fs';
import { kitCatalogNames } from './generate.ts';
import { catalogIdFor } from './identity.ts';

/**
 * Sticker kit id → the catalog id of its item, and charm id → its item's: what a sticker or charm
 * applied to an asset is, as a catalog item. Valuation (shared/gameplatform/valuation.ts) prices
 * them by it; item images (shared/media/images/item-images.ts) read it backwards.
 */

export type KitCatalog = { stickers: Map<number, string>; charms: Map<number, string> };
let kits: KitCatalog | undefined;

/** The lookup, built on first use from kit-catalog-ids.json (see computeKitCatalogIds). */
export function kitCatalog(): KitCatalog {
  if (kits) return kits;
  // Generated from the lib (computeKitCatalogIds, `npm run lookups:generate`; test/catalog/generated-lookups.test.ts
  // checks it): loading the lib's English names here would cost ~0.1 s and ~20 MB.
  const ids = JSON.parse(readFileSync(new URL('./kit-catalog-ids.json', import.meta.url), 'utf8')) as KitCatalogIds;
  kits = { stickers: new Map(ids.stickers), charms: new Map(ids.charms) };
  return kits;
}

/** shared/catalog/kit-catalog-ids.json: sticker kit id → catalog id, charm id → catalog id. */
export type KitCatalogIds = { stickers: [number, string][]; charms: [number, string][] };

/** The content of kit-catalog-ids.json, from the lib's names (catalogIdFor of each kit's catalog name). */
export function computeKitCatalogIds(): KitCatalogIds {
  const names = kitCatalogNames();
  const rows = (map: Map<number, string>) => [...map].sort((a, b) => a[0] - b[0]).map(([id, name]): [number, string] => [id, catalogIdFor(name)]);
  return { stickers: rows(names.stickers), charms: rows(names.charms) };
}
