/**
 * Default fixtures of the Steam fake: a few SteamID64s with profiles and inventories, and the
 * big-inventory generator the benchmark uses. Everything is deterministic except trade-hold dates,
 * which lie a week after the fake starts (a hold is only a hold while it is in the future).
 */
import { type ItemSpec, inventoryOf } from './items.ts';
import type { InventoryFixture, PlayerSummary } from './types.ts';

/** Public profile with the rich inventory; the default signed-in OpenID user. */
export const PUBLIC_STEAM_ID = '76561198012345678';
/** Private profile (communityvisibilitystate 1); inventory private (403 null). */
export const PRIVATE_STEAM_ID = '76561198023456789';
/** Friends-only profile (communityvisibilitystate 2); inventory private to strangers (403 null). */
export const FRIENDS_ONLY_STEAM_ID = '76561198034567890';
/** Public profile with an empty inventory. */
export const EMPTY_STEAM_ID = '76561198045678901';
/** Public profile with bigInventory(…, 5000): 3 pages of ≤ 2000. */
export const BIG_STEAM_ID = '76561198056789012';
/** Public profile with a small tradable inventory: a trade partner. */
export const PARTNER_STEAM_ID = '76561198067890123';
/** A valid individual SteamID64 Steam knows nothing about: players [] and inventory 404. */
export const UNKNOWN_STEAM_ID = '76561198099999999';
/**
 * Public profile whose inventory is shaped as Steam sends it since 2025 (steam2026InventorySpecs):
 * name tags as property 5 with none in the certificate, charm patterns only in `asset_accessories`
 * and as a standalone charm's property 3, one item with the legacy `S…A…D…` inspect action and no
 * certificate, and items where the certificate and the properties disagree (the certificate wins).
 */
export const STEAM_2026_STEAM_ID = '76561198078901234';
/** The same items as STEAM_2026_STEAM_ID with every property `name` in German (as `l=german` gives). */
export const STEAM_2026_GERMAN_STEAM_ID = '76561198089012345';
/** Public profile whose inventory has every hold and protection text form (holds2026InventorySpecs). */
export const HOLDS_2026_STEAM_ID = '76561198090123456';

const AVATAR_HASH = 'fef49e7fa7e1997310d705b2a6158ff8dc1cdfeb';
const AVATAR = 'https://avatars.steamstatic.com/fef49e7fa7e1997310d705b2a6158ff8dc1cdfeb';

/** A summary with Steam's fields; private data only for public profiles, as Steam does. */
export function profile(steamId64: string, fields: Partial<PlayerSummary> & { personaname: string }): PlayerSummary {
  const visibility = fields.communityvisibilitystate ?? 3;
  const summary: PlayerSummary = {
    steamid: steamId64,
    communityvisibilitystate: visibility,
    profilestate: 1,
    profileurl: `https://steamcommunity.com/profiles/${steamId64}/`,
    avatar: `${AVATAR}.jpg`,
    avatarmedium: `${AVATAR}_medium.jpg`,
    avatarfull: `${AVATAR}_full.jpg`,
    avatarhash: AVATAR_HASH,
    lastlogoff: 1763880000,
    personastate: 0,
    ...(visibility === 3
      ? { commentpermission: 1, primaryclanid: '103582791429521408', timecreated: 1262304000, loccountrycode: 'DE', personastateflags: 0 }
      : {}),
    ...fields,
  };
  return summary;
}

