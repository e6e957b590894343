import { describe, expect, test } from 'bun:test';
import { exteriorsForWear, generateCatalog } from '../../shared/catalog/generate.ts';
import { type CatalogItem, catalogIdFor, EXTERIORS, ITEM_TYPES, isCatalogId, PHASE_VERSIONS, RARITIES } from '../../shared/catalog/identity.ts';

const catalog = generateCatalog();
const byName = new Map(catalog.map((item) => [item.market_hash_name, item]));
const item = (name: string): CatalogItem => {
  const found = byName.get(name);
  if (!found) throw new Error(`not in the catalog: ${name}`);
  return found;
};
const has = (name: string) => byName.has(name);
const EXTERIOR_SUFFIX = / \((Factory New|Minimal Wear|Field-Tested|Well-Worn|Battle-Scarred)\)$/;

describe('the generated catalog', () => {
  test('holds every marketable variant: over 30 000 items of every type', () => {
    expect(catalog.length).toBeGreaterThan(30_000);
    const types = new Set(catalog.map((i) => i.type));
    expect([...types].sort()).toEqual([...ITEM_TYPES].sort());
  });

  test('market_hash_name and catalog_id are unique', () => {
    expect(new Set(catalog.map((i) => i.market_hash_name)).size).toBe(catalog.length);
    expect(new Set(catalog.map((i) => i.catalog_id)).size).toBe(catalog.length);
  });

  test('is sorted by market_hash_name and identical on every run', () => {
    const names = catalog.map((i) => i.market_hash_name);
    expect(names).toEqual([...names].sort());
    expect(generateCatalog()).toEqual(catalog);
  });

  test('catalog ids are the stable digest of the name', () => {
    // Fixed forever: a change here breaks every stored price and every client's saved id.
    expect(catalogIdFor('AK-47 | Redline (Field-Tested)')).toBe('itm_g5dlzlbrs4qunw3pcgtsp7k62y');
    expect(item('AK-47 | Redline (Field-Tested)').catalog_id).toBe('itm_g5dlzlbrs4qunw3pcgtsp7k62y');
    for (const entry of catalog) {
      expect(isCatalogId(entry.catalog_id)).toBe(true);
    }
    expect(catalog.every((i) => i.catalog_id === catalogIdFor(i.market_hash_name))).toBe(true);
  });

  test('every attribute is within its enumeration', () => {
    for (const entry of catalog) {
      expect(ITEM_TYPES).toContain(entry.type);
      if (entry.exterior !== null) expect(EXTERIORS).toContain(entry.exterior);
      if (entry.rarity !== null) expect(RARITIES).toContain(entry.rarity);
      for (const phase of entry.phases) expect(PHASE_VERSIONS).toContain(phase);
      expect(entry.stattrak && entry.souvenir).toBe(false);
    }
    expect(catalog.some((i) => i.market_hash_name.includes('StatTrak™ Souvenir') || i.market_hash_name.includes('Souvenir StatTrak™'))).toBe(false);
  });

  test('only weapon, knife and glove skins have an exterior, a weapon and a paint index', () => {
    for (const entry of catalog) {
      const skin = entry.type === 'weapon' || entry.type === 'knife' || entry.type === 'gloves';
      if (!skin) {
        expect(entry.weapon).toBeNull();
        expect(entry.exterior).toBeNull();
        expect(entry.paint_index).toBeNull();
      } else {
        expect(entry.weapon).toBeString();
      }
      if (entry.exterior !== null) expect(entry.market_hash_name).toMatch(EXTERIOR_SUFFIX);
    }
  });
});

