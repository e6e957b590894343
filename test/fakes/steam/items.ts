/**
 * Builds inventory entries in Steam's format from short item specs, with real definitions from
 * @ianlucas/cs2-lib (names, definition and paint indexes, sticker and charm ids) and real item
 * certificates serialised with @csfloat/cs2-inspect-serializer, so the certificate, the asset
 * properties (seed, wear) and market_hash_name always agree.
 *
 * Since 2025 Steam sends more than the certificate says (docs/design.md §14): the name tag as property 5,
 * a standalone charm's pattern as property 3, and stickers and charms in `asset_accessories` (the
 * charm's pattern as property 3 of its standalone_properties), while the certificate usually lacks
 * the name tag and the patterns. Specs choose where each value goes (propertyNameTag,
 * propertyPattern, charm.accessoryPattern, accessories), `legacyInspect` gives the pre-2025
 * `S…A…D…` inspect action with no certificate, and inventoryOf's `locale` localizes property names.
 */

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CEconItemPreviewDataBlock } from '@csfloat/cs2-inspect-serializer';
import { CS2_ITEMS, CS2EconomyInstance, type CS2EconomyItem, type CS2ItemTranslationMap } from '@ianlucas/cs2-lib';
import type {
  InventoryFixture,
  SteamAsset,
  SteamAssetAccessory,
  SteamAssetProperties,
  SteamAssetProperty,
  SteamDescription,
  SteamDescriptionLine,
  SteamTag,
} from './types.ts';

export type StickerSpec = { item: string; slot: number; wear?: number; offsetX?: number; offsetY?: number; rotation?: number };
export type CharmSpec = {
  item: string;
  /** The pattern in the certificate; left out of it when undefined. */
  pattern?: number;
  /** The pattern as Steam's `asset_accessories` entry says it (property 3); implies `accessories`. */
  accessoryPattern?: number;
  offsetX?: number;
  offsetY?: number;
  offsetZ?: number;
};

export type ItemSpec = {
  /** The cs2-lib English name: 'AK-47 | Redline', 'Sticker | Crown (Foil)', 'Agent | …', 'Container | …'. */
  item: string;
  /** Doppler / Gamma Doppler phase as cs2-lib labels it ('Phase 2', 'Ruby'). */
  phase?: string;
  /** Skins only: float wear and paint seed. */
  wear?: number;
  seed?: number;
  /** StatTrak™ with this kill count (0 allowed). */
  statTrak?: number;
  /** The name tag in the certificate (and the description). */
  nameTag?: string;
  /** The name tag as asset property 5 (and the description, when nameTag is unset). */
  propertyNameTag?: string;
  stickers?: StickerSpec[];
  charm?: CharmSpec;
  /** Stickers and the charm also listed in `asset_accessories`, as Steam has done since 2025. */
  accessories?: boolean;
  /** A standalone charm's pattern in its certificate (0 when neither pattern is set). */
  pattern?: number;
  /** A standalone charm's pattern as asset property 3. */
  propertyPattern?: number;
  /** The pre-2025 inspect action `…%20S%owner_steamid%A%assetid%D<digits>`, and no certificate (property 6). */
  legacyInspect?: boolean;
  /** Trade hold: tradable 0 with a "Tradable/Marketable After …" owner description (in `holdForm`). */
  tradeHoldUntil?: Date;
  /**
   * Trade protection (docs/design.md §17: received in a trade): `sealed: 1`, tradable 0, and an owner
   * description "⇆ This item is trade-protected and cannot be consumed, modified, or transferred
   * until …" (in `holdForm`).
   */
  protectedUntil?: Date;
  /** Listed on the Community Market: `sealed: 1`, `sealed_type: 1` and Steam's listing line. */
  marketListing?: boolean;
  /** How the hold or protection instant is written (default `bbcode`, as Steam sends it with preserve_bbcode=1). */
  holdForm?: HoldTextForm;
  /** Never tradable (tradable 0, marketable 0, no hold date). */
  untradable?: boolean;
};