export function defaultProfiles(): Map<string, PlayerSummary> {
  return new Map([
    [PUBLIC_STEAM_ID, profile(PUBLIC_STEAM_ID, { personaname: 'fake public', realname: 'Ada Public', loccountrycode: 'DE', timecreated: 1262304000 })],
    [PRIVATE_STEAM_ID, profile(PRIVATE_STEAM_ID, { personaname: 'fake private', communityvisibilitystate: 1 })],
    [FRIENDS_ONLY_STEAM_ID, profile(FRIENDS_ONLY_STEAM_ID, { personaname: 'fake friends only', communityvisibilitystate: 2 })],
    [EMPTY_STEAM_ID, profile(EMPTY_STEAM_ID, { personaname: 'fake empty', loccountrycode: 'US', timecreated: 1420070400 })],
    [BIG_STEAM_ID, profile(BIG_STEAM_ID, { personaname: 'fake hoarder', loccountrycode: 'SE', timecreated: 1325376000 })],
    [PARTNER_STEAM_ID, profile(PARTNER_STEAM_ID, { personaname: 'fake partner', loccountrycode: 'PL', timecreated: 1356998400 })],
    [STEAM_2026_STEAM_ID, profile(STEAM_2026_STEAM_ID, { personaname: 'fake 2026', loccountrycode: 'BR', timecreated: 1420070400 })],
    [STEAM_2026_GERMAN_STEAM_ID, profile(STEAM_2026_GERMAN_STEAM_ID, { personaname: 'fake 2026 de', loccountrycode: 'DE', timecreated: 1420070400 })],
    [HOLDS_2026_STEAM_ID, profile(HOLDS_2026_STEAM_ID, { personaname: 'fake holds', loccountrycode: 'FR', timecreated: 1420070400 })],
  ]);
}

/** A week from `now`, at 07:00:00 GMT, as Steam's holds end. */
function holdEnd(now: Date, days: number): Date {
  const end = new Date(now.getTime() + days * 86_400_000);
  end.setUTCHours(7, 0, 0, 0);
  return end;
}

/**
 * The rich inventory: every kind of state the service decodes. Market hash names are real (the
 * fake's test checks each against the catalog, except the coin, which the catalog leaves out).
 */
export function richInventorySpecs(now: Date): ItemSpec[] {
  return [
    {
      item: 'AK-47 | Redline',
      wear: 0.25384029746055603,
      seed: 661,
      stickers: [
        { item: 'Sticker | Crown (Foil)', slot: 0, offsetX: 0.1234, offsetY: -0.0456 },
        { item: 'Sticker | Titan (Holo) | Katowice 2014', slot: 1, wear: 0.25 },
        { item: 'Sticker | s1mple (Gold) | Cologne 2016', slot: 2, wear: 0.5, rotation: 15 },
        { item: 'Sticker | s1mple | MLG Columbus 2016', slot: 3 },
      ],
      charm: { item: "Charm | Lil' Squirt", pattern: 47123, offsetX: 1.5, offsetY: 0.25, offsetZ: -2.75 },
    },
    { item: 'M4A1-S | Printstream', wear: 0.1123456, seed: 12, statTrak: 1337, nameTag: 'Printer go brrr' },
    { item: 'M4A1-S | Printstream', wear: 0.3012, seed: 803, statTrak: 0 },
    { item: 'Karambit | Doppler', phase: 'Phase 2', wear: 0.0123, seed: 412 },
    { item: 'Karambit | Doppler', phase: 'Ruby', wear: 0.0087, seed: 5 },
    { item: 'Karambit | Doppler', phase: 'Black Pearl', wear: 0.0301, seed: 734, statTrak: 42 },
    { item: 'Sport Gloves | Vice', wear: 0.0812, seed: 555 },
    { item: 'AWP | Asiimov', wear: 0.2801, seed: 100, tradeHoldUntil: holdEnd(now, 7) },
    { item: 'Glock-18 | Fade', wear: 0.0299, seed: 999, tradeHoldUntil: holdEnd(now, 3), nameTag: 'Fade to black' },
    { item: 'Agent | Sir Bloody Miami Darryl | The Professionals' },
    { item: 'Container | Revolution Case' },
    { item: 'Container | Revolution Case' },
    { item: 'Sticker | Crown (Foil)' },
    { item: "Charm | Lil' Squirt", pattern: 1234 },
    { item: 'Desert Eagle | Blaze', wear: 0.0456, seed: 321, untradable: true },
    { item: 'Collectible | 10 Year Birthday Coin', untradable: true },
  ];
}