describe('weapon skins', () => {
  test('AK-47 | Redline: plain and StatTrak, exteriors from its wear range, full attributes', () => {
    expect(item('AK-47 | Redline (Field-Tested)')).toEqual({
      catalog_id: 'itm_g5dlzlbrs4qunw3pcgtsp7k62y',
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      type: 'weapon',
      weapon: 'AK-47',
      exterior: 'field-tested',
      rarity: 'classified',
      stattrak: false,
      souvenir: false,
      definition_index: 7,
      paint_index: 282,
      phases: [],
    });
    expect(item('StatTrak™ AK-47 | Redline (Field-Tested)')).toMatchObject({ stattrak: true, souvenir: false, weapon: 'AK-47', exterior: 'field-tested' });
    // Redline floats run 0.10–0.70: no Factory New, and never Souvenir.
    expect(has('AK-47 | Redline (Factory New)')).toBe(false);
    for (const exterior of ['Minimal Wear', 'Field-Tested', 'Well-Worn', 'Battle-Scarred']) expect(has(`AK-47 | Redline (${exterior})`)).toBe(true);
    expect(has('Souvenir AK-47 | Redline (Field-Tested)')).toBe(false);
  });

  test('AWP | Dragon Lore: Souvenir from the Cobblestone packages, never StatTrak', () => {
    expect(item('Souvenir AWP | Dragon Lore (Factory New)')).toMatchObject({
      type: 'weapon',
      weapon: 'AWP',
      exterior: 'factory-new',
      rarity: 'covert',
      stattrak: false,
      souvenir: true,
      definition_index: 9,
      paint_index: 344,
    });
    expect(has('AWP | Dragon Lore (Factory New)')).toBe(true);
    expect(catalog.some((i) => i.market_hash_name.startsWith('StatTrak™ AWP | Dragon Lore'))).toBe(false);
  });

  test('a skin whose floats stop at 0.08 comes only in Factory New and Minimal Wear', () => {
    const glockFade = catalog.filter((i) => i.market_hash_name.startsWith('Glock-18 | Fade (')).map((i) => i.exterior);
    expect(glockFade).toEqual(['factory-new', 'minimal-wear']);
    expect(exteriorsForWear(0, 0.08)).toEqual(['factory-new', 'minimal-wear']);
  });

  test('exteriors are the ranges [from, to) that overlap the wear range by more than a point', () => {
    expect(exteriorsForWear(0, 1)).toEqual([...EXTERIORS]);
    expect(exteriorsForWear(0, 0.07)).toEqual(['factory-new']);
    expect(exteriorsForWear(0.06, 0.8)).toEqual([...EXTERIORS]);
    expect(exteriorsForWear(0.18, 1)).toEqual(['field-tested', 'well-worn', 'battle-scarred']);
    expect(exteriorsForWear(0.45, 1)).toEqual(['battle-scarred']);
    expect(exteriorsForWear(0.1, 0.7)).toEqual(['minimal-wear', 'field-tested', 'well-worn', 'battle-scarred']);
  });

  test('M4A4 | Howl is contraband and StatTrak-capable (the case that held it is no longer listed by the lib)', () => {
    expect(item('M4A4 | Howl (Field-Tested)').rarity).toBe('contraband');
    expect(has('StatTrak™ M4A4 | Howl (Field-Tested)')).toBe(true);
  });

  test('stock weapons (no skin) are not in the catalog', () => {
    for (const name of ['AK-47', 'AWP', 'Desert Eagle', 'Glock-18']) expect(has(name)).toBe(false);
    expect(catalog.some((i) => i.type === 'weapon' && i.paint_index === null && i.phases.length === 0)).toBe(false);
  });
});

describe('knives and gloves', () => {
  test('a Doppler knife is one item per exterior carrying its phases; paint_index is null across phases', () => {
    const doppler = item('★ Karambit | Doppler (Factory New)');
    expect(doppler).toMatchObject({
      type: 'knife',
      weapon: 'Karambit',
      exterior: 'factory-new',
      rarity: 'covert',
      stattrak: false,
      definition_index: 507,
      paint_index: null,
      phases: ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'ruby', 'sapphire', 'black-pearl'],
    });
    expect(item('★ StatTrak™ Karambit | Doppler (Factory New)')).toMatchObject({ stattrak: true, phases: doppler.phases });
    expect(item('★ Karambit | Gamma Doppler (Factory New)').phases).toEqual(['phase-1', 'phase-2', 'phase-3', 'phase-4', 'emerald']);
    // Doppler is Factory New / Minimal Wear only; phase labels never leak into names.
    expect(has('★ Karambit | Doppler (Field-Tested)')).toBe(false);
    expect(catalog.some((i) => /Phase \d|\bRuby\b|Sapphire|Black Pearl|Emerald\)/.test(i.market_hash_name) && i.type === 'knife')).toBe(false);
  });

  test('Gamma Doppler pistols carry phases too', () => {
    expect(item('Glock-18 | Gamma Doppler (Factory New)')).toMatchObject({
      type: 'weapon',
      phases: ['phase-1', 'phase-2', 'phase-3', 'phase-4', 'emerald'],
      paint_index: null,
    });
  });

  test('vanilla knives have no exterior and come plain and StatTrak; the default knives are absent', () => {
    expect(item('★ Karambit')).toMatchObject({ type: 'knife', weapon: 'Karambit', exterior: null, stattrak: false, paint_index: null, definition_index: 507 });
    expect(item('★ StatTrak™ Karambit')).toMatchObject({ type: 'knife', stattrak: true, exterior: null });
    expect(has('★ Knife')).toBe(false);
    expect(has('Knife')).toBe(false);
  });

  test('gloves carry a star, an exterior and never StatTrak', () => {
    expect(item('★ Sport Gloves | Vice (Field-Tested)')).toMatchObject({
      type: 'gloves',
      weapon: 'Sport Gloves',
      exterior: 'field-tested',
      rarity: 'covert',
      stattrak: false,
      souvenir: false,
      definition_index: 5030,
      paint_index: 10048,
    });
    expect(catalog.some((i) => i.type === 'gloves' && i.stattrak)).toBe(false);
    // Vanilla gloves are not on the market.
    expect(has('★ Sport Gloves')).toBe(false);
  });

  test('every knife skin can be StatTrak', () => {
    for (const knife of catalog.filter((i) => i.type === 'knife' && !i.stattrak)) {
      expect(has(knife.market_hash_name.replace('★ ', '★ StatTrak™ '))).toBe(true);
    }
  });
});

