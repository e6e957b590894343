import { describe, expect, test } from 'bun:test';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { type CatalogItem, catalogIdFor, type PhaseVersion } from '../../shared/catalog/identity.ts';
import { DEFAULT_SKIN_KINDS, parseMarketHashName } from '../../shared/catalog/market-name-parser.ts';

/**
 * docs/design.md §19: market names the catalog lacks are read into the attributes the generator gives the same
 * item. Real Steam market names of every kind: the generated catalog's (every one must read back as
 * generated) and names from the market after @ianlucas/cs2-lib 7.33 (highlight charms of Austin 2025,
 * Budapest 2025 and Cologne 2026, souvenir highlight packages, a 2026 sticker, a new souvenir skin).
 */

type Expected = Partial<Omit<CatalogItem, 'catalog_id' | 'market_hash_name'>> & Pick<CatalogItem, 'type'>;

const parsed = (name: string): CatalogItem => {
  const result = parseMarketHashName(name);
  if (result.status !== 'parsed') throw new Error(`${name}: ${result.status} (${result.reason})`);
  return result.item;
};

const ATTRIBUTES = ['type', 'weapon', 'exterior', 'stattrak', 'souvenir', 'phases'] as const;
const DOPPLER: PhaseVersion[] = ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'ruby', 'sapphire', 'black-pearl'];
const GAMMA_DOPPLER: PhaseVersion[] = ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'emerald'];

// Real market names, each with what it must read as (attributes not named: null, false or []).
const REAL_NAMES: [string, Expected][] = [
  // Weapon skins, StatTrak™, Souvenir.
  ['AK-47 | Redline (Field-Tested)', { type: 'weapon', weapon: 'AK-47', exterior: 'field-tested' }],
  ['StatTrak™ M4A1-S | Hyper Beast (Minimal Wear)', { type: 'weapon', weapon: 'M4A1-S', exterior: 'minimal-wear', stattrak: true }],
  ['Souvenir AWP | Dragon Lore (Factory New)', { type: 'weapon', weapon: 'AWP', exterior: 'factory-new', souvenir: true }],
  // A 2026 souvenir skin the library does not have yet.
  ['Souvenir MAC-10 | Tornado (Battle-Scarred)', { type: 'weapon', weapon: 'MAC-10', exterior: 'battle-scarred', souvenir: true }],
  ['Glock-18 | Gamma Doppler (Factory New)', { type: 'weapon', weapon: 'Glock-18', exterior: 'factory-new', phases: GAMMA_DOPPLER }],
  // Knives (★), vanilla knives, Doppler phases as versions.
  ['★ Karambit | Doppler (Factory New)', { type: 'knife', weapon: 'Karambit', exterior: 'factory-new', phases: DOPPLER }],
  [
    '★ StatTrak™ Butterfly Knife | Gamma Doppler (Minimal Wear)',
    { type: 'knife', weapon: 'Butterfly Knife', exterior: 'minimal-wear', stattrak: true, phases: GAMMA_DOPPLER },
  ],
  ['★ Karambit', { type: 'knife', weapon: 'Karambit' }],
  ['★ StatTrak™ Kukri Knife', { type: 'knife', weapon: 'Kukri Knife', stattrak: true }],
  ['★ Talon Knife | Boreal Forest (Battle-Scarred)', { type: 'knife', weapon: 'Talon Knife', exterior: 'battle-scarred' }],
  // Gloves.
  ["★ Sport Gloves | Pandora's Box (Minimal Wear)", { type: 'gloves', weapon: 'Sport Gloves', exterior: 'minimal-wear' }],
  ['★ Hand Wraps | Giraffe (Field-Tested)', { type: 'gloves', weapon: 'Hand Wraps', exterior: 'field-tested' }],
  // Stickers, old ones with Steam's double space, and a 2026 one.
  ['Sticker | ultimate (Gold) | Budapest 2025', { type: 'sticker' }],
  ['Sticker | niko  | Paris 2023', { type: 'sticker' }],
  ['Sticker | zorte (Gold, Ranked) | Cologne 2026', { type: 'sticker' }],
  ['Sticker | Run Boost Lift Kits', { type: 'sticker' }],
  // Sticker slabs are charms.
  ['Sticker Slab | Crown (Foil)', { type: 'charm' }],
  ['Sticker Slab | Mood Ring Strafe (Holo)', { type: 'charm' }],
  // Charms and souvenir highlight charms.
  ["Charm | Lil' Ava", { type: 'charm' }],
  ['Souvenir Charm | Austin 2025 Highlight | chopper Double Kill', { type: 'charm', souvenir: true }],
  ['Souvenir Charm | Austin 2025 Highlight | apEX: Help Is Here', { type: 'charm', souvenir: true }],
  ["Souvenir Charm | Austin 2025 Highlight | Don't Bring A Knife To A Gunfight", { type: 'charm', souvenir: true }],
  ['Souvenir Charm | Budapest 2025 Highlight | b1t mid-air catch', { type: 'charm', souvenir: true }],
  ['Souvenir Charm | Budapest 2025 Highlight | karrigan vs Vitality on Overpass', { type: 'charm', souvenir: true }],
  ['Souvenir Charm | Cologne 2026 Highlight | MATYS ACE', { type: 'charm', souvenir: true }],
  // Patches, graffiti.
  ['Patch | Phoenix', { type: 'patch' }],
  ['Patch | Copenhagen Flames (Gold) | Stockholm 2021', { type: 'patch' }],
  ['Sealed Graffiti | Chess King (Brick Red)', { type: 'graffiti' }],
  // Cases, capsules, souvenir packages (and the souvenir highlight packages the library lacks), boxes, terminals.
  ['Fever Case', { type: 'container' }],
  ['CS:GO Weapon Case 3', { type: 'container' }],
  ['Budapest 2025 Legends Sticker Capsule', { type: 'container' }],
  ['Autograph Capsule | Fnatic | Cologne 2015', { type: 'container' }],
  ['ESL One Cologne 2015 Legends (Foil)', { type: 'container' }],
  ['Boston 2018 Minor Challengers with Flash Gaming (Holo-Foil)', { type: 'container' }],
  ['2020 RMR Contenders', { type: 'container' }],
  ['Austin 2025 Dust II Souvenir Package', { type: 'container' }],
  ['Budapest 2025 Mirage Souvenir Package', { type: 'container' }],
  ['Austin 2025 Inferno Souvenir Highlight Package', { type: 'container' }],
  ['Austin 2025 Mirage Souvenir Highlight Package', { type: 'container' }],
  ['Stockholm 2021 Legends Patch Pack', { type: 'container' }],
  ['Sealed Genesis Terminal', { type: 'container' }],
  ['StatTrak™ Masterminds Music Kit Box', { type: 'container' }],
  ['Collectible Pins Capsule Series 2', { type: 'container' }],
  // Keys, pins, tools.
  ['Spectrum Case Key', { type: 'key' }],
  ['Cache Pin', { type: 'collectible' }],
  ['Name Tag', { type: 'tool' }],
  ['StatTrak™ Swap Tool', { type: 'tool' }],
  // Agents (patches applied to an agent are not part of its market name).
  ['Sir Bloody Miami Darryl | The Professionals', { type: 'agent' }],
  ["Cmdr. Frank 'Wet Sox' Baroud | SEAL Frogman", { type: 'agent' }],
  ['Ground Rebel  | Elite Crew', { type: 'agent' }],
  // Music kits and StatTrak™ music kits.
  ['Music Kit | Daniel Sadowski, The 8-Bit Kit', { type: 'music_kit' }],
  ['StatTrak™ Music Kit | Noisia, Sharpened', { type: 'music_kit', stattrak: true }],
];