/**
 * The inventory as Steam sends it since 2025 (docs/design.md §14), every seed given so an owner's asset ids
 * change nothing but ids and certificates. In order:
 *  0. a Redline with two stickers and a charm whose pattern is only in asset_accessories;
 *  1. a StatTrak Printstream whose name tag is only property 5;
 *  2. a Glock-18 Fade whose certificate has a name tag and property 5 another (the certificate wins);
 *  3. a standalone charm whose pattern is only property 3;
 *  4. a standalone charm whose certificate has a pattern and property 3 another (the certificate wins);
 *  5. an AWP Asiimov with the legacy S…A…D… inspect action and no certificate (state from properties 1 and 2);
 *  6. a Karambit Doppler Ruby with a charm-less certificate, a name tag as property 5 and the accessory list;
 *  7. an AK-47 Redline whose certificate charm pattern (47123) disagrees with its accessory (1) (the certificate wins).
 */
export function steam2026InventorySpecs(): ItemSpec[] {
  return [
    {
      item: 'AK-47 | Redline',
      wear: 0.25384029746055603,
      seed: 661,
      stickers: [
        { item: 'Sticker | Crown (Foil)', slot: 0, wear: 0.125 },
        { item: 'Sticker | Titan (Holo) | Katowice 2014', slot: 1 },
      ],
      charm: { item: "Charm | Lil' Squirt", accessoryPattern: 31337, offsetX: 1.5, offsetY: 0.25, offsetZ: -2.75 },
      accessories: true,
    },
    { item: 'M4A1-S | Printstream', wear: 0.1123456, seed: 12, statTrak: 7, propertyNameTag: 'Brasil 2026 ✓' },
    { item: 'Glock-18 | Fade', wear: 0.0299, seed: 999, nameTag: 'from the certificate', propertyNameTag: 'from property 5' },
    { item: "Charm | Lil' Squirt", propertyPattern: 777 },
    { item: "Charm | Lil' Squirt", pattern: 1234, propertyPattern: 4321 },
    { item: 'AWP | Asiimov', wear: 0.2801, seed: 100, legacyInspect: true },
    { item: 'Karambit | Doppler', phase: 'Ruby', wear: 0.0087, seed: 5, propertyNameTag: 'Rubin', accessories: true },
    {
      item: 'AK-47 | Redline',
      wear: 0.3012,
      seed: 803,
      charm: { item: "Charm | Lil' Squirt", pattern: 47123, accessoryPattern: 1 },
      accessories: true,
    },
  ];
}

/**
 * Every hold and protection form of docs/design.md §17, each instant a different number of days after `now`
 * at 07:00 GMT (dates below are examples of the form). In order:
 *  0. protected (sealed 1), "⇆ … transferred until [date]…[/date]" (bbcode; year-less without preserve_bbcode=1);
 *  1. a hold, "Tradable/Marketable After [date]…[/date]";
 *  2. a hold, "Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT";
 *  3. a hold, "Tradable/Marketable After 27 Aug, 2026 (7:00:00) GMT";
 *  4. a hold, "Tradable/Marketable After Oct 01, 2026 (7:00:00)" (no GMT);
 *  5. a hold, "Tradable/Marketable After 29 Jun @ 7:00am" (year-less, as rendered since 2026-06-24);
 *  6. a hold given only by `item_expiration`;
 *  7. protected, "⇆ … transferred until Apr 13, 2026 (7:00:00) GMT";
 *  8. listed on the Community Market (sealed 1, sealed_type 1, no instant);
 *  9. a plain tradable item.
 */