/** The link Steam has put in `actions` since 2025: the client substitutes the certificate. */
export const INSPECT_LINK = 'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20%propid:6%';
/** The link before 2025: owner and asset id substituted, D a number only the game coordinator resolves. */
export const legacyInspectLink = (d: string) => `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S%owner_steamid%A%assetid%D${d}`;

export type PropertyLocale = 'english' | 'german';
/** Property names as Steam localizes them with `l=` (the service must read `propertyid` only). */
const PROPERTY_NAMES: Record<PropertyLocale, Record<SteamAssetProperty['propertyid'], string>> = {
  english: { 1: 'Pattern Template', 2: 'Wear Rating', 3: 'Charm Template', 4: 'Sticker Wear', 5: 'Name Tag', 6: 'Item Certificate' },
  german: { 1: 'Mustervorlage', 2: 'Abnutzungsgrad', 3: 'Anhängervorlage', 4: 'Aufkleberabnutzung', 5: 'Namensschild', 6: 'Gegenstandszertifikat' },
};
const STEAMID64_BASE = 76561197960265728n;

let economy: CS2EconomyInstance | undefined;
let byName: Map<string, CS2EconomyItem[]> | undefined;

/** English names only, loaded the way shared/catalog/generate.ts does (all languages cost ~500 MB). */
function englishNames(): CS2ItemTranslationMap {
  const path = fileURLToPath(new URL('./english.mjs', import.meta.resolve('@ianlucas/cs2-lib/translations')));
  return (createRequire(import.meta.url)(path) as { english: CS2ItemTranslationMap }).english;
}

/** The lib item for a name (and phase); loaded once, on first use. */
export function libItem(name: string, phase?: string): CS2EconomyItem {
  if (!economy || !byName) {
    economy = new CS2EconomyInstance();
    economy.use({ items: CS2_ITEMS, language: englishNames() });
    byName = new Map();
    for (const item of economy.itemsAsArray) {
      const list = byName.get(item.name);
      if (list) list.push(item);
      else byName.set(item.name, [item]);
    }
  }
  const found = (byName.get(name) ?? []).find((item) => (phase === undefined ? true : item.altName === phase));
  if (!found) throw new Error(`steam fake: cs2-lib has no item ${JSON.stringify(name)}${phase ? ` (${phase})` : ''}`);
  return found;
}

const EXTERIORS: [number, string, string][] = [
  [0.07, 'Factory New', 'WearCategory0'],
  [0.15, 'Minimal Wear', 'WearCategory1'],
  [0.38, 'Field-Tested', 'WearCategory2'],
  [0.45, 'Well-Worn', 'WearCategory3'],
  [1.01, 'Battle-Scarred', 'WearCategory4'],
];

export function exteriorOf(wear: number): { name: string; tag: string } {
  const [, name, tag] = EXTERIORS.find(([to]) => wear < to)!;
  return { name, tag };
}

/** Rarity colour → [certificate rarity, weapon-scale name, internal tag suffix]. */
const RARITIES: Record<string, [number, string, string]> = {
  '#b0c3d9': [1, 'Consumer Grade', 'Common'],
  '#5e98d9': [2, 'Industrial Grade', 'Uncommon'],
  '#4b69ff': [3, 'Mil-Spec Grade', 'Rare'],
  '#8847ff': [4, 'Restricted', 'Mythical'],
  '#d32ce6': [5, 'Classified', 'Legendary'],
  '#eb4b4b': [6, 'Covert', 'Ancient'],
  '#e4ae39': [7, 'Contraband', 'Contraband'],
};
/** Steam names the same grades differently for stickers, charms, agents and gloves. */
const OTHER_SCALE: Record<number, string> = {
  1: 'Base Grade',
  2: 'Base Grade',
  3: 'High Grade',
  4: 'Remarkable',
  5: 'Exotic',
  6: 'Extraordinary',
  7: 'Contraband',
};
const AGENT_SCALE: Record<number, string> = { 3: 'Distinguished', 4: 'Exceptional', 5: 'Superior', 6: 'Master' };
const CATEGORY_TYPES: Record<string, [string, string]> = {
  rifle: ['Rifle', 'CSGO_Type_Rifle'],
  secondary: ['Pistol', 'CSGO_Type_Pistol'],
  smg: ['SMG', 'CSGO_Type_SMG'],
  heavy: ['Shotgun', 'CSGO_Type_Shotgun'],
};

