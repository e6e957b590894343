import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CS2_ITEMS, CS2EconomyInstance, type CS2EconomyItem, type CS2ItemTranslationMap } from '@ianlucas/cs2-lib';
import {
  type CatalogItem,
  catalogIdFor,
  EXTERIOR_NAMES,
  EXTERIOR_WEAR_RANGES,
  EXTERIORS,
  type Exterior,
  type ItemType,
  PHASE_VERSIONS,
  type PhaseVersion,
  type Rarity,
  versionFromPhaseLabel,
} from './identity.ts';

/**
 * docs/design.md §9: the catalog is every marketable CS2 variant, generated from @ianlucas/cs2-lib and named
 * exactly as Steam names it (market_hash_name). Pure and deterministic: the same library version
 * always yields the same items in the same order (sorted by market_hash_name, UTF-16 code units).
 *
 * Rules, by lib item type:
 *  - weapon / melee / glove skins: one item per exterior whose float range [from, to) overlaps the
 *    skin's [wearMin, wearMax] with positive length; `StatTrak™` when the skin's collection comes out
 *    of a StatTrak-capable weapon case (every knife can be StatTrak, gloves never); `Souvenir` when
 *    its collection is in a souvenir package (never both on one item). Knives and gloves carry `★`.
 *    Vanilla knives (`★ Karambit`) have no exterior; stock weapons, the default CT/T knives and
 *    vanilla gloves are not marketable and are skipped.
 *  - Doppler / Gamma Doppler: the lib has one entry per phase (same name, `altName` = phase label);
 *    they merge into one market item whose `phases` lists the phase versions. `paint_index` is null
 *    when the merged phases span several paint indexes (which phase is meant is a price version, not
 *    a catalog item); `definition_index` is kept.
 *  - stickers, patches, charms (and sticker slabs) keep the lib's name; graffiti become
 *    `Sealed Graffiti | …`; containers, keys, agents and pins lose the lib's `Container | `, `Key | `,
 *    `Agent | `, `Collectible | ` prefixes (capsules are spelled `(Holo-Foil)` as on Steam); music kits
 *    as `Music Kit | …` and `StatTrak™ Music Kit | …` (only the latter for kits that only ever came in
 *    a StatTrak box); tools: `Name Tag` and `StatTrak™ Swap Tool` only.
 *  - Checked against a 2024 list of 23 723 Steam market names: 23 649 are generated; the other 74
 *    are items the lib lacks (operation and viewer passes, gift packages, the 2013 souvenir
 *    packages), sealed graffiti of designs the lib has only as stickers, and legacy Steam
 *    misspellings (`Sticker | Boom(Foil)`). Newer items are generated but were not in that list.
 *  - utility, stub, free/base items, other collectibles (coins, trophies, medals), operation reward
 *    lists (`… Sticker Collection`) and charm templates are not marketable and are skipped.
 *  - `paint_index` is the paint kit of weapon/knife/glove skins only (null elsewhere: a sticker's or
 *    music kit's index is another numbering); `definition_index` is the item definition when the lib
 *    has one.
 *  - `rarity` is the lib's rarity colour named on the weapon scale (a High Grade sticker is
 *    `mil-spec`, an Extraordinary glove `covert`).
 */

const RARITY_BY_COLOUR: Record<string, Rarity> = {
  '#ded6cc': 'stock',
  '#b0c3d9': 'consumer',
  '#5e98d9': 'industrial',
  '#4b69ff': 'mil-spec',
  '#8847ff': 'restricted',
  '#d32ce6': 'classified',
  '#eb4b4b': 'covert',
  '#e4ae39': 'contraband',
};

const STATTRAK = 'StatTrak™';
const STAR = '★';

type Variant = {
  name: string;
  type: ItemType;
  weapon: string | null;
  exterior: Exterior | null;
  rarity: Rarity | null;
  stattrak: boolean;
  souvenir: boolean;
  definitionIndex: number | null;
  paintIndex: number | null;
  phase: PhaseVersion | null;
};

function rarityOf(item: CS2EconomyItem): Rarity | null {
  const colour = typeof item.rarity === 'string' ? item.rarity.toLowerCase() : '';
  const rarity = RARITY_BY_COLOUR[colour];
  if (colour && !rarity) throw new Error(`cs2-lib item ${item.id} (${item.name}) has an unknown rarity colour ${colour}`);
  return rarity ?? null;
}

