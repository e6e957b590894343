import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { charmImageUrl, itemImage, itemImages, stickerImageUrl } from '../../shared/media/images/item-images.ts';
import { createTestApp, sharedImageFake, workspaceWithKey } from '../helpers.ts';

/** docs/design.md §18: an item's image is its newest Steam icon, else cs2-lib's image (wear variant), else null. */
const t = createTestApp();
const hosts = t.deps.config;
const images = sharedImageFake().url;

beforeAll(async () => {
  await t.deps.ready();
  await syncCatalog(t.deps.sql, generateCatalog());
});
afterAll(() => t.close());

async function catalogIdOf(name: string): Promise<string> {
  const [row] = await t.deps.sql<{ catalog_id: string }[]>`select catalog_id from catalog_items where market_hash_name = ${name}`;
  if (!row) throw new Error(`not in the catalog: ${name}`);
  return row.catalog_id;
}

const libImage = (definitionIndex: number, paintIndex: number) =>
  CS2_ITEMS.find((item) => item.def === definitionIndex && item.index === paintIndex && item.type !== 'sticker')!.image!;

async function seeIcon(name: string, version: string, iconUrl: string, at: string) {
  await t.deps.sql`
    insert into item_icons (market_hash_name, version, icon_url, first_seen_at, last_seen_at)
    values (${name}, ${version}, ${iconUrl}, ${at}, ${at}) on conflict do nothing`;
}

