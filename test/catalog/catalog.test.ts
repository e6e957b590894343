import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { type CatalogItem, catalogIdFor } from '../../shared/catalog/identity.ts';
import { catalogItemCount, findCatalogItem, syncCatalog } from '../../shared/catalog/repository.ts';
import { createKey, createTestApp, errorOf, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';

// The shared test database holds the real catalog (loaded once here; syncCatalog is idempotent, so
// other suites may load it too). Other suites add their own uniquely named items, so assertions on
// the shared database check "every generated item that matches", never "only generated items".
const t = createTestApp();
const catalog = generateCatalog();
const generatedByName = new Map(catalog.map((item) => [item.market_hash_name, item]));

beforeAll(async () => {
  await syncCatalog(t.deps.sql, catalog);
});

// A scratch database (migrated, empty catalog) for the 503 and for synthetic names.
let scratch: TestApp | null = null;

async function scratchApp(): Promise<TestApp> {
  scratch ??= await scratchTestApp({ tag: 'catalog' });
  return scratch;
}

afterAll(async () => {
  await t.close();
  if (scratch) await scratch.close();
});

type Page = { data: CatalogItem[]; next_cursor: string | null };

function listItems(app: TestApp, key: string | null, query: Record<string, string> = {}) {
  const search = new URLSearchParams(query).toString();
  return app.request(`/v2/catalog/items${search ? `?${search}` : ''}`, { headers: key ? { 'x-api-key': key } : {} });
}

async function page(key: string, query: Record<string, string> = {}, app: TestApp = t): Promise<Page> {
  const response = await listItems(app, key, query);
  if (response.status !== 200) throw new Error(`listing failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as Page;
}

/** Every item matching `query`, following next_cursor to the end. */
async function allItems(key: string, query: Record<string, string> = {}, app: TestApp = t): Promise<{ items: CatalogItem[]; pages: number }> {
  const items: CatalogItem[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const current: Page = await page(key, { limit: '200', ...query, ...(cursor ? { cursor } : {}) }, app);
    items.push(...current.data);
    cursor = current.next_cursor;
    pages += 1;
    if (pages > 1_000) throw new Error('pagination does not terminate');
  } while (cursor);
  return { items, pages };
}

/** Pro tier: walking the catalog spends more than the free minute budget. */
const reader = (app: TestApp = t) => workspaceWithKey(app, { tier: 'pro' });

const names = (items: CatalogItem[]) => items.map((i) => i.market_hash_name);
const generated = (predicate: (item: CatalogItem) => boolean) => catalog.filter(predicate).map((i) => i.market_hash_name);

function flipChar(text: string, index: number): string {
  const char = text[index]!;
  return `${text.slice(0, index)}${char === 'A' ? 'B' : 'A'}${text.slice(index + 1)}`;
}

async function expectInvalidRequest(response: Response, ...mentions: string[]) {
  expect(response.status).toBe(400);
  const error = await errorOf(response);
  expect(error.code).toBe('invalid_request');
  const text = `${error.message} ${JSON.stringify(error.details ?? [])}`;
  for (const mention of mentions) expect(text).toContain(mention);
}

describe('access to GET /v2/catalog/items', () => {
  test('a missing or unknown key gets 401', async () => {
    const missing = await listItems(t, null);
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).code).toBe('unauthorized');
    const unknown = await listItems(t, 'cs2_not-a-real-key');
    expect(unknown.status).toBe(401);
  });

  test('a key without catalog:read gets 403 insufficient_scope naming the scope', async () => {
    const ws = await reader();
    const limited = await createKey(t, ws.token, { scopes: ['prices:read'] });
    const denied = await listItems(t, limited.key);
    expect(denied.status).toBe(403);
    const error = await errorOf(denied);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('catalog:read');
  });

  test('a key with the default scopes may list the catalog, and the operation is in production', async () => {
    const ws = await reader();
    const defaults = await createKey(t, ws.token);
    expect(defaults.scopes).toContain('catalog:read');
    const response = await listItems(t, defaults.key, { limit: '1' });
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toBeString();
    const capabilities = (await (await t.request('/v2/meta/capabilities')).json()) as {
      capabilities: { operation: string; status: string; scopes: string[] }[];
    };
    expect(capabilities.capabilities.find((c) => c.operation === 'catalog.items.list')).toMatchObject({ status: 'production', scopes: ['catalog:read'] });
  });
});

describe('listing', () => {
  test('a page is 50 items by default, ordered by market_hash_name, each with the catalog attributes', async () => {
    const ws = await reader();
    const first = await page(ws.key);
    expect(first.data).toHaveLength(50);
    expect(first.next_cursor).toBeString();
    const expectedOrder = await t.deps.sql<{ market_hash_name: string }[]>`select market_hash_name from catalog_items order by market_hash_name limit 50`;
    expect(names(first.data)).toEqual(expectedOrder.map((r) => r.market_hash_name));
    for (const item of first.data) {
      expect(Object.keys(item).sort()).toEqual(
        [
          'catalog_id',
          'definition_index',
          'exterior',
          'image',
          'market_hash_name',
          'paint_index',
          'phases',
          'provisional',
          'rarity',
          'souvenir',
          'stattrak',
          'type',
          'weapon',
        ].sort(),
      );
    }
  });

  test('an item reads back exactly as generated', async () => {
    const ws = await reader();
    const { data: shown } = await page(ws.key, { q: 'AK-47 | Redline (Field-Tested)' });
    // docs/design.md §18: each item also carries its image: cs2-lib's, or Steam's icon when an inventory read by
    // another suite sharing this database has shown one (test/media/item-images.test.ts checks which wins).
    for (const item of shown) expect(['cs2-lib', 'steam']).toContain((item as CatalogItem & { image?: { source: string } }).image?.source ?? 'none');
    // docs/design.md §19: a generated item is never provisional.
    for (const item of shown) expect((item as CatalogItem & { provisional?: boolean }).provisional).toBe(false);
    const data = shown.map((item) => {
      const { image: _image, provisional: _provisional, ...rest } = item as CatalogItem & { image?: unknown; provisional?: boolean };
      return rest as CatalogItem;
    });
    expect(data).toEqual([generatedByName.get('AK-47 | Redline (Field-Tested)')!, generatedByName.get('StatTrak™ AK-47 | Redline (Field-Tested)')!]);
    expect(data[0]).toEqual({
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
    expect(await findCatalogItem(t.deps.sql, 'itm_g5dlzlbrs4qunw3pcgtsp7k62y')).toEqual(data[0]!);
  });

  test('limit runs from 1 to 200', async () => {
    const ws = await reader();
    expect((await page(ws.key, { limit: '1' })).data).toHaveLength(1);
    expect((await page(ws.key, { limit: '200' })).data).toHaveLength(200);
  });

  test('keyset paging over the whole catalog neither skips nor repeats, in database order', async () => {
    const ws = await reader();
    const { items, pages } = await allItems(ws.key);
    const listed = names(items);
    const expected = (await t.deps.sql<{ market_hash_name: string }[]>`select market_hash_name from catalog_items order by market_hash_name`).map(
      (r) => r.market_hash_name,
    );
    expect(listed).toEqual(expected);
    expect(new Set(listed).size).toBe(listed.length);
    expect(pages).toBe(Math.ceil(listed.length / 200));
    // Every generated item is there exactly once.
    const seen = new Set(listed);
    expect(catalog.every((item) => seen.has(item.market_hash_name))).toBe(true);
  });

  test('small pages with a filter, and a cursor reused with another page size, cover the same items', async () => {
    const ws = await reader();
    const query = { weapon: 'Karambit', exterior: 'factory-new' };
    const { items: small, pages } = await allItems(ws.key, { ...query, limit: '7' });
    const { items: large } = await allItems(ws.key, query);
    expect(names(small)).toEqual(names(large));
    expect(pages).toBe(Math.ceil(large.length / 7));
    const first = await page(ws.key, { ...query, limit: '3' });
    const second = await page(ws.key, { ...query, limit: '10', cursor: first.next_cursor! });
    expect(names(second.data)).toEqual(names(large).slice(3, 13));
  });

  test('a loaded catalog with no match answers 200 with an empty page', async () => {
    const ws = await reader();
    expect(await page(ws.key, { q: `no such item ${crypto.randomUUID()}` })).toEqual({ data: [], next_cursor: null });
  });
});

describe('filters', () => {
  // Other suites add items of their own to the shared database: check that every returned item
  // matches and that every generated item that matches is returned.
  async function expectFilter(key: string, query: Record<string, string>, matches: (item: CatalogItem) => boolean) {
    const { items } = await allItems(key, query);
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(matches(item)).toBe(true);
    const listed = new Set(names(items));
    const expected = generated(matches);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.filter((name) => !listed.has(name))).toEqual([]);
    return items;
  }

  test('type', async () => {
    const ws = await reader();
    await expectFilter(ws.key, { type: 'gloves' }, (i) => i.type === 'gloves');
    await expectFilter(ws.key, { type: 'music_kit' }, (i) => i.type === 'music_kit');
  });

  test('weapon', async () => {
    const ws = await reader();
    await expectFilter(ws.key, { weapon: 'AK-47', exterior: 'factory-new' }, (i) => i.weapon === 'AK-47' && i.exterior === 'factory-new');
    await expectFilter(ws.key, { weapon: 'Sport Gloves' }, (i) => i.weapon === 'Sport Gloves');
  });

  test('exterior', async () => {
    const ws = await reader();
    await expectFilter(ws.key, { exterior: 'battle-scarred', type: 'gloves' }, (i) => i.exterior === 'battle-scarred' && i.type === 'gloves');
  });

  test('rarity', async () => {
    const ws = await reader();
    const contraband = await expectFilter(ws.key, { rarity: 'contraband' }, (i) => i.rarity === 'contraband');
    expect(names(contraband)).toContain('M4A4 | Howl (Field-Tested)');
  });

  test('phase matches items whose phases contain it', async () => {
    const ws = await reader();
    const ruby = await expectFilter(ws.key, { phase: 'ruby' }, (i) => i.phases.includes('ruby'));
    expect(names(ruby)).toContain('★ Karambit | Doppler (Factory New)');
    expect(ruby.every((i) => i.market_hash_name.includes('| Doppler ('))).toBe(true);
    const emerald = await expectFilter(ws.key, { phase: 'emerald', weapon: 'Glock-18' }, (i) => i.phases.includes('emerald') && i.weapon === 'Glock-18');
    // The Train 2021 collection: every exterior, never StatTrak.
    expect(names(emerald)).toEqual(
      ['Battle-Scarred', 'Factory New', 'Field-Tested', 'Minimal Wear', 'Well-Worn'].map((e) => `Glock-18 | Gamma Doppler (${e})`),
    );
  });

  test('stattrak and souvenir, true and false', async () => {
    const ws = await reader();
    await expectFilter(
      ws.key,
      { stattrak: 'true', weapon: 'AWP', exterior: 'factory-new' },
      (i) => i.stattrak && i.weapon === 'AWP' && i.exterior === 'factory-new',
    );
    await expectFilter(
      ws.key,
      { souvenir: 'true', weapon: 'AWP', exterior: 'factory-new' },
      (i) => i.souvenir && i.weapon === 'AWP' && i.exterior === 'factory-new',
    );
    await expectFilter(
      ws.key,
      { stattrak: 'false', souvenir: 'false', weapon: 'AWP', exterior: 'factory-new' },
      (i) => !i.stattrak && !i.souvenir && i.weapon === 'AWP' && i.exterior === 'factory-new',
    );
  });

  test('definition_index and paint_index', async () => {
    const ws = await reader();
    const dragonLore = await expectFilter(ws.key, { paint_index: '344' }, (i) => i.paint_index === 344);
    expect(dragonLore.every((i) => i.market_hash_name.includes('AWP | Dragon Lore'))).toBe(true);
    await expectFilter(
      ws.key,
      { definition_index: '507', stattrak: 'true', exterior: 'factory-new' },
      (i) => i.definition_index === 507 && i.stattrak && i.exterior === 'factory-new',
    );
    expect((await page(ws.key, { definition_index: '0' })).data).toEqual([]);
  });

  test('q is a case-insensitive substring', async () => {
    const ws = await reader();
    const items = await expectFilter(ws.key, { q: 'dragon LORE (factory' }, (i) => i.market_hash_name.toLowerCase().includes('dragon lore (factory'));
    expect(names(items)).toEqual(['AWP | Dragon Lore (Factory New)', 'Souvenir AWP | Dragon Lore (Factory New)']);
    // An empty q is no filter.
    expect((await page(ws.key, { q: '', limit: '3' })).data).toEqual((await page(ws.key, { limit: '3' })).data);
  });
});

describe('invalid requests', () => {
  test.each([
    ['type', 'sword', ['knife', 'music_kit', 'container']],
    ['exterior', 'new', ['factory-new', 'battle-scarred']],
    ['rarity', 'legendary', ['mil-spec', 'covert', 'contraband']],
    ['phase', 'phase-5', ['phase-1', 'ruby', 'black-pearl', 'emerald']],
    ['stattrak', 'yes', ['true', 'false']],
    ['souvenir', '1', ['true', 'false']],
    ['weapon', 'AK47', ['AK-47', 'Karambit', 'Sport Gloves']],
  ])('an unknown %s (%s) is a 400 listing the allowed values', async (field, value, allowed) => {
    const ws = await reader();
    await expectInvalidRequest(await listItems(t, ws.key, { [field]: value }), field, ...allowed);
  });

  test.each([
    ['definition_index', '-1'],
    ['definition_index', '1.5'],
    ['definition_index', 'abc'],
    ['paint_index', '99999999999'],
    ['paint_index', '1e3'],
    ['paint_index', ''],
    ['limit', '0'],
    ['limit', '201'],
    ['limit', 'ten'],
    ['q', 'x'.repeat(201)],
  ])('%s=%s is a 400', async (field, value) => {
    const ws = await reader();
    await expectInvalidRequest(await listItems(t, ws.key, { [field]: value }), field);
  });

  test('an unknown query parameter is a 400 naming it', async () => {
    const ws = await reader();
    await expectInvalidRequest(await listItems(t, ws.key, { page: '2' }), 'page');
    await expectInvalidRequest(await listItems(t, ws.key, { type: 'knife', sort: 'price' }), 'sort');
  });
});

describe('cursor integrity', () => {
  async function expectInvalidCursor(key: string, query: Record<string, string>) {
    const response = await listItems(t, key, query);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_cursor');
  }

  test('tampered, garbage, re-filtered and foreign cursors are 400 invalid_cursor', async () => {
    const ws = await reader();
    const other = await reader();
    const query = { type: 'knife', exterior: 'factory-new', limit: '2' };
    const cursor = (await page(ws.key, query)).next_cursor!;
    expect(cursor).toBeString();
    // The genuine cursor works with its own filters.
    expect((await listItems(t, ws.key, { ...query, cursor })).status).toBe(200);
    const [payload, signature] = cursor.split('.') as [string, string];

    for (const index of [0, Math.floor(payload.length / 2), payload.length - 2]) {
      await expectInvalidCursor(ws.key, { ...query, cursor: `${flipChar(payload, index)}.${signature}` });
    }
    await expectInvalidCursor(ws.key, { ...query, cursor: `${payload}.${flipChar(signature, 0)}` });
    // A self-made position under the original signature.
    const envelope = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...envelope, p: { name: '★ Z' } })).toString('base64url');
    await expectInvalidCursor(ws.key, { ...query, cursor: `${forged}.${signature}` });
    for (const garbage of ['garbage', 'a.b', `${payload}.`, `.${signature}`, `${cursor}.extra`, '%%%']) {
      await expectInvalidCursor(ws.key, { ...query, cursor: garbage });
    }
    // Same cursor, other filters: one added, one changed, one dropped, a boolean flipped.
    await expectInvalidCursor(ws.key, { ...query, weapon: 'Karambit', cursor });
    await expectInvalidCursor(ws.key, { ...query, exterior: 'minimal-wear', cursor });
    await expectInvalidCursor(ws.key, { type: 'knife', limit: '2', cursor });
    await expectInvalidCursor(ws.key, { ...query, stattrak: 'false', cursor });
    await expectInvalidCursor(ws.key, { ...query, q: 'a', cursor });
    // Another workspace, same filters.
    await expectInvalidCursor(other.key, { ...query, cursor });
    // A cursor of another list (the audit log) is refused too.
    const audit = (await (await t.request('/v2/audit/events?limit=1', { headers: { 'x-api-key': ws.key } })).json()) as { next_cursor: string | null };
    expect(audit.next_cursor).toBeString();
    await expectInvalidCursor(ws.key, { cursor: audit.next_cursor! });
  });

  test('an over-long cursor is a 400', async () => {
    const ws = await reader();
    expect((await listItems(t, ws.key, { cursor: 'x'.repeat(3_000) })).status).toBe(400);
  });
});

describe('catalog not loaded, and literal q (scratch database)', () => {
  test('an empty catalog answers 503 catalog_unavailable; once loaded, 200', async () => {
    const app = await scratchApp();
    expect(await catalogItemCount(app.deps.sql)).toBe(0);
    const ws = await reader(app);
    const queries: Record<string, string>[] = [{}, { type: 'knife' }, { q: 'redline', limit: '5' }];
    for (const query of queries) {
      const response = await listItems(app, ws.key, query);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('catalog_unavailable');
    }
    // Validation still comes first.
    expect((await listItems(app, ws.key, { type: 'sword' })).status).toBe(400);

    await syncCatalog(app.deps.sql, [synthetic('Sticker | placeholder')]);
    expect(await page(ws.key, {}, app)).toMatchObject({ data: [{ market_hash_name: 'Sticker | placeholder' }], next_cursor: null });
  });

  function synthetic(name: string): CatalogItem {
    return {
      catalog_id: catalogIdFor(name),
      market_hash_name: name,
      type: 'sticker',
      weapon: null,
      exterior: null,
      rarity: 'mil-spec',
      stattrak: false,
      souvenir: false,
      definition_index: 1209,
      paint_index: null,
      phases: [],
    };
  }

  test('%, _ and \\ in q match themselves', async () => {
    const app = await scratchApp();
    const ws = await reader(app);
    const items = [
      'Sticker | 100% Pure',
      'Sticker | 100 Pure',
      'Sticker | 1000 Pure',
      'Sticker | Under_Score',
      'Sticker | UnderXScore',
      'Sticker | Back\\Slash',
      'Sticker | BackSlash',
      'Sticker | Back\\\\Double',
      'Sticker | placeholder',
    ].map(synthetic);
    await syncCatalog(app.deps.sql, items);
    const matching = async (q: string) => names((await allItems(ws.key, { q }, app)).items);

    expect(await matching('%')).toEqual(['Sticker | 100% Pure']);
    expect(await matching('100%')).toEqual(['Sticker | 100% Pure']);
    expect(await matching('0% p')).toEqual(['Sticker | 100% Pure']);
    expect(await matching('_')).toEqual(['Sticker | Under_Score']);
    expect(await matching('under_score')).toEqual(['Sticker | Under_Score']);
    expect(await matching('\\')).toEqual(['Sticker | Back\\Slash', 'Sticker | Back\\\\Double']);
    expect(await matching('back\\slash')).toEqual(['Sticker | Back\\Slash']);
    expect(await matching('\\\\')).toEqual(['Sticker | Back\\\\Double']);
    expect(await matching('%_\\')).toEqual([]);
    expect(await matching('PURE')).toEqual(['Sticker | 100 Pure', 'Sticker | 100% Pure', 'Sticker | 1000 Pure']);
  });
});

describe('syncCatalog', () => {
  test('a second sync of the same catalog changes nothing', async () => {
    const before = await t.deps.sql<
      { max: Date }[]
    >`select max(synced_at) as max from catalog_items where catalog_id = any(${catalog.slice(0, 100).map((i) => i.catalog_id)})`;
    const counts = await syncCatalog(t.deps.sql, catalog);
    expect(counts).toMatchObject({ inserted: 0, updated: 0, unchanged: catalog.length, total: catalog.length });
    const after = await t.deps.sql<
      { max: Date }[]
    >`select max(synced_at) as max from catalog_items where catalog_id = any(${catalog.slice(0, 100).map((i) => i.catalog_id)})`;
    expect(after[0]!.max).toEqual(before[0]!.max);
  });

  test('inserts, updates, deletes unreferenced rows and keeps rows that latest prices still reference', async () => {
    const app = await scratchApp();
    const sql = app.deps.sql;
    const make = (name: string, overrides: Partial<CatalogItem> = {}): CatalogItem => ({
      catalog_id: catalogIdFor(name),
      market_hash_name: name,
      type: 'knife',
      weapon: 'Karambit',
      exterior: 'factory-new',
      rarity: 'covert',
      stattrak: false,
      souvenir: false,
      definition_index: 507,
      paint_index: null,
      phases: ['phase-1', 'ruby'],
      ...overrides,
    });
    const [kept, changed, dropped, priced] = [
      make('★ Sync Kept (Factory New)'),
      make('★ Sync Changed (Factory New)'),
      make('★ Sync Dropped (Factory New)'),
      make('★ Sync Priced (Factory New)'),
    ];
    const first = await syncCatalog(sql, [kept, changed, dropped, priced]);
    expect(first).toMatchObject({ inserted: 4, updated: 0, total: 4 });
    await sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${priced.catalog_id}, 'skinport', 'default', 1.23, now(), now(), ${crypto.randomUUID()})`;

    const changedNow = { ...changed, phases: ['phase-1' as const], paint_index: 418 };
    const fresh = make('★ Sync Fresh (Factory New)');
    const second = await syncCatalog(sql, [kept, changedNow, fresh]);
    expect(second).toEqual({ inserted: 1, updated: 1, unchanged: 1, deleted: 1, retained: 1, adopted: 0, provisional: 0, total: 3 });
    expect(await findCatalogItem(sql, changed.catalog_id)).toEqual(changedNow);
    expect(await findCatalogItem(sql, dropped.catalog_id)).toBeNull();
    expect(await findCatalogItem(sql, priced.catalog_id)).toEqual(priced);
    expect(await findCatalogItem(sql, fresh.catalog_id)).toEqual(fresh);

    // Idempotent: the same input again changes nothing (the priced row is still retained).
    expect(await syncCatalog(sql, [kept, changedNow, fresh])).toEqual({
      inserted: 0,
      updated: 0,
      unchanged: 3,
      deleted: 0,
      retained: 1,
      adopted: 0,
      provisional: 0,
      total: 3,
    });
    await sql`delete from latest_prices where catalog_id = ${priced.catalog_id}`;
  });

  test('a catalog with a repeated id is refused before anything is written', async () => {
    const app = await scratchApp();
    const item = synthetic('Sticker | twice');
    await expect(syncCatalog(app.deps.sql, [item, item])).rejects.toThrow('duplicate catalog_id');
    expect(await findCatalogItem(app.deps.sql, item.catalog_id)).toBeNull();
  });

  function synthetic(name: string): CatalogItem {
    return {
      catalog_id: catalogIdFor(name),
      market_hash_name: name,
      type: 'sticker',
      weapon: null,
      exterior: null,
      rarity: null,
      stattrak: false,
      souvenir: false,
      definition_index: null,
      paint_index: null,
      phases: [],
    };
  }
});