export function holds2026InventorySpecs(now: Date): ItemSpec[] {
  return [
    { item: 'AK-47 | Redline', wear: 0.2, seed: 1, protectedUntil: holdEnd(now, 7) },
    { item: 'AWP | Asiimov', wear: 0.3, seed: 2, tradeHoldUntil: holdEnd(now, 6) },
    { item: 'Glock-18 | Fade', wear: 0.02, seed: 3, tradeHoldUntil: holdEnd(now, 5), holdForm: 'month_first' },
    { item: 'M4A1-S | Printstream', wear: 0.1, seed: 4, tradeHoldUntil: holdEnd(now, 4), holdForm: 'day_first' },
    { item: 'Desert Eagle | Blaze', wear: 0.05, seed: 5, tradeHoldUntil: holdEnd(now, 3), holdForm: 'month_first_no_gmt' },
    { item: 'Karambit | Doppler', phase: 'Phase 2', wear: 0.01, seed: 6, tradeHoldUntil: holdEnd(now, 2), holdForm: 'yearless' },
    { item: 'Sport Gloves | Vice', wear: 0.08, seed: 7, tradeHoldUntil: holdEnd(now, 1), holdForm: 'item_expiration' },
    { item: 'AK-47 | Redline', wear: 0.3, seed: 8, protectedUntil: holdEnd(now, 8), holdForm: 'month_first' },
    { item: 'AWP | Asiimov', wear: 0.25, seed: 9, marketListing: true },
    { item: 'Container | Revolution Case' },
  ];
}

const PARTNER_SPECS: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.1611, seed: 7 },
  { item: 'AWP | Asiimov', wear: 0.3333, seed: 200 },
  { item: 'Container | Revolution Case' },
];

/** Items the big inventory cycles through (real names, various kinds). */
const BIG_CYCLE: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.2 },
  { item: 'AWP | Asiimov', wear: 0.3 },
  { item: 'M4A1-S | Printstream', wear: 0.1, statTrak: 10 },
  { item: 'Glock-18 | Fade', wear: 0.02 },
  { item: 'Desert Eagle | Blaze', wear: 0.05 },
  { item: 'Karambit | Doppler', phase: 'Phase 1', wear: 0.01 },
  { item: 'Karambit | Doppler', phase: 'Phase 3', wear: 0.02 },
  { item: 'Sport Gloves | Vice', wear: 0.4 },
  { item: 'Container | Revolution Case' },
  { item: 'Sticker | Crown (Foil)' },
  { item: "Charm | Lil' Squirt", pattern: 500 },
  { item: 'Agent | Sir Bloody Miami Darryl | The Professionals' },
  { item: 'AK-47 | Redline', wear: 0.5, stickers: [{ item: 'Sticker | Crown (Foil)', slot: 0 }] },
];

/** First asset id of an owner's generated inventory: distinct per owner, as Steam's are global. */
function firstAssetIdFor(steamId64: string, salt: number): bigint {
  return 40_000_000_000n + (BigInt(steamId64) % 100_000n) * 100_000n + BigInt(salt) * 10_000n + 9_999n;
}

/** Hold and protection variants bigInventory's `holds` option cycles through (docs/design.md §17): every text form, protection and a listing. */
const BIG_HOLD_CYCLE: Pick<ItemSpec, 'holdForm' | 'marketListing'>[] = [
  {},
  { holdForm: 'bbcode' },
  { holdForm: 'month_first' },
  { holdForm: 'day_first' },
  { holdForm: 'month_first_no_gmt' },
  { holdForm: 'yearless' },
  { holdForm: 'item_expiration' },
  { marketListing: true },
];

/**
 * The benchmark's inventory: `assets` items (default 5 000 → 3 pages of ≤ 2000), each with its own
 * seed, wear and certificate; wears spread over each skin's exteriors. With `holds`, items cycle
 * through no hold, every hold text form (as a hold, and every other one as protection) and a market
 * listing, each hold at its own minute within 8 days of `holds.now` so each has its own description.
 */