function withoutPrefix(name: string, prefix: string): string {
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** Exteriors whose [from, to) shares more than a point with the skin's [wearMin, wearMax]. */
export function exteriorsForWear(wearMin: number, wearMax: number): Exterior[] {
  return EXTERIORS.filter((exterior) => {
    const [from, to] = EXTERIOR_WEAR_RANGES[exterior];
    return from < wearMax && wearMin < to;
  });
}

function phaseOf(item: CS2EconomyItem): PhaseVersion | null {
  if (!item.altName) return null;
  const version = versionFromPhaseLabel(item.altName);
  if (version === null || version === 'default') throw new Error(`cs2-lib item ${item.id} (${item.name}) has an unknown phase label ${item.altName}`);
  return version as PhaseVersion;
}

/**
 * StatTrak and Souvenir are properties of a whole collection: a collection whose skins come out of a
 * StatTrak-capable weapon case can be StatTrak (even skins the case no longer lists, like the reworked
 * Huntsman case's), one in a souvenir package can be Souvenir. Knives can always be StatTrak.
 */
// Collections and skins whose container cs2-lib does not list: the DreamHack 2013 souvenir packages
// (Italy, Lake, Safehouse), the X-Ray P250 Package, and the Howl, once in the Huntsman case.
const SOUVENIR_COLLECTIONS_WITHOUT_PACKAGE = ['set_italy', 'set_lake', 'set_safehouse'];
const STATTRAK_COLLECTIONS_WITHOUT_CASE = ['set_xraymachine'];
const STATTRAK_SKINS_WITHOUT_CASE = ['M4A4 | Howl'];

type Availability = {
  statTrakCollections: Set<string>;
  souvenirCollections: Set<string>;
  statTrakItems: Set<number>;
  souvenirItems: Set<number>;
  /** Music kits found in a StatTrak-only box, and in a box that gives plain ones. */
  kitsInStatTrakBoxes: Set<number>;
  kitsInPlainBoxes: Set<number>;
};

function isStatTrakOnlyBox(container: CS2EconomyItem): boolean {
  return container.statTrakOnly === true || container.name.startsWith(`Container | ${STATTRAK} `);
}

function containerAvailability(economy: CS2EconomyInstance): Availability {
  const availability: Availability = {
    statTrakCollections: new Set(STATTRAK_COLLECTIONS_WITHOUT_CASE),
    souvenirCollections: new Set(SOUVENIR_COLLECTIONS_WITHOUT_PACKAGE),
    statTrakItems: new Set(),
    souvenirItems: new Set(),
    kitsInStatTrakBoxes: new Set(),
    kitsInPlainBoxes: new Set(),
  };
  for (const container of economy.itemsAsArray) {
    if (container.type !== 'case') continue;
    const inside = [...(container.rawContents ?? []), ...(container.rawSpecials ?? [])].map((id) => economy.get(id));
    const statTrakCase =
      container.isWeaponCase() &&
      container.statTrakless !== true &&
      // Collection packages (Anubis) hold a map collection: never StatTrak.
      !/Collection Package$/.test(container.name);
    for (const item of inside) {
      if (item.type === 'musickit') {
        (isStatTrakOnlyBox(container) ? availability.kitsInStatTrakBoxes : availability.kitsInPlainBoxes).add(item.id);
      } else if (container.isSouvenirCase()) {
        availability.souvenirItems.add(item.id);
        if (item.collection) availability.souvenirCollections.add(item.collection);
      } else if (statTrakCase) {
        availability.statTrakItems.add(item.id);
        if (item.collection) availability.statTrakCollections.add(item.collection);
      }
    }
  }
  return availability;
}

function canBeStatTrak(item: CS2EconomyItem, availability: Availability): boolean {
  if (item.type === 'melee') return true;
  if (item.type !== 'weapon') return false;
  return (
    availability.statTrakItems.has(item.id) ||
    (item.collection !== undefined && availability.statTrakCollections.has(item.collection)) ||
    STATTRAK_SKINS_WITHOUT_CASE.includes(item.name)
  );
}

function canBeSouvenir(item: CS2EconomyItem, availability: Availability): boolean {
  if (item.type !== 'weapon') return false;
  return availability.souvenirItems.has(item.id) || (item.collection !== undefined && availability.souvenirCollections.has(item.collection));
}

function* skinVariants(item: CS2EconomyItem, availability: Availability): Generator<Variant> {
  const isKnife = item.type === 'melee';
  const isGloves = item.type === 'glove';
  const type: ItemType = isKnife ? 'knife' : isGloves ? 'gloves' : 'weapon';
  // Vanilla gloves are not on the market (stock weapons and default knives are `free`).
  const vanilla = item.base === true;
  if (vanilla && !isKnife) return;
  if (!vanilla && (item.index === undefined || item.index === 0)) return;

  const weapon = vanilla ? item.name : (item.parent?.name ?? item.name.split(' | ')[0]!);
  const star = isKnife || isGloves ? `${STAR} ` : '';
  const canStatTrak = canBeStatTrak(item, availability);
  const canSouvenir = canBeSouvenir(item, availability);
  const qualities: { prefix: string; stattrak: boolean; souvenir: boolean }[] = [{ prefix: '', stattrak: false, souvenir: false }];
  if (canStatTrak) qualities.push({ prefix: `${STATTRAK} `, stattrak: true, souvenir: false });
  if (canSouvenir) qualities.push({ prefix: 'Souvenir ', stattrak: false, souvenir: true });

  const base = {
    type,
    weapon,
    rarity: rarityOf(item),
    definitionIndex: item.def ?? null,
    paintIndex: vanilla ? null : (item.index ?? null),
    phase: phaseOf(item),
  };
  if (vanilla) {
    for (const quality of qualities) {
      yield { ...base, name: `${star}${quality.prefix}${item.name}`, exterior: null, stattrak: quality.stattrak, souvenir: quality.souvenir };
    }
    return;
  }
  const exteriors = exteriorsForWear(item.getMinimumWear(), item.getMaximumWear());
  for (const quality of qualities) {
    for (const exterior of exteriors) {
      yield {
        ...base,
        name: `${star}${quality.prefix}${item.name} (${EXTERIOR_NAMES[exterior]})`,
        exterior,
        stattrak: quality.stattrak,
        souvenir: quality.souvenir,
      };
    }
  }
}

function plain(item: CS2EconomyItem, type: ItemType, name: string, extra: Partial<Variant> = {}): Variant {
  return {
    name,
    type,
    weapon: null,
    exterior: null,
    rarity: rarityOf(item),
    stattrak: false,
    souvenir: false,
    definitionIndex: item.def ?? null,
    paintIndex: null,
    phase: null,
    ...extra,
  };
}

const MARKETABLE_TOOLS = new Set(['Name Tag', `${STATTRAK} Swap Tool`]);

function* variantsOf(item: CS2EconomyItem, availability: Availability): Generator<Variant> {
  // Free items (stock weapons, default knives and music kit, the empty sticker slab) are not on the market.
  if (item.free) return;
  switch (item.type) {
    case 'weapon':
    case 'melee':
    case 'glove':
      yield* skinVariants(item, availability);
      return;
    case 'sticker':
      yield plain(item, 'sticker', item.name);
      return;
    case 'patch':
      yield plain(item, 'patch', item.name);
      return;
    case 'keychain':
      // `Charm | Austin 2025 Highlight` is the template of per-highlight souvenir charms the lib does not list.
      if (!/ Highlight$/.test(item.name)) yield plain(item, 'charm', item.name);
      return;
    case 'graffiti':
      yield plain(item, 'graffiti', `Sealed ${item.name}`);
      return;
    case 'case': {
      const name = withoutPrefix(item.name, 'Container | ')
        // Steam spells the capsules `Legends (Holo-Foil)`.
        .replace('(Holo/Foil)', '(Holo-Foil)');
      // `… Sticker Collection`, `… Patch Collection`, `… Graffiti Collection` are operation reward
      // lists, not items; `Anubis Collection Package` is an item.
      if (!/ Collection$/.test(name)) yield plain(item, 'container', name);
      return;
    }
    case 'key':
      yield plain(item, 'key', withoutPrefix(item.name, 'Key | '));
      return;
    case 'agent':
      yield plain(item, 'agent', withoutPrefix(item.name, 'Agent | '));
      return;
    case 'musickit': {
      if (item.base) return;
      // Kits that only ever came out of StatTrak boxes (StatTrak™ Radicals Box) exist only as StatTrak.
      const statTrakOnly = availability.kitsInStatTrakBoxes.has(item.id) && !availability.kitsInPlainBoxes.has(item.id);
      if (!statTrakOnly) yield plain(item, 'music_kit', item.name);
      if (item.hasStatTrak()) yield plain(item, 'music_kit', `${STATTRAK} ${item.name}`, { stattrak: true });
      return;
    }
    case 'collectible': {
      // Of the collectibles only pins are tradable on the market (coins, trophies, medals are not).
      const name = withoutPrefix(item.name, 'Collectible | ');
      if (/\bPin\b/.test(name)) yield plain(item, 'collectible', name);
      return;
    }
    case 'tool': {
      const name = withoutPrefix(item.name, 'Tool | ');
      if (MARKETABLE_TOOLS.has(name)) yield plain(item, 'tool', name);
      return;
    }
    default:
      // utility, stub: never on the market.
      return;
  }
}

/**
 * Variants with the same market_hash_name are one market item: Doppler phases merge into `phases`;
 * anything else that collides (the lib lists a few containers twice under different definitions)
 * keeps the lowest definition index. Attributes that disagree become null.
 */
function merge(variants: Variant[]): CatalogItem {
  const first = variants[0]!;
  const phases = new Set<PhaseVersion>();
  for (const variant of variants) if (variant.phase) phases.add(variant.phase);
  const distinct = <T>(values: T[]): T | null => (new Set(values).size === 1 ? values[0]! : null);
  const definitions = variants.map((v) => v.definitionIndex).filter((v): v is number => v !== null);
  return {
    catalog_id: catalogIdFor(first.name),
    market_hash_name: first.name,
    type: first.type,
    weapon: distinct(variants.map((v) => v.weapon)),
    exterior: distinct(variants.map((v) => v.exterior)),
    rarity: distinct(variants.map((v) => v.rarity)),
    stattrak: first.stattrak,
    souvenir: first.souvenir,
    definition_index: definitions.length > 0 ? Math.min(...definitions) : null,
    paint_index: distinct(variants.map((v) => v.paintIndex)),
    phases: PHASE_VERSIONS.filter((phase) => phases.has(phase)),
  };
}

/**
 * English names only: `@ianlucas/cs2-lib/translations` imports all 29 languages (about 500 MB
 * resident), and the package exports no path for one language, so english.mjs is loaded from beside
 * that entry point, on first use.
 */
export function englishNames(): CS2ItemTranslationMap {
  const path = fileURLToPath(new URL('./english.mjs', import.meta.resolve('@ianlucas/cs2-lib/translations')));
  return (createRequire(import.meta.url)(path) as { english: CS2ItemTranslationMap }).english;
}

/** A private economy instance per call (the lib's shared `CS2Economy` is global state), freed afterwards. */
function loadEconomy(): CS2EconomyInstance {
  const economy = new CS2EconomyInstance();
  economy.use({ items: CS2_ITEMS, language: englishNames() });
  return economy;
}

/** Every marketable CS2 variant, sorted by market_hash_name; market_hash_name is unique. */
export function generateCatalog(): CatalogItem[] {
  const economy = loadEconomy();
  const availability = containerAvailability(economy);
  const byName = new Map<string, Variant[]>();
  for (const item of economy.itemsAsArray) {
    for (const variant of variantsOf(item, availability)) {
      const group = byName.get(variant.name);
      if (group) group.push(variant);
      else byName.set(variant.name, [variant]);
    }
  }
  const names = [...byName.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => merge(byName.get(name)!));
}

/**
 * The catalog names of kits applied to other items, by the id a certificate gives them: sticker kit
 * id → the sticker's, patch's or sealed graffiti's market_hash_name, charm id → the charm's (as
 * variantsOf names them). For valuing stickers and charms as their own catalog items (docs/design.md §14).
 */
export function kitCatalogNames(): { stickers: Map<number, string>; charms: Map<number, string> } {
  // The lib's items and their English names directly: an economy instance (loadEconomy) would hold
  // every item object again for the life of the process that values inventories.
  const names = englishNames();
  const stickers = new Map<number, string>();
  const charms = new Map<number, string>();
  for (const item of CS2_ITEMS) {
    if (item.index === undefined || item.free) continue;
    const name = names[String(item.id)]?.name;
    if (!name) continue;
    if (item.type === 'sticker' || item.type === 'patch') stickers.set(item.index, name);
    else if (item.type === 'graffiti' && !stickers.has(item.index)) stickers.set(item.index, `Sealed ${name}`);
    else if (item.type === 'keychain') charms.set(item.index, name);
  }
  return { stickers, charms };
}
