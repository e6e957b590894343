import { type CatalogItem, catalogIdFor, EXTERIOR_NAMES, type Exterior, type ItemType, type PhaseVersion } from './identity.ts';

/**
 * docs/design.md §19 "New items": a Steam market_hash_name the catalog lacks, read into the attributes the
 * generator (generate.ts) gives the same item, so a name seen on the market before @ianlucas/cs2-lib
 * knows it can be priced as a provisional catalog item with the identity and catalog_id the generator
 * will later give it (the identity is the name itself: catalogIdFor(name)).
 *
 * What a name cannot tell is null: `rarity`, `definition_index` and `paint_index` (a catalog sync with
 * a library that knows the item fills them in). What it tells, it tells exactly as the generator does:
 *
 *   [★ ][StatTrak™ |Souvenir ]<Weapon> | <Skin> (<Exterior>)    weapon, knife or gloves by <Weapon>
 *   ★ [StatTrak™ ]<Knife>                                        a vanilla knife (no exterior)
 *   Sticker | …, Patch | …, Sealed Graffiti | …                  sticker, patch, graffiti
 *   Charm | …, Souvenir Charm | … (highlights), Sticker Slab | … charm (a slab is a charm)
 *   Music Kit | …, StatTrak™ Music Kit | …                       music_kit
 *   <Name> | <Faction>                                           agent, when <Faction> is an agent faction
 *   … Case / Capsule / Package / Box / Terminal / Pack, the old
 *   Legends / Challengers / Contenders capsules, Autograph Capsule | …   container
 *   … Key, … Pin, Name Tag, StatTrak™ Swap Tool                   key, collectible, tool
 *
 * Doppler and Gamma Doppler skins carry their phases as versions (identity.ts PHASE_VERSIONS), never
 * in the name: a Doppler is priced in phase-1…4, ruby, sapphire and black-pearl, a Gamma Doppler in
 * phase-1…4 and emerald, as every generated Doppler item is. An agent with patches applied has the
 * agent's own name on the market (patches are not part of market_hash_name).
 *
 * A name is refused rather than guessed: `unrecognised` when it fits no known shape (operation passes,
 * gift packages, a skin without an exterior, StatTrak™ and Souvenir together), `ambiguous` when it
 * fits a shape but not one item kind (a skin of a weapon nobody knows could be a gun, a knife or
 * gloves; `X | Y` whose Y is no known agent faction could be an agent or something new).
 */

export type SkinKind = 'weapon' | 'knife' | 'gloves';

/** The weapons, knives and gloves of @ianlucas/cs2-lib 7.33 by the name the market uses. */
const GUNS = [
  'AK-47',
  'AUG',
  'AWP',
  'CZ75-Auto',
  'Desert Eagle',
  'Dual Berettas',
  'FAMAS',
  'Five-SeveN',
  'G3SG1',
  'Galil AR',
  'Glock-18',
  'M249',
  'M4A1-S',
  'M4A4',
  'MAC-10',
  'MAG-7',
  'MP5-SD',
  'MP7',
  'MP9',
  'Negev',
  'Nova',
  'P2000',
  'P250',
  'P90',
  'PP-Bizon',
  'R8 Revolver',
  'SCAR-20',
  'SG 553',
  'SSG 08',
  'Sawed-Off',
  'Tec-9',
  'UMP-45',
  'USP-S',
  'XM1014',
  'Zeus x27',
];
const KNIVES = [
  'Bayonet',
  'Bowie Knife',
  'Butterfly Knife',
  'Classic Knife',
  'Falchion Knife',
  'Flip Knife',
  'Gut Knife',
  'Huntsman Knife',
  'Karambit',
  'Kukri Knife',
  'M9 Bayonet',
  'Navaja Knife',
  'Nomad Knife',
  'Paracord Knife',
  'Shadow Daggers',
  'Skeleton Knife',
  'Stiletto Knife',
  'Survival Knife',
  'Talon Knife',
  'Ursus Knife',
];
const GLOVES = ['Bloodhound Gloves', 'Broken Fang Gloves', 'Driver Gloves', 'Hand Wraps', 'Hydra Gloves', 'Moto Gloves', 'Specialist Gloves', 'Sport Gloves'];
/** Agent factions, the part after ` | ` of every agent's name. */
const AGENT_FACTIONS = [
  'Brazilian 1st Battalion',
  'Elite Crew',
  'FBI',
  'FBI HRT',
  'FBI SWAT',
  'FBI Sniper',
  'Gendarmerie Nationale',
  'Guerrilla Warfare',
  'KSK',
  'NSWC SEAL',
  'NZSAS',
  'Phoenix',
  'SAS',
  'SEAL Frogman',
  'SWAT',
  'Sabre',
  'Sabre Footsoldier',
  'TACP Cavalry',
  'The Professionals',
  'USAF TACP',
];