describe('parseMarketHashName', () => {
  test.each(REAL_NAMES)('%s', (name, expected) => {
    expect(parsed(name)).toEqual({
      catalog_id: catalogIdFor(name),
      market_hash_name: name,
      weapon: null,
      exterior: null,
      // Nothing in a name says these: null until a catalog sync with a library that knows the item.
      rarity: null,
      stattrak: false,
      souvenir: false,
      definition_index: null,
      paint_index: null,
      phases: [],
      ...expected,
    });
  });

  test('every name the generator produces reads back with its identity, catalog id and attributes', () => {
    const mismatches: string[] = [];
    const catalog = generateCatalog();
    for (const generated of catalog) {
      const result = parseMarketHashName(generated.market_hash_name);
      if (result.status !== 'parsed') {
        mismatches.push(`${generated.market_hash_name}: ${result.reason}`);
        continue;
      }
      expect(result.item.catalog_id).toBe(generated.catalog_id);
      for (const attribute of ATTRIBUTES) {
        if (JSON.stringify(result.item[attribute]) !== JSON.stringify(generated[attribute])) mismatches.push(`${generated.market_hash_name}: ${attribute}`);
      }
    }
    expect(mismatches).toEqual([]);
    expect(catalog.length).toBeGreaterThan(30_000);
  });

  test('names that fit no item kind are unrecognised: passes, gift packages, skins without an exterior, impossible qualities', () => {
    for (const name of [
      'Operation Hydra Access Pass',
      'Audience Participation Parcel',
      'AK-47 | Redline',
      'StatTrak™ Souvenir AK-47 | Redline (Field-Tested)',
      '★ AK-47 | Redline (Field-Tested)',
      'Karambit | Fade (Factory New)',
      '★ StatTrak™ Sport Gloves | Vice (Field-Tested)',
      'Souvenir ★ Karambit | Fade (Factory New)',
      'Sticker | Crown (Field-Tested)',
      'Souvenir Sticker | Crown (Foil)',
      'StatTrak™ Sticker | Crown (Foil)',
      'Graffiti',
      'Sticker | ',
      ' AK-47 | Redline (Field-Tested)',
      '',
    ]) {
      expect({ name, status: parseMarketHashName(name).status }).toEqual({ name, status: 'unrecognised' });
    }
  });

  test('names that could be two things are ambiguous and never parsed', () => {
    for (const name of [
      // A skin of a weapon no catalog knows: a new gun, knife or pair of gloves?
      'Cobra Knife | Fade (Factory New)',
      '★ Cobra Knife | Fade (Factory New)',
      '★ Cobra Knife',
      // `X | Y` whose Y is no agent faction: an agent of a new faction, or a new kind of item?
      'Someone | New Faction',
      'Graffiti | Recoil AK-47',
    ]) {
      const result = parseMarketHashName(name);
      expect({ name, status: result.status }).toEqual({ name, status: 'ambiguous' });
    }
  });

  test('a weapon the catalog knows (a newer library synced) makes its skins parse', () => {
    const skinKinds = new Map(DEFAULT_SKIN_KINDS).set('Cobra Knife', 'knife');
    expect(parseMarketHashName('★ Cobra Knife | Fade (Factory New)', { skinKinds })).toMatchObject({
      status: 'parsed',
      item: { type: 'knife', weapon: 'Cobra Knife', exterior: 'factory-new' },
    });
    expect(parseMarketHashName('Someone | New Faction', { agentFactions: new Set(['New Faction']) })).toMatchObject({
      status: 'parsed',
      item: { type: 'agent' },
    });
  });
});