function rarityOf(item: CS2EconomyItem): [number, string, string] {
  return RARITIES[String(item.rarity).toLowerCase()] ?? [1, 'Base Grade', 'Common'];
}

function withoutPrefix(name: string): string {
  return name.replace(/^(Agent|Container|Collectible|Tool|Key) \| /, '');
}

/** FNV-1a, for stable class and instance ids. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const classIdOf = (key: string) => String(1_000_000_000 + (hash32(key) % 3_000_000_000));

function tag(category: string, internal: string, localizedCategory: string, localized: string, color?: string): SteamTag {
  return { category, internal_name: internal, localized_category_name: localizedCategory, localized_tag_name: localized, ...(color ? { color } : {}) };
}

/**
 * Steam's checksum: (crc & 0xFFFF) ^ (length × crc) mod 2³², crc the CRC-32 of the key byte followed
 * by the unmasked payload (the library's unmasked form is the key-0 case).
 */
export function certificateChecksum(key: number, payload: Uint8Array): number {
  const crc = Bun.hash.crc32(Buffer.concat([Uint8Array.from([key]), payload]));
  return ((crc & 0xffff) ^ Math.imul(payload.byteLength, crc)) >>> 0;
}

function float32Bits(value: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, value, true);
  return view.getUint32(0, true);
}

/**
 * The masked form Steam puts in property 6: [key, (payload, crc) XOR key]. The library's
 * generateHex writes the unmasked form and defaults a missing wear to 0.001, so the payload is
 * serialised here with the library's message type (no wear for stickers, agents, charms).
 */
export function certificateHex(block: Partial<CEconItemPreviewDataBlock> & { paintwearFloat?: number }, maskKey: number): string {
  const { paintwearFloat, ...fields } = block;
  const message = CEconItemPreviewDataBlock.create({ ...fields, ...(paintwearFloat === undefined ? {} : { paintwear: float32Bits(paintwearFloat) }) });
  const payload = CEconItemPreviewDataBlock.toBinary(message);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(certificateChecksum(maskKey, payload), 0);
  const unmasked = Buffer.concat([Uint8Array.from([0]), payload, crc]);
  return Buffer.from(unmasked.map((byte) => byte ^ maskKey))
    .toString('hex')
    .toUpperCase();
}

/**
 * The forms Steam has written hold instants in (docs/design.md §17), with strings client libraries recorded:
 *  bbcode              "… [date]1786384800[/date]" (type "bbcode"; rendered year-less without preserve_bbcode=1)
 *  month_first         "Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT"
 *  day_first           "Tradable/Marketable After 27 Aug, 2026 (14:00:00) GMT"
 *  month_first_no_gmt  "Tradable/Marketable After Oct 01, 2026 (7:00:00)"
 *  yearless            "Tradable/Marketable After 29 Jun @ 7:00am" (as rendered since 2026-06-24)
 *  item_expiration     no date in the text: the description's `item_expiration` (ISO 8601)
 */
export const HOLD_TEXT_FORMS = ['bbcode', 'month_first', 'day_first', 'month_first_no_gmt', 'yearless', 'item_expiration'] as const;
export type HoldTextForm = (typeof HOLD_TEXT_FORMS)[number];

export const HOLD_PREFIX = 'Tradable/Marketable After ';
export const PROTECTION_PREFIX = '⇆ This item is trade-protected and cannot be consumed, modified, or transferred until ';
export const PROTECTION_NO_DATE = '⇆ This item is trade-protected and cannot be consumed, modified, or transferred.';
export const MARKET_LISTING_TEXT = '⇆ This item is listed on the Steam Community Market and cannot be consumed or modified.';

const shortMonth = (at: Date) => at.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });

/** "29 Jun @ 7:00am": how Steam renders an instant since 2026-06-24 (GMT here; minutes, no year). */
export function yearlessText(at: Date): string {
  const hour = at.getUTCHours();
  return `${at.getUTCDate()} ${shortMonth(at)} @ ${hour % 12 === 0 ? 12 : hour % 12}:${String(at.getUTCMinutes()).padStart(2, '0')}${hour < 12 ? 'am' : 'pm'}`;
}

/** A hold or protection line for `until` in `form` (null for item_expiration: the text gives no date). */
export function holdLine(until: Date, form: HoldTextForm, prefix: string): SteamDescriptionLine | null {
  const time = `${until.getUTCHours()}:${String(until.getUTCMinutes()).padStart(2, '0')}:${String(until.getUTCSeconds()).padStart(2, '0')}`;
  const day = String(until.getUTCDate()).padStart(2, '0');
  switch (form) {
    case 'bbcode':
      return { type: 'bbcode', value: `${prefix}[date]${Math.floor(until.getTime() / 1000)}[/date]` };
    case 'month_first':
      return { type: 'html', value: `${prefix}${shortMonth(until)} ${day}, ${until.getUTCFullYear()} (${time}) GMT`, color: 'ff4040' };
    case 'day_first':
      return { type: 'html', value: `${prefix}${until.getUTCDate()} ${shortMonth(until)}, ${until.getUTCFullYear()} (${time}) GMT`, color: 'ff4040' };
    case 'month_first_no_gmt':
      return { type: 'html', value: `${prefix}${shortMonth(until)} ${day}, ${until.getUTCFullYear()} (${time})`, color: 'ff4040' };
    case 'yearless':
      return { type: 'html', value: `${prefix}${yearlessText(until)}`, color: 'ff4040' };
    case 'item_expiration':
      return null;
  }
}

/** The owner descriptions, flags and item_expiration of an item's holds, protection and listing. */
export function holdFields(spec: Pick<ItemSpec, 'tradeHoldUntil' | 'protectedUntil' | 'marketListing' | 'holdForm'>): Partial<SteamDescription> {
  const form = spec.holdForm ?? 'bbcode';
  const owner: SteamDescriptionLine[] = [];
  let expiration: Date | undefined;
  if (spec.marketListing) owner.push({ type: 'html', value: MARKET_LISTING_TEXT });
  if (spec.protectedUntil) {
    owner.push(holdLine(spec.protectedUntil, form, PROTECTION_PREFIX) ?? { type: 'html', value: PROTECTION_NO_DATE });
    if (form === 'item_expiration') expiration = spec.protectedUntil;
  }
  if (spec.tradeHoldUntil) {
    const line = holdLine(spec.tradeHoldUntil, form, HOLD_PREFIX);
    if (line) owner.push(line);
    else expiration = spec.tradeHoldUntil;
  }
  if (owner.length === 0 && !expiration) return {};
  return {
    ...(owner.length > 0 ? { owner_descriptions: [{ type: 'html', value: ' ' }, ...owner] } : {}),
    ...(spec.protectedUntil || spec.marketListing ? { sealed: 1 } : {}),
    ...(spec.marketListing ? { sealed_type: 1 } : {}),
    ...(expiration ? { item_expiration: expiration.toISOString().replace('.000Z', 'Z') } : {}),
  };
}

export type BuiltItem = { asset: SteamAsset; description: SteamDescription; properties: SteamAssetProperties | null; marketHashName: string };

export type BuildOptions = { locale?: PropertyLocale };