export const DEFAULT_SKIN_KINDS: ReadonlyMap<string, SkinKind> = new Map<string, SkinKind>([
  ...GUNS.map((name) => [name, 'weapon'] as const),
  ...KNIVES.map((name) => [name, 'knife'] as const),
  ...GLOVES.map((name) => [name, 'gloves'] as const),
]);
export const DEFAULT_AGENT_FACTIONS: ReadonlySet<string> = new Set(AGENT_FACTIONS);

export type MarketNameKnowledge = {
  /** Weapon, knife and glove names and their kind (default: the library's; ingest adds the catalog's). */
  skinKinds?: ReadonlyMap<string, SkinKind>;
  /** Agent factions (default: the library's; ingest adds the catalog's). */
  agentFactions?: ReadonlySet<string>;
};

export type MarketNameParse = { status: 'parsed'; item: CatalogItem } | { status: 'unrecognised' | 'ambiguous'; reason: string };

const STAR = '★ ';
const STATTRAK = 'StatTrak™ ';
const SOUVENIR = 'Souvenir ';
const DOPPLER_PHASES: PhaseVersion[] = ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'ruby', 'sapphire', 'black-pearl'];
const GAMMA_DOPPLER_PHASES: PhaseVersion[] = ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'emerald'];
const EXTERIOR_BY_NAME = new Map<string, Exterior>(Object.entries(EXTERIOR_NAMES).map(([exterior, name]) => [name, exterior as Exterior]));
const EXTERIOR_SUFFIX = / \((Factory New|Minimal Wear|Field-Tested|Well-Worn|Battle-Scarred)\)$/;

/** `<prefix> | …` names of one type, and which qualities the market puts before them. */
const PREFIXED: readonly { prefix: string; type: ItemType; stattrak?: boolean; souvenir?: boolean }[] = [
  { prefix: 'Sticker | ', type: 'sticker' },
  { prefix: 'Sticker Slab | ', type: 'charm' },
  { prefix: 'Charm | ', type: 'charm', souvenir: true },
  { prefix: 'Patch | ', type: 'patch' },
  { prefix: 'Sealed Graffiti | ', type: 'graffiti' },
  { prefix: 'Music Kit | ', type: 'music_kit', stattrak: true },
  { prefix: 'Autograph Capsule | ', type: 'container' },
];
const PREFIX_WORDS = new Set(PREFIXED.map(({ prefix }) => prefix.slice(0, -3)));

// Containers: cases, capsules, souvenir (and souvenir highlight) packages, music kit boxes, terminals,
// patch packs, numbered series (`Sticker Capsule 2`, `CS:GO Weapon Case 3`, `Collectible Pins Capsule Series 1`), and
// the early tournament capsules named only `<event> Legends|Challengers|Contenders`, perhaps `(Foil)`.
const CONTAINER = /(?:^| )(?:Case|Capsule|Package|Box|Terminal|Pack)(?: Series)?(?: [0-9]+)?$/;
const TOURNAMENT_CAPSULE = /^(?=.*\b[0-9]{4}\b).* (?:Legends|Challengers|Contenders)(?: with [^()]+)?(?: \((?:Holo-Foil|Foil)\))?$/;

const refuse = (status: 'unrecognised' | 'ambiguous', reason: string): MarketNameParse => ({ status, reason });

function item(name: string, type: ItemType, fields: Partial<Omit<CatalogItem, 'catalog_id' | 'market_hash_name' | 'type'>> = {}): MarketNameParse {
  return {
    status: 'parsed',
    item: {
      catalog_id: catalogIdFor(name),
      market_hash_name: name,
      type,
      weapon: null,
      exterior: null,
      // Not in the name: null until a catalog sync with a library that knows the item.
      rarity: null,
      stattrak: false,
      souvenir: false,
      definition_index: null,
      paint_index: null,
      phases: [],
      ...fields,
    },
  };
}