describe('item images', () => {
  test('the test apps point STEAM_IMAGE_URL and ITEM_ASSETS_URL at the shared image fake', () => {
    expect(hosts.STEAM_IMAGE_URL).toBe(images);
    expect(hosts.ITEM_ASSETS_URL).toBe(images);
  });

  test('without a Steam icon: cs2-lib’s image on ITEM_ASSETS_URL, its _light/_medium/_heavy variant by wear', async () => {
    const id = await catalogIdOf('AK-47 | Redline (Well-Worn)');
    const path = libImage(7, 282);
    expect(await itemImage(t.deps.sql, hosts, id)).toEqual({ url: `${images}${path}`, source: 'cs2-lib' });
    const [none, light, medium, heavy] = await itemImages(t.deps.sql, hosts, [
      { catalog_id: id },
      { catalog_id: id, wear: 0.2 },
      { catalog_id: id, wear: 0.4 },
      { catalog_id: id, wear: 0.9 },
    ]);
    expect(none!.url).toBe(`${images}${path}`);
    expect(light!.url).toBe(`${images}${path.replace('.webp', '_light.webp')}`);
    expect(medium!.url).toBe(`${images}${path.replace('.webp', '_medium.webp')}`);
    expect(heavy!.url).toBe(`${images}${path.replace('.webp', '_heavy.webp')}`);
    // The fake serves each variant as an image of its own.
    const response = await fetch(light!.url);
    expect(response.headers.get('content-type')).toBe('image/webp');
  });

  test('a Doppler phase version shows that phase; a Gamma Doppler’s phase is its own family’s', async () => {
    const doppler = await catalogIdOf('★ Karambit | Doppler (Factory New)');
    const gamma = await catalogIdOf('★ Karambit | Gamma Doppler (Factory New)');
    // cs2-lib's images, as without a Steam icon: other suites sharing the database may have recorded one.
    await t.deps.sql`delete from item_icons where market_hash_name in ('★ Karambit | Doppler (Factory New)', '★ Karambit | Gamma Doppler (Factory New)')`;
    const [ruby, dopplerPhase2, gammaPhase2, emerald] = await itemImages(t.deps.sql, hosts, [
      { catalog_id: doppler, version: 'ruby' },
      { catalog_id: doppler, version: 'phase-2' },
      { catalog_id: gamma, version: 'phase-2' },
      { catalog_id: gamma, version: 'emerald' },
    ]);
    expect(ruby!.url).toBe(`${images}${libImage(507, 415)}`);
    expect(dopplerPhase2!.url).toBe(`${images}${libImage(507, 419)}`);
    expect(gammaPhase2!.url).toBe(`${images}${libImage(507, 570)}`);
    expect(emerald!.url).toBe(`${images}${libImage(507, 568)}`);
  });

  test('the newest Steam icon of the name and version wins over cs2-lib, and a newer one replaces it (Valve’s update)', async () => {
    // A skin no inventory of the fakes holds: the database is shared with every other suite of a run,
    // and their inventory reads record the icons of the items they hold.
    const name = 'Nova | Predator (Field-Tested)';
    const id = await catalogIdOf(name);
    expect((await itemImage(t.deps.sql, hosts, id))!.source).toBe('cs2-lib');
    await seeIcon(name, 'default', 'novaPredatorOld', '2025-01-01T00:00:00Z');
    expect(await itemImage(t.deps.sql, hosts, id)).toEqual({ url: `${images}/economy/image/novaPredatorOld`, source: 'steam' });
    await seeIcon(name, 'default', 'novaPredatorNew', '2025-06-01T00:00:00Z');
    expect((await itemImage(t.deps.sql, hosts, id))!.url).toBe(`${images}/economy/image/novaPredatorNew`);
    // Seeing the old icon again later does not bring it back: the icon Valve introduced last stays.
    await t.deps.sql`update item_icons set last_seen_at = '2025-07-01T00:00:00Z' where icon_url = 'novaPredatorOld'`;
    expect((await itemImage(t.deps.sql, hosts, id))!.url).toBe(`${images}/economy/image/novaPredatorNew`);
  });

  test('a phase takes only its own icons; default prefers default icons, then any version’s', async () => {
    const name = '★ Bayonet | Doppler (Minimal Wear)';
    const id = await catalogIdOf(name);
    await seeIcon(name, 'ruby', 'bayonetRubyIcon', '2025-02-01T00:00:00Z');
    const [ruby, sapphire, whole] = await itemImages(t.deps.sql, hosts, [
      { catalog_id: id, version: 'ruby' },
      { catalog_id: id, version: 'sapphire' },
      { catalog_id: id, version: null },
    ]);
    expect(ruby!.url).toBe(`${images}/economy/image/bayonetRubyIcon`);
    expect(sapphire!.source).toBe('cs2-lib');
    expect(whole!.url).toBe(`${images}/economy/image/bayonetRubyIcon`);
  });

  test('unknown catalog ids and items neither Steam nor cs2-lib has an image of are null; order follows the keys', async () => {
    const kit = await catalogIdOf('Music Kit | Daniel Sadowski, Crimson Assault');
    // A skin no fake inventory holds (other suites' reads record the icons of what they hold).
    const skin = await catalogIdOf('SSG 08 | Detour (Field-Tested)');
    const out = await itemImages(t.deps.sql, hosts, [{ catalog_id: 'itm_aaaaaaaaaaaaaaaaaaaaaaaaaa' }, { catalog_id: kit }, { catalog_id: skin }]);
    expect(out[0]).toBeNull();
    expect(out[1]).toBeNull();
    expect(out[2]!.source).toBe('cs2-lib');
    expect(await itemImages(t.deps.sql, hosts, [])).toEqual([]);
  });

  test('stickers, charms, cases and vanilla knives have cs2-lib images; sticker and charm ids resolve directly', async () => {
    const sticker = CS2_ITEMS.find((item) => item.type === 'sticker' && item.index === 1)!;
    const charm = CS2_ITEMS.find((item) => item.type === 'keychain' && item.index === 1)!;
    expect(stickerImageUrl(hosts, 1)).toBe(`${images}${sticker.image}`);
    expect(charmImageUrl(hosts, 1)).toBe(`${images}${charm.image}`);
    expect(stickerImageUrl(hosts, 987_654)).toBeNull();
    for (const name of ['Kilowatt Case', '★ Karambit', 'Sticker | Crown (Foil)', 'Charm | Baby Karat CT']) {
      // Without a Steam icon: other suites sharing the database (Steam's search pages, inventories) may have recorded one.
      await t.deps.sql`delete from item_icons where market_hash_name = ${name}`;
      expect((await itemImage(t.deps.sql, hosts, await catalogIdOf(name)))?.source).toBe('cs2-lib');
    }
  });

  test('GET /v2/catalog/items and GET /v2/prices/{id} (top level and per version) carry the image', async () => {
    const { keyHeaders } = await workspaceWithKey(t);
    const name = '★ Flip Knife | Doppler (Factory New)';
    const id = await catalogIdOf(name);
    await seeIcon(name, 'sapphire', 'flipSapphireIcon', '2025-03-01T00:00:00Z');
    const listed = (await (await t.request(`/v2/catalog/items?q=${encodeURIComponent(name)}`, { headers: keyHeaders })).json()) as {
      data: { market_hash_name: string; image: unknown }[];
    };
    const entry = listed.data.find((item) => item.market_hash_name === name)!;
    expect(entry.image).toEqual({ url: `${images}/economy/image/flipSapphireIcon`, source: 'steam' });

    for (const [version, price] of [
      ['default', '900.00'],
      ['sapphire', '5000.00'],
      ['phase-1', '950.00'],
    ] as const) {
      await t.deps.sql`
        insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
        values (${id}, 'skinport', ${version}, ${price}::numeric, now(), now(), ${crypto.randomUUID()})
        on conflict (catalog_id, version, source) do update set price = excluded.price`;
    }
    const response = await t.request(`/v2/prices/${id}`, { headers: keyHeaders });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      image: { url: string; source: string };
      versions: { version: string; image: { url: string; source: string } | null }[];
    };
    expect(body.image).toEqual({ url: `${images}/economy/image/flipSapphireIcon`, source: 'steam' });
    const byVersion = new Map(body.versions.map((entry) => [entry.version, entry.image]));
    expect(byVersion.get('sapphire')).toEqual({ url: `${images}/economy/image/flipSapphireIcon`, source: 'steam' });
    // No Steam icon of phase 1 seen: cs2-lib's Phase 1 image; default takes any version's newest icon.
    expect(byVersion.get('phase-1')!.source).toBe('cs2-lib');
    expect(byVersion.get('default')).toEqual({ url: `${images}/economy/image/flipSapphireIcon`, source: 'steam' });
    const converted = (await (await t.request(`/v2/prices/${id}?version=sapphire&currency=USD`, { headers: keyHeaders })).json()) as { image: unknown };
    expect(converted.image).toEqual(body.image);
  });
});