export function bigInventory(steamId64: string, assets = 5000, options: { holds?: { now: Date } } = {}): InventoryFixture {
  const specs: ItemSpec[] = [];
  for (let i = 0; i < assets; i += 1) {
    const base = BIG_CYCLE[i % BIG_CYCLE.length]!;
    const spec: ItemSpec = { ...base };
    if (base.wear !== undefined) {
      // Stay inside the skin's own float range so the market name exists.
      const spread = base.item === 'Karambit | Doppler' || base.item === 'Glock-18 | Fade' ? 0.06 : 0.1;
      spec.wear = Math.min(0.79, base.wear + (((i * 7919) % 1000) / 1000) * spread);
      if (base.item === 'AK-47 | Redline') spec.wear = Math.max(0.1, spec.wear);
      if (base.item === 'Sport Gloves | Vice' || base.item === 'Desert Eagle | Blaze')
        spec.wear = Math.max(0.06, Math.min(spec.wear, base.item === 'Desert Eagle | Blaze' ? 0.08 : 0.79));
      if (base.item === 'AWP | Asiimov') spec.wear = Math.max(0.18, spec.wear);
      spec.seed = (i * 131) % 1001;
    }
    if (options.holds) {
      const variant = BIG_HOLD_CYCLE[i % BIG_HOLD_CYCLE.length]!;
      if (variant.marketListing) spec.marketListing = true;
      else if (variant.holdForm) {
        const at = new Date(options.holds.now.getTime() + 3_600_000 + ((i * 7919) % (7 * 24 * 60)) * 60_000);
        at.setUTCSeconds(0, 0);
        spec.holdForm = variant.holdForm;
        if (Math.floor(i / BIG_HOLD_CYCLE.length) % 2 === 0) spec.tradeHoldUntil = at;
        else spec.protectedUntil = at;
      }
    }
    specs.push(spec);
  }
  return inventoryOf(steamId64, specs, 30_000_000_000n + (BigInt(steamId64) % 100_000n) * 100_000n + BigInt(assets));
}

export type InventoryState = InventoryFixture | 'private' | 'not_found';

/** The default inventories; the big one is built on first use (it takes a moment). */
export function defaultInventories(now: Date): Map<string, InventoryState | (() => InventoryFixture)> {
  return new Map<string, InventoryState | (() => InventoryFixture)>([
    [PUBLIC_STEAM_ID, () => inventoryOf(PUBLIC_STEAM_ID, richInventorySpecs(now), firstAssetIdFor(PUBLIC_STEAM_ID, 1))],
    [PRIVATE_STEAM_ID, 'private'],
    [FRIENDS_ONLY_STEAM_ID, 'private'],
    [EMPTY_STEAM_ID, { assets: [], descriptions: [], asset_properties: [] }],
    [BIG_STEAM_ID, () => bigInventory(BIG_STEAM_ID)],
    [PARTNER_STEAM_ID, () => inventoryOf(PARTNER_STEAM_ID, PARTNER_SPECS, firstAssetIdFor(PARTNER_STEAM_ID, 2))],
    [STEAM_2026_STEAM_ID, () => inventoryOf(STEAM_2026_STEAM_ID, steam2026InventorySpecs(), firstAssetIdFor(STEAM_2026_STEAM_ID, 3))],
    [
      STEAM_2026_GERMAN_STEAM_ID,
      () => inventoryOf(STEAM_2026_GERMAN_STEAM_ID, steam2026InventorySpecs(), firstAssetIdFor(STEAM_2026_GERMAN_STEAM_ID, 4), { locale: 'german' }),
    ],
    [HOLDS_2026_STEAM_ID, () => inventoryOf(HOLDS_2026_STEAM_ID, holds2026InventorySpecs(now), firstAssetIdFor(HOLDS_2026_STEAM_ID, 5))],
  ]);
}