/** One inventory entry: the asset, its description and its properties (certificate and all). */
export function buildItem(spec: ItemSpec, assetId: string, ownerSteamId64: string, options: BuildOptions = {}): BuiltItem {
  const propertyNames = PROPERTY_NAMES[options.locale ?? 'english'];
  const item = libItem(spec.item, spec.phase);
  const [rarity, rarityName, rarityTag] = rarityOf(item);
  const rarityColor = String(item.rarity ?? '#b0c3d9').slice(1);
  const isSkin = item.type === 'weapon' || item.type === 'melee' || item.type === 'glove';
  const starred = item.type === 'melee' || item.type === 'glove';
  const statTrak = spec.statTrak !== undefined;
  const exterior = isSkin && !item.base ? exteriorOf(spec.wear ?? 0.2) : null;
  const baseName = withoutPrefix(item.name);
  const name = `${starred ? '★ ' : ''}${statTrak ? 'StatTrak™ ' : ''}${baseName}`;
  const marketHashName = exterior ? `${name} (${exterior.name})` : name;

  let type: string;
  const tags: SteamTag[] = [];
  if (item.type === 'weapon') {
    const [category, categoryTag] = CATEGORY_TYPES[item.category ?? ''] ?? ['Rifle', 'CSGO_Type_Rifle'];
    type = `${statTrak ? 'StatTrak™ ' : ''}${rarityName} ${category}`;
    tags.push(tag('Type', categoryTag, 'Type', category), tag('Weapon', `weapon_${item.model ?? 'unknown'}`, 'Weapon', baseName.split(' | ')[0]!));
  } else if (item.type === 'melee') {
    type = `★ ${statTrak ? 'StatTrak™ ' : ''}Covert Knife`;
    tags.push(tag('Type', 'CSGO_Type_Knife', 'Type', 'Knife'), tag('Weapon', `weapon_${item.model ?? 'knife'}`, 'Weapon', baseName.split(' | ')[0]!));
  } else if (item.type === 'glove') {
    type = '★ Extraordinary Gloves';
    tags.push(tag('Type', 'Type_Hands', 'Type', 'Gloves'));
  } else if (item.type === 'sticker') {
    type = `${OTHER_SCALE[rarity]} Sticker`;
    tags.push(tag('Type', 'CSGO_Tool_Sticker', 'Type', 'Sticker'));
  } else if (item.type === 'keychain') {
    type = `${OTHER_SCALE[rarity]} Charm`;
    tags.push(tag('Type', 'CSGO_Type_Charm', 'Type', 'Charm'));
  } else if (item.type === 'agent') {
    type = `${AGENT_SCALE[rarity] ?? 'Master'} Agent`;
    tags.push(tag('Type', 'Type_CustomPlayer', 'Type', 'Agent'));
  } else if (item.type === 'case') {
    type = 'Base Grade Container';
    tags.push(tag('Type', 'CSGO_Type_WeaponCase', 'Type', 'Container'));
  } else {
    type = `${OTHER_SCALE[rarity]} Collectible`;
    tags.push(tag('Type', 'CSGO_Type_Collectible', 'Type', 'Collectible'));
  }
  const quality = starred ? [3, 'unusual', '★'] : statTrak ? [9, 'strange', 'StatTrak™'] : [4, 'normal', 'Normal'];
  tags.push(tag('Quality', String(quality[1]), 'Category', String(quality[2])));
  const rarityScaleName =
    item.type === 'weapon' || item.type === 'melee' ? rarityName : item.type === 'agent' ? (AGENT_SCALE[rarity] ?? 'Master') : OTHER_SCALE[rarity]!;
  tags.push(tag('Rarity', `Rarity_${rarityTag}${item.type === 'weapon' || item.type === 'melee' ? '_Weapon' : ''}`, 'Quality', rarityScaleName, rarityColor));
  if (exterior) tags.push(tag('Exterior', exterior.tag, 'Exterior', exterior.name));

  const lines: SteamDescriptionLine[] = [];
  if (exterior) lines.push({ type: 'html', value: `Exterior: ${exterior.name}`, name: 'exterior_wear' });
  if (statTrak)
    lines.push(
      {
        type: 'html',
        value: 'This item features StatTrak™ technology, which tracks certain statistics when equipped by its owner.',
        color: 'CF6A32',
        name: 'attribute',
      },
      { type: 'html', value: `StatTrak™ Confirmed Kills: ${spec.statTrak}`, color: 'CF6A32', name: 'attribute' },
    );
  lines.push({ type: 'html', value: ' ', name: 'blank' });
  const shownNameTag = spec.nameTag ?? spec.propertyNameTag;
  if (shownNameTag !== undefined) lines.push({ type: 'html', value: `Name Tag: ''${shownNameTag}''`, name: 'nametag' });
  const stickers = (spec.stickers ?? []).map((s) => ({ spec: s, lib: libItem(s.item) }));
  if (stickers.length > 0) {
    const names = stickers.map((s) => s.lib.name.replace(/^Sticker \| /, '')).join(', ');
    lines.push({
      type: 'html',
      value: `<br><div id="sticker_info" class="sticker_info" style="border: 2px solid rgb(102, 102, 102); border-radius: 6px; width=100; margin:4px; padding:8px;"><center>Sticker: ${names}</center></div>`,
      name: 'sticker_info',
    });
  }
  const charm = spec.charm ? { spec: spec.charm, lib: libItem(spec.charm.item) } : null;
  if (charm)
    lines.push({
      type: 'html',
      value: `<br><div id="keychain_info" class="keychain_info" style="border: 2px solid rgb(102, 102, 102); border-radius: 6px; width=100; margin:4px; padding:8px;"><center>Charm: ${charm.lib.name.replace(/^Charm \| /, '')}</center></div>`,
      name: 'keychain_info',
    });

  const held = Boolean(spec.untradable || spec.tradeHoldUntil || spec.protectedUntil || spec.marketListing);
  const tradable = held ? 0 : 1;
  const inspectable = item.type !== 'case' && item.type !== 'collectible';
  const marketable = held ? 0 : 1;

  const seed = spec.seed ?? (isSkin ? hash32(assetId) % 1001 : undefined);
  const wear = isSkin && !item.base ? Math.fround(spec.wear ?? 0.2) : undefined;
  const classid = classIdOf(`${marketHashName}|${spec.phase ?? ''}`);
  const inspectLink = spec.legacyInspect ? legacyInspectLink(String(hash32(`D|${classid}`))) : INSPECT_LINK;

  const description: SteamDescription = {
    appid: 730,
    classid,
    instanceid: '0',
    currency: 0,
    background_color: '',
    icon_url: `-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO4YmlhxYQknCRvCo04DEVlxkKgpot7HxfDh${hash32(classid).toString(36)}`,
    descriptions: lines,
    tradable,
    ...(inspectable ? { actions: [{ link: inspectLink, name: 'Inspect in Game...' }] } : {}),
    ...holdFields(spec),
    ...(shownNameTag !== undefined ? { fraudwarnings: [`Name Tag: ''${shownNameTag}''`] } : {}),
    name,
    name_color: starred ? '8650AC' : statTrak ? 'CF6A32' : 'D2D2D2',
    type,
    market_name: marketHashName,
    market_hash_name: marketHashName,
    ...(inspectable && marketable ? { market_actions: [{ link: inspectLink, name: 'Inspect in Game...' }] } : {}),
    commodity: isSkin ? 0 : 1,
    market_tradable_restriction: 7,
    market_marketable_restriction: 7,
    marketable,
    tags,
  };
  // Steam gives every distinct description (stickers, name tag, hold) its own instance id.
  const plain = stickers.length === 0 && !charm && shownNameTag === undefined && tradable === 1 && !spec.legacyInspect;
  if (!plain) description.instanceid = String(hash32(JSON.stringify(description)) || 1);

  let properties: SteamAssetProperties | null = null;
  if (inspectable) {
    const standalonePattern = spec.pattern ?? (spec.propertyPattern === undefined ? 0 : undefined);
    const certificate = certificateHex(
      {
        accountid: Number(BigInt(ownerSteamId64) - STEAMID64_BASE),
        itemid: BigInt(assetId),
        defindex: item.def ?? 0,
        paintindex: isSkin && !item.base ? (item.index ?? 0) : 0,
        rarity: starred ? 6 : rarity,
        quality: Number(quality[0]),
        ...(wear === undefined ? {} : { paintwearFloat: wear }),
        ...(seed === undefined ? {} : { paintseed: seed }),
        ...(statTrak ? { killeaterscoretype: 0, killeatervalue: spec.statTrak } : {}),
        ...(spec.nameTag !== undefined ? { customname: spec.nameTag } : {}),
        stickers:
          item.type === 'sticker'
            ? [{ slot: 0, stickerId: item.index ?? 0 }]
            : stickers.map(({ spec: s, lib }) => ({
                slot: s.slot,
                stickerId: lib.index ?? 0,
                ...(s.wear ? { wear: s.wear } : {}),
                ...(s.offsetX !== undefined ? { offsetX: s.offsetX } : {}),
                ...(s.offsetY !== undefined ? { offsetY: s.offsetY } : {}),
                ...(s.rotation !== undefined ? { rotation: s.rotation } : {}),
              })),
        keychains:
          item.type === 'keychain'
            ? [{ slot: 0, stickerId: item.index ?? 0, ...(standalonePattern === undefined ? {} : { pattern: standalonePattern }) }]
            : charm
              ? [
                  {
                    slot: 0,
                    stickerId: charm.lib.index ?? 0,
                    ...(charm.spec.pattern === undefined ? {} : { pattern: charm.spec.pattern }),
                    offsetX: charm.spec.offsetX ?? 0,
                    offsetY: charm.spec.offsetY ?? 0,
                    offsetZ: charm.spec.offsetZ ?? 0,
                  },
                ]
              : [],
        inventory: 3221225475,
        origin: 8,
      },
      (hash32(assetId) % 255) + 1,
    );
    const list: SteamAssetProperty[] = [];
    if (seed !== undefined) list.push({ propertyid: 1, int_value: String(seed), name: propertyNames[1] });
    if (wear !== undefined) list.push({ propertyid: 2, float_value: String(wear), name: propertyNames[2] });
    if (spec.propertyPattern !== undefined) list.push({ propertyid: 3, int_value: String(spec.propertyPattern), name: propertyNames[3] });
    if (spec.propertyNameTag !== undefined) list.push({ propertyid: 5, string_value: spec.propertyNameTag, name: propertyNames[5] });
    if (!spec.legacyInspect) list.push({ propertyid: 6, string_value: certificate, name: propertyNames[6] });
    properties = { appid: 730, contextid: '2', assetid: assetId, asset_properties: list };
    if (spec.accessories || charm?.spec.accessoryPattern !== undefined) {
      // Stickers first, then the charm, each with its own class id, as Steam lists them.
      const accessories: SteamAssetAccessory[] = stickers.map(({ spec: s, lib }) => ({
        classid: classIdOf(lib.name),
        parent_relationship_properties: [{ propertyid: 4, float_value: String(Math.fround(s.wear ?? 0)), name: propertyNames[4] }],
      }));
      if (charm) {
        const pattern = charm.spec.accessoryPattern ?? charm.spec.pattern;
        accessories.push({
          classid: classIdOf(charm.lib.name),
          ...(pattern === undefined ? {} : { standalone_properties: [{ propertyid: 3, int_value: String(pattern), name: propertyNames[3] }] }),
        });
      }
      properties.asset_accessories = accessories;
    }
  }

  return {
    asset: { appid: 730, contextid: '2', assetid: assetId, classid, instanceid: description.instanceid, amount: '1' },
    description,
    properties,
    marketHashName,
  };
}

/** An inventory from specs, asset ids counting down from `firstAssetId` (Steam lists newest first). */
export function inventoryOf(ownerSteamId64: string, specs: readonly ItemSpec[], firstAssetId: bigint, options: BuildOptions = {}): InventoryFixture {
  const fixture: InventoryFixture = { assets: [], descriptions: [], asset_properties: [] };
  const seen = new Set<string>();
  specs.forEach((spec, i) => {
    const built = buildItem(spec, String(firstAssetId - BigInt(i)), ownerSteamId64, options);
    fixture.assets.push(built.asset);
    const key = `${built.asset.classid}_${built.asset.instanceid}`;
    if (!seen.has(key)) {
      seen.add(key);
      fixture.descriptions.push(built.description);
    }
    if (built.properties) fixture.asset_properties.push(built.properties);
  });
  return fixture;
}