describe('other item types keep Steam spellings', () => {
  test.each([
    ['Sticker | Shooter', 'sticker'],
    ['Patch | Crazy Banana', 'patch'],
    ["Charm | Lil' Ava", 'charm'],
    ['Sealed Graffiti | Ace', 'graffiti'],
    ['Chroma 2 Case', 'container'],
    ['Operation Breakout Weapon Case', 'container'],
    ['ESL One Cologne 2014 Cobblestone Souvenir Package', 'container'],
    ['Katowice 2019 Legends (Holo-Foil)', 'container'],
    ['Chroma 2 Case Key', 'key'],
    ['Special Agent Ava | FBI', 'agent'],
    ['Music Kit | Daniel Sadowski, Crimson Assault', 'music_kit'],
    ['StatTrak™ Music Kit | Daniel Sadowski, Crimson Assault', 'music_kit'],
    ['Alyx Pin', 'collectible'],
    ['Name Tag', 'tool'],
  ])('%s is a %s', (name, type) => {
    expect(item(name)).toMatchObject({ type, weapon: null, exterior: null, paint_index: null });
  });

  test('lib prefixes never reach a market name', () => {
    for (const prefix of ['Container | ', 'Key | ', 'Agent | ', 'Collectible | ', 'Tool | ', 'Graffiti | ']) {
      expect(catalog.some((i) => i.market_hash_name.startsWith(prefix))).toBe(false);
    }
    expect(catalog.some((i) => i.market_hash_name.includes('(Holo/Foil)'))).toBe(false);
  });

  test('music kits: StatTrak flag, no default kit, StatTrak-box-only kits only as StatTrak', () => {
    expect(item('StatTrak™ Music Kit | Daniel Sadowski, Crimson Assault').stattrak).toBe(true);
    expect(item('Music Kit | Daniel Sadowski, Crimson Assault').stattrak).toBe(false);
    expect(has('Music Kit | Valve, Counter-Strike 2')).toBe(false);
    expect(has('StatTrak™ Music Kit | Beartooth, Aggressive')).toBe(true);
    expect(has('Music Kit | Beartooth, Aggressive')).toBe(false);
  });

  test('of collectibles and tools only pins, Name Tag and StatTrak™ Swap Tool; no operation reward lists', () => {
    expect(catalog.filter((i) => i.type === 'collectible').every((i) => / Pin$/.test(i.market_hash_name))).toBe(true);
    expect(has('5 Year Veteran Coin')).toBe(false);
    expect(catalog.filter((i) => i.type === 'tool').map((i) => i.market_hash_name)).toEqual(['Name Tag', 'StatTrak™ Swap Tool']);
    expect(item('StatTrak™ Swap Tool').stattrak).toBe(false);
    expect(has('Shattered Web Sticker Collection')).toBe(false);
    expect(has('Anubis Collection Package')).toBe(true);
  });

  test('rarity is the lib colour on the weapon scale', () => {
    expect(item('Sticker | Shooter').rarity).toBe('stock');
    expect(item('Chroma 2 Case').rarity).toBe('consumer');
    expect(item('Special Agent Ava | FBI').rarity).toBe('covert');
  });
});