/** Reads a Steam market_hash_name into catalog attributes, or says why it will not. Pure. */
export function parseMarketHashName(name: string, knowledge: MarketNameKnowledge = {}): MarketNameParse {
  const skinKinds = knowledge.skinKinds ?? DEFAULT_SKIN_KINDS;
  const factions = knowledge.agentFactions ?? DEFAULT_AGENT_FACTIONS;
  // Steam's names are trimmed and printable (some old ones hold a double space: `Sticker | niko  | Paris 2023`).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to refuse names holding control characters (NUL to US, DEL)
  if (name.length === 0 || name.length > 256 || name !== name.trim() || /[\u0000-\u001f\u007f]/.test(name)) {
    return refuse('unrecognised', 'not a market name (empty, too long, untrimmed or with control characters)');
  }
  let rest = name;
  const star = rest.startsWith(STAR);
  if (star) rest = rest.slice(STAR.length);
  const stattrak = rest.startsWith(STATTRAK);
  if (stattrak) rest = rest.slice(STATTRAK.length);
  const souvenir = rest.startsWith(SOUVENIR);
  if (souvenir) rest = rest.slice(SOUVENIR.length);
  if (stattrak && souvenir) return refuse('unrecognised', 'StatTrak™ and Souvenir together');
  // Steam writes `★ StatTrak™ …`, never `StatTrak™ ★ …` or `Souvenir ★ …`.
  if (rest.startsWith(STAR) || rest.startsWith(STATTRAK) || rest.startsWith(SOUVENIR))
    return refuse('unrecognised', '★, StatTrak™ or Souvenir out of order or repeated');

  const exteriorMatch = EXTERIOR_SUFFIX.exec(rest);
  if (exteriorMatch) return skin(name, rest.slice(0, exteriorMatch.index), EXTERIOR_BY_NAME.get(exteriorMatch[1]!)!, { star, stattrak, souvenir }, skinKinds);

  if (star) {
    // Knives and gloves without an exterior: only a vanilla knife (`★ Karambit`, `★ StatTrak™ Karambit`).
    const kind = skinKinds.get(rest);
    if (kind === 'knife' && !souvenir) return item(name, 'knife', { weapon: rest, stattrak });
    if (kind !== undefined || rest.includes(' | ') || souvenir)
      return refuse('unrecognised', '★ item that is neither a vanilla knife nor a skin with an exterior');
    return refuse('ambiguous', `★ ${rest}: not a knife or gloves this catalog knows`);
  }

  const separator = rest.indexOf(' | ');
  if (separator >= 0) {
    const prefixed = PREFIXED.find(({ prefix }) => rest.startsWith(prefix));
    if (prefixed) {
      if ((stattrak && !prefixed.stattrak) || (souvenir && !prefixed.souvenir))
        return refuse('unrecognised', `${stattrak ? 'StatTrak™' : 'Souvenir'} on a ${prefixed.prefix.slice(0, -3)}`);
      if (rest.length === prefixed.prefix.length) return refuse('unrecognised', 'nothing after the prefix');
      return item(name, prefixed.type, { stattrak, souvenir });
    }
    const head = rest.slice(0, separator);
    if (skinKinds.has(head)) return refuse('unrecognised', 'a skin without an exterior');
    const faction = rest.slice(separator + 3);
    if (!stattrak && !souvenir && factions.has(faction) && head.length > 0) return item(name, 'agent');
    return refuse('ambiguous', `"${head} | …" is no known item kind (an agent of an unknown faction, or something new)`);
  }

  // No ` | `: containers, keys, pins and the two marketable tools.
  if (souvenir) return refuse('unrecognised', 'Souvenir on an item that is not a weapon skin or a charm');
  if (stattrak) {
    if (rest === 'Swap Tool') return item(name, 'tool');
    // `StatTrak™ Radicals Box`, `StatTrak™ Masterminds Music Kit Box`: the box is not StatTrak, its kits are.
    if (/ Box$/.test(rest)) return item(name, 'container');
    return refuse('unrecognised', 'StatTrak™ on an item that is not a weapon skin, a music kit or a music kit box');
  }
  if (name === 'Name Tag') return item(name, 'tool');
  if (/ Key$/.test(name)) return item(name, 'key');
  if (/ Pin$/.test(name)) return item(name, 'collectible');
  if (CONTAINER.test(name) || TOURNAMENT_CAPSULE.test(name)) return item(name, 'container');
  return refuse('unrecognised', 'no known item kind');
}

function skin(
  name: string,
  body: string,
  exterior: Exterior,
  quality: { star: boolean; stattrak: boolean; souvenir: boolean },
  skinKinds: ReadonlyMap<string, SkinKind>,
): MarketNameParse {
  const separator = body.indexOf(' | ');
  if (separator <= 0) return refuse('unrecognised', 'an exterior without `<weapon> | <skin>`');
  const weapon = body.slice(0, separator);
  const paint = body.slice(separator + 3);
  if (paint.length === 0) return refuse('unrecognised', 'a skin without a name');
  if (PREFIX_WORDS.has(weapon)) return refuse('unrecognised', `an exterior on a ${weapon}`);
  const kind = skinKinds.get(weapon);
  if (kind === undefined) {
    return refuse('ambiguous', `${weapon} is no weapon, knife or gloves this catalog knows (a new ${quality.star ? 'knife or gloves' : 'weapon'}?)`);
  }
  if (quality.star !== (kind !== 'weapon')) return refuse('unrecognised', quality.star ? `★ on the ${weapon}` : `${weapon} without ★`);
  // spec (generate.ts): gloves are never StatTrak; knives and gloves are never Souvenir.
  if (kind === 'gloves' && quality.stattrak) return refuse('unrecognised', 'StatTrak™ gloves');
  if (kind !== 'weapon' && quality.souvenir) return refuse('unrecognised', `Souvenir ${kind}`);
  const phases = paint === 'Doppler' ? DOPPLER_PHASES : paint === 'Gamma Doppler' ? GAMMA_DOPPLER_PHASES : [];
  return item(name, kind, { weapon, exterior, stattrak: quality.stattrak, souvenir: quality.souvenir, phases: [...phases] });
}
