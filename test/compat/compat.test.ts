import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { brotliDecompressSync, zstdDecompressSync } from 'node:zlib';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { CompatPriceGatherer, gatheredCompatDataset, readCompatDataset } from '../../shared/compat/dataset.ts';
import { compatWantedKey } from '../../shared/compat/documents.ts';
import { COMPAT_BUILDERS, createCompatBuilders } from '../../shared/compat/registry.ts';
import { COMPAT_SNAPSHOTS_KEPT, type CompatStore, ensureCompatDocuments, findCompatDocument } from '../../shared/compat/store.ts';
import { COMPAT_DOCUMENTS } from '../../shared/compat/types.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { errorOf, eventually, scratchTestApp, seedFreshFxRates, type TestApp } from '../helpers.ts';

/**
 * The /compat routes end to end (docs/design.md §20): answered from the documents of the current keyless
 * snapshot, built once per snapshot (by the index pool ahead of requests, or by the first request),
 * with the keyless list's caching (ETag and 304, br and gzip, Last-Modified) and X-Source-Age, limited
 * per address, never older than the list. The formats' shapes are tested in test/compat-*.test.ts.
 * A database of its own: "no snapshot yet" must hold, and the suite counts every document.
 */

const NAME = 'AK-47 | Redline (Field-Tested)';
const DOPPLER = '★ Karambit | Doppler (Factory New)';
let t: TestApp;
const store = (): CompatStore => ({ sql: t.deps.sql, redis: t.deps.redis, prefix: PREFIX });
// Its own Redis keys: the per-address budget this suite spends (up to 429) is no other suite's.
const PREFIX = `compattest${process.pid}`;

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'compat', config: { PUBLIC_PRICES_RATE_LIMIT: '150', QUEUE_PREFIX: PREFIX } });
  const sql = t.deps.sql;
  for (const [name, phases] of [
    [NAME, []],
    [DOPPLER, ['phase-2', 'ruby']],
  ] as const) {
    await sql`insert into catalog_items (catalog_id, market_hash_name, type, phases) values (${catalogIdFor(name)}, ${name}, 'weapon', ${phases as unknown as string[]})`;
  }
  await seedFreshFxRates(sql);
});
afterAll(async () => {
  const keys = await t.deps.redis.keys(`${PREFIX}:*`);
  if (keys.length > 0) await t.deps.redis.del(...keys);
  await t.close();
});

/**
 * A snapshot built as the index pool builds it (prices gathered in its pass, documents built ahead),
 * and where each document's bytes are stored (its entry in the snapshot's index).
 */
async function buildAhead() {
  const gatherer = new CompatPriceGatherer(t.deps.sql);
  const now = new Date();
  const made = await buildPriceSnapshot(t.deps.sql, now, { onItem: gatherer.onItem });
  const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${made.id}`;
  const report = await ensureCompatDocuments(store(), { id: made.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS, undefined, () =>
    gatheredCompatDataset(t.deps.sql, gatherer, now),
  );
  const entry = async (name: string) =>
    JSON.parse((await t.deps.redis.hget(`${PREFIX}:compat:meta:${made.id}`, name))!) as {
      key: string;
      bytes: number;
      stored?: number;
      oldest_source_ms: number | null;
    };
  return { id: made.id, report, entry };
}

async function setPrice(name: string, source: string, price: string, options: { version?: string; quantity?: number; sourceTime?: Date } = {}) {
  await t.deps.sql`
    insert into latest_prices (catalog_id, source, version, price, quantity, source_time, ingested_at, run_id)
    values (${catalogIdFor(name)}, ${source}, ${options.version ?? 'default'}, ${price}::numeric, ${options.quantity ?? null}, ${options.sourceTime ?? new Date()}, now(), ${crypto.randomUUID()})
    on conflict (catalog_id, version, source) do update set price = excluded.price, quantity = excluded.quantity, source_time = excluded.source_time`;
  await t.deps.sql`insert into price_sources (name, last_success_at) values (${source}, now()) on conflict (name) do update set last_success_at = now()`;
}

/** A new snapshot, and the API process serving it (it polls for newer ones at most every 2 s; notify checks at once). */
async function buildAndServe(): Promise<number> {
  const build = await buildPriceSnapshot(t.deps.sql, new Date());
  t.deps.priceSnapshots.notify();
  await eventually(async () => ((await t.deps.priceSnapshots.current())?.id === build.id ? true : undefined));
  return build.id;
}

const ROUTES = [
  '/compat/csgotrader/latest/prices_v6.json',
  '/compat/csgotrader/latest/skinport.json',
  '/compat/csgotrader/latest/exchange_rates.json',
  '/compat/skinport/v1/items?app_id=730&currency=USD',
  '/compat/skinport/v1/sales/history?app_id=730&currency=USD',
  `/compat/steam/market/priceoverview/?appid=730&currency=1&market_hash_name=${encodeURIComponent(NAME)}`,
  '/compat/steamapis/market/items/730',
  '/compat/steamapis/market/items/730?format=compact',
];

describe('before any snapshot', () => {
  test('every route is 503 prices_unavailable, like GET /v1/prices', async () => {
    for (const path of ROUTES) {
      const response = await t.request(path);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('prices_unavailable');
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
  });
});

describe('with a snapshot', () => {
  const sourceTime = new Date(Date.now() - 90_000);
  let snapshotId: number;
  beforeAll(async () => {
    await setPrice(NAME, 'skinport', '12.30', { quantity: 7, sourceTime });
    await setPrice(NAME, 'steam', '13.05', { quantity: 40 });
    await setPrice(DOPPLER, 'csfloat', '812.40', { version: 'ruby' });
    // Sales as the sales readers leave them (skinport's history: every window), 90 s old like skinport's price.
    await t.deps.sql`
      insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
      select ${catalogIdFor(NAME)}, 'default', 'skinport', w, 12.10, 12.25, 11.80, 12.90, 9, ${sourceTime}, now(), 'test'
      from unnest(array['24h', '7d', '30d', '90d']) w`;
    await t.deps.sql`
      insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at)
      select catalog_id, version, sales_window, median, mean, min, max, volume, array[source], ${sourceTime} from source_sales where catalog_id = ${catalogIdFor(NAME)}`;
    snapshotId = await buildAndServe();
  });

  test('every route answers 200 JSON with ETag, Last-Modified and X-Source-Age, and 304 for its ETag', async () => {
    const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${snapshotId}`;
    for (const path of ROUTES) {
      const response = await t.request(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('last-modified')).toBe(snapshot!.created_at.toUTCString());
      expect(response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
      // Seconds since the oldest source time the document used: skinport's price and sales are 90 s old,
      // steam's price is new (its document uses steam's data only).
      const age = response.headers.get('x-source-age');
      expect(age, path).toMatch(/^\d+$/);
      if (path.includes('/skinport/') || path.includes('/csgotrader/latest/prices_v6')) expect(Number(age), path).toBeGreaterThanOrEqual(89);
      const etag = response.headers.get('etag')!;
      expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
      JSON.parse(await response.text());
      const again = await t.request(path, { headers: { 'if-none-match': etag } });
      expect(again.status, path).toBe(304);
    }
  });

  test('the documents are built once per snapshot and carry our prices; br decodes to the same JSON', async () => {
    for (const name of COMPAT_DOCUMENTS) expect((await findCompatDocument(store(), snapshotId, name))?.body.length, name).toBeGreaterThan(0);
    const plain = await (await t.request('/compat/csgotrader/latest/prices_v6.json')).text();
    expect(JSON.parse(plain)[NAME]).toBeDefined();
    const br = await t.request('/compat/csgotrader/latest/prices_v6.json', { headers: { 'accept-encoding': 'br' } });
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(brotliDecompressSync(Buffer.from(await br.arrayBuffer())).toString()).toBe(plain);
    const items = (await (await t.request('/compat/skinport/v1/items?app_id=730&currency=USD')).json()) as {
      market_hash_name: string;
      min_price: number | null;
    }[];
    expect(items.find((row) => row.market_hash_name === NAME)?.min_price).toBe(12.3);
  });

  test('hostile input ends as a 4xx (the original’s error shape where it has one), never a 5xx', async () => {
    const long = 'x'.repeat(1_000_000);
    for (const path of [
      '/compat/csgotrader/latest/%00',
      `/compat/csgotrader/latest/${long.slice(0, 100)}`,
      '/compat/csgotrader/latest/..%2F..%2Fetc%2Fpasswd',
      '/compat/skinport/v1/items?app_id=730&currency=%ED%A0%80',
      '/compat/skinport/v1/items?app_id=0',
      `/compat/skinport/v1/sales/history?app_id=730&currency=USD&market_hash_name=${long}`,
      '/compat/skinport/v1/sales/history?app_id=730&market_hash_name=%00',
      '/compat/steam/market/priceoverview/?appid=730&currency=99999999999999999999&market_hash_name=%00',
      '/compat/steamapis/market/items/%00',
      '/compat/steamapis/market/items/440',
    ]) {
      const response = await t.request(path);
      expect(response.status, path).toBeLessThan(500);
      if (response.status >= 400) JSON.parse(await response.text());
    }
  });

  test('unknown query parameters are ignored, as the originals do', async () => {
    const plain = await t.request('/compat/steamapis/market/items/730?format=compact');
    const extra = await t.request('/compat/steamapis/market/items/730?format=compact&api_key=whatever&x=%00');
    expect(extra.status).toBe(200);
    expect(extra.headers.get('etag')).toBe(plain.headers.get('etag'));
  });

  test('a new snapshot replaces every answer: never older than the keyless list', async () => {
    const before = (await (await t.request('/compat/skinport/v1/items?app_id=730&currency=USD')).json()) as {
      market_hash_name: string;
      min_price: number | null;
    }[];
    expect(before.find((row) => row.market_hash_name === NAME)?.min_price).toBe(12.3);
    await setPrice(NAME, 'skinport', '11.95', { quantity: 7, sourceTime });
    await buildAndServe();
    const rows = (await (await t.request('/compat/skinport/v1/items?app_id=730&currency=USD')).json()) as {
      market_hash_name: string;
      min_price: number | null;
    }[];
    expect(rows.find((row) => row.market_hash_name === NAME)?.min_price).toBe(11.95);
  });

  test('a compat request marks the formats wanted, and the index pool’s build ahead stores them once', async () => {
    await t.request('/compat/csgotrader/latest/exchange_rates.json');
    await Bun.sleep(50);
    expect(await t.deps.redis.exists(compatWantedKey(t.deps.config.QUEUE_PREFIX))).toBe(1);
    await setPrice(NAME, 'steam', '13.10', { quantity: 41 });
    const build = await buildPriceSnapshot(t.deps.sql, new Date());
    const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${build.id}`;
    const first = await ensureCompatDocuments(store(), { id: build.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS);
    expect(first.built).toBe(true);
    // A second asker (an API process) finds them built.
    expect((await ensureCompatDocuments(store(), { id: build.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS)).built).toBe(false);
  });

  test('a document built from the sales windows alone is kept while no window changes, and built again when one does', async () => {
    const sql = t.deps.sql;
    const generation = async () => (await sql<{ n: string }[]>`select n::text as n from sales_generation`)[0]!.n;
    const window = async (volume: number) => {
      await sql`
        insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
        values (${catalogIdFor(NAME)}, 'default', 'skinport', '7d', 12.10, 12.20, 11.50, 13.00, ${volume}, now(), now(), 'compat-test')
        on conflict (catalog_id, version, sales_window, source) do update set volume = excluded.volume`;
    };
    const build = async (price: string) => {
      await setPrice(NAME, 'steam', price, { quantity: 41 });
      const made = await buildPriceSnapshot(sql, new Date());
      const [snapshot] = await sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${made.id}`;
      const report = await ensureCompatDocuments(store(), { id: made.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS);
      const stored = await findCompatDocument(store(), made.id, 'skinport-sales');
      const key = await t.deps.redis.hget(`${PREFIX}:compat:meta:${made.id}`, 'skinport-sales');
      return { report, body: stored!.body.toString(), key: (JSON.parse(key!) as { key: string }).key };
    };
    await window(40);
    const first = await build('13.20');
    expect(first.report.phases_ms['skinport-sales']).toBeNumber();
    expect(first.key).toBe(`${PREFIX}:compat:sales:${await generation()}:skinport-sales`);
    expect(first.body).toContain('"volume":40');

    // A price run and no sales change: the next snapshot's document is the same bytes, copied.
    const before = await generation();
    await sql`update source_sales set volume = volume where false`;
    expect(await generation()).toBe(before);
    const second = await build('13.30');
    expect(second.report.phases_ms['skinport-sales (kept)']).toBeNumber();
    expect(second.report.phases_ms['skinport-sales']).toBeUndefined();
    expect(second.body).toBe(first.body);
    expect(second.key).toBe(first.key);

    // A changed window moves the generation: the document is built again, from the new windows.
    await window(55);
    expect(await generation()).not.toBe(before);
    const third = await build('13.40');
    expect(third.report.phases_ms['skinport-sales']).toBeNumber();
    expect(third.body).toContain('"volume":55');
    expect(third.body).not.toContain('"volume":40');
  });

  test('only the newest built snapshots keep their documents; a sales document stays while a kept snapshot points at it', async () => {
    const ids: number[] = [];
    for (const price of ['14.10', '14.20', '14.30', '14.40', '14.50']) {
      await setPrice(NAME, 'steam', price, { quantity: 40 });
      const made = await buildPriceSnapshot(t.deps.sql, new Date());
      const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${made.id}`;
      if (!snapshot) continue; // deleted already: only the newest few snapshots are kept
      expect((await ensureCompatDocuments(store(), { id: made.id, created_at: snapshot.created_at }, COMPAT_BUILDERS)).built).toBe(true);
      ids.push(made.id);
    }
    const built = (await t.deps.redis.zrange(`${PREFIX}:compat:built`, '0', '-1')).map(Number);
    expect(built).toEqual(ids.slice(-COMPAT_SNAPSHOTS_KEPT));
    const dropped = ids[0]!;
    expect(await t.deps.redis.exists(`${PREFIX}:compat:meta:${dropped}`)).toBe(0);
    expect(await t.deps.redis.exists(`${PREFIX}:compat:doc:${dropped}:csgotrader-prices`)).toBe(0);
    expect(await findCompatDocument(store(), dropped, 'csgotrader-prices')).toBeNull();
    // The windows did not change over these builds: every kept snapshot points at one sales document, still there.
    const sales = await Promise.all(built.map((id) => findCompatDocument(store(), id, 'skinport-sales')));
    expect(sales.every((document) => document?.body.equals(sales[0]!.body) === true)).toBe(true);
    for (const id of built) expect((await findCompatDocument(store(), id, 'steamapis-items'))?.body.length).toBeGreaterThan(0);
  });

  test('a snapshot whose id is below those built before (a database started again) keeps its documents; the earlier builds are trimmed', async () => {
    // Builds listed by another database under the same prefix, with ids this one has not reached.
    const earlier = Date.now() - 60_000;
    const foreign = ['900001', '900002', '900003'];
    await t.deps.redis.zadd(`${PREFIX}:compat:built`, earlier, foreign[0]!, earlier + 1, foreign[1]!, earlier + 2, foreign[2]!);
    await setPrice(NAME, 'steam', '14.60', { quantity: 40 });
    const made = await buildPriceSnapshot(t.deps.sql, new Date());
    const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${made.id}`;
    expect((await ensureCompatDocuments(store(), { id: made.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS)).built).toBe(true);
    expect(made.id).toBeLessThan(900_001);
    expect((await findCompatDocument(store(), made.id, 'csgotrader-prices'))?.body.length).toBeGreaterThan(0);
    const built = await t.deps.redis.zrange(`${PREFIX}:compat:built`, '0', '-1');
    expect(built).toContain(String(made.id));
    expect(built).not.toContain(foreign[0]);
    expect(built).toHaveLength(COMPAT_SNAPSHOTS_KEPT);
  });

  test('the prices gathered in the snapshot’s own pass make the same dataset as reading them afresh', async () => {
    await setPrice(DOPPLER, 'skinport', '812.40', { version: 'ruby', quantity: 2 });
    await setPrice(DOPPLER, 'csfloat', '799.99', { version: 'ruby' });
    await setPrice(DOPPLER, 'steam', '1020.00', { quantity: 3 });
    const gatherer = new CompatPriceGatherer(t.deps.sql);
    const now = new Date();
    const build = await buildPriceSnapshot(t.deps.sql, now, { onItem: gatherer.onItem });
    expect(build.unchanged).toBe(false);
    const gathered = await gatheredCompatDataset(t.deps.sql, gatherer, now);
    const read = await readCompatDataset(t.deps.sql, now);
    expect(gathered.items.length).toBeGreaterThan(1);
    expect(gathered.items.some((item) => item.versions.ruby?.consensus != null)).toBe(true);
    expect(gathered).toEqual(read);
  });

  test('between builds an unchanged item keeps its object (its texts are kept), a changed one does not', async () => {
    const build = async () => {
      const gatherer = new CompatPriceGatherer(t.deps.sql);
      const now = new Date();
      const made = await buildPriceSnapshot(t.deps.sql, now, { onItem: gatherer.onItem });
      expect(made.unchanged).toBe(false);
      const dataset = await gatheredCompatDataset(t.deps.sql, gatherer, now);
      const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${made.id}`;
      await ensureCompatDocuments(store(), { id: made.id, created_at: snapshot!.created_at }, COMPAT_BUILDERS, undefined, async () => dataset);
      return { id: made.id, dataset, byName: new Map(dataset.items.map((item) => [item.market_hash_name, item])) };
    };
    await setPrice(NAME, 'steam', '15.10', { quantity: 40 });
    const first = await build();
    await setPrice(NAME, 'steam', '15.20', { quantity: 40 });
    const second = await build();
    expect(second.byName.get(DOPPLER)).toBe(first.byName.get(DOPPLER)!);
    expect(second.byName.get(NAME)).not.toBe(first.byName.get(NAME)!);
    // The documents carry the change and keep the rest.
    const steam = JSON.parse((await findCompatDocument(store(), second.id, 'steam-overview'))!.body.toString()) as { items: Record<string, unknown[]> };
    expect(steam.items[NAME]![0]).toBe('15.20');
    expect(steam.items[DOPPLER]![0]).toBe('1020.00');
  });

  test('a format a run did not touch is not written again: the new snapshot points at the bytes already stored, kept while any kept snapshot does', async () => {
    const build = async (source: string, price: string) => {
      await setPrice(NAME, source, price, { quantity: 40 });
      const made = await buildAhead();
      return { ...made, steamKey: (await made.entry('steam-overview')).key, skinportKey: (await made.entry('skinport-items')).key };
    };
    const first = await build('steam', '17.10');
    // Skinport runs: priceoverview reads only the steam source, so its document stays the one stored.
    const runs = [await build('skinport', '17.20'), await build('skinport', '17.30'), await build('skinport', '17.40'), await build('skinport', '17.50')];
    for (const run of runs) {
      expect(run.steamKey).toBe(first.steamKey);
      expect(run.report.phases_ms['steam-overview (unchanged)']).toBeNumber();
      expect(run.skinportKey).not.toBe(first.skinportKey);
    }
    // The first snapshot is trimmed by now; its steam document stays while the kept ones point at it.
    expect(await t.deps.redis.exists(`${PREFIX}:compat:meta:${first.id}`)).toBe(0);
    const last = runs[runs.length - 1]!;
    const steam = JSON.parse((await findCompatDocument(store(), last.id, 'steam-overview'))!.body.toString()) as { items: Record<string, unknown[]> };
    expect(steam.items[NAME]![0]).toBe('17.10');
    // A steam run writes it again, under the new snapshot.
    const moved = await build('steam', '17.60');
    expect(moved.steamKey).not.toBe(first.steamKey);
    expect(moved.report.phases_ms['steam-overview']).toBeNumber();
    // Bytes pointed at that are gone meanwhile (expired, trimmed) are written again, under the new snapshot.
    await t.deps.redis.del(moved.steamKey);
    const rewritten = await build('skinport', '17.70');
    expect(rewritten.steamKey).toBe(`${PREFIX}:compat:doc:${rewritten.id}:steam-overview`);
    const again = JSON.parse((await findCompatDocument(store(), rewritten.id, 'steam-overview'))!.body.toString()) as { items: Record<string, unknown[]> };
    expect(again.items[NAME]![0]).toBe('17.60');
  });

  test('documents are stored zstd-compressed; one whose bytes stand on newer observations is pointed at, with the newer age', async () => {
    await setPrice(NAME, 'skinport', '18.10', { quantity: 40, sourceTime: new Date(Date.now() - 600_000) });
    const first = await buildAhead();
    const entry = await first.entry('csgotrader-prices');
    const raw = (await t.deps.redis.getBuffer(entry.key))!;
    expect(entry.stored).toBe(raw.length);
    expect(raw.length).toBeLessThan(entry.bytes);
    expect(zstdDecompressSync(raw).toString()).toBe((await findCompatDocument(store(), first.id, 'csgotrader-prices'))!.body.toString());
    // A whole-market listing confirms skinport's prices: every listed row's time moves, no price does.
    await t.deps.sql`update price_sources set listed_at = now(), last_success_at = now() where name = 'skinport'`;
    const second = await buildAhead();
    expect(second.report.phases_ms['csgotrader-prices (unchanged)']).toBeNumber();
    const moved = await second.entry('csgotrader-prices');
    expect(moved.key).toBe(entry.key);
    // The age is the new build's: the bytes are the same, the observations behind them newer.
    const [snapshot] = await t.deps.sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${second.id}`;
    const fresh = createCompatBuilders()['csgotrader-prices'](await readCompatDataset(t.deps.sql, snapshot!.created_at));
    expect(moved.oldest_source_ms).toBe(fresh.oldest_source_ms);
    expect(moved.oldest_source_ms).toBeGreaterThan(entry.oldest_source_ms!);
  });

  test('a document that cannot be built answers 503 with the shared error body, never 500; the next snapshot serves again', async () => {
    await setPrice(NAME, 'steam', '16.10', { quantity: 40 });
    const id = await buildAndServe();
    // The snapshot the API serves is gone before anyone built its documents (only the newest few are kept).
    await t.deps.sql`delete from price_snapshots where id = ${id}`;
    const response = await t.request('/compat/steamapis/market/items/730');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect((await errorOf(response)).code).toBe('prices_unavailable');
    await setPrice(NAME, 'steam', '16.20', { quantity: 40 });
    await buildAndServe();
    expect((await t.request('/compat/steamapis/market/items/730')).status).toBe(200);
  });

  test('over the per-minute budget an address gets 429 with Retry-After; the budget is the formats’ own', async () => {
    let limited: Response | undefined;
    for (let attempt = 0; attempt < 200 && !limited; attempt += 1) {
      const response = await t.request('/compat/csgotrader/latest/exchange_rates.json');
      if (response.status === 429) limited = response;
    }
    expect(limited).toBeDefined();
    expect(limited!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await errorOf(limited!)).code).toBe('rate_limited');
    // The keyless list keeps its own budget.
    expect([200, 503]).toContain((await t.request('/v1/prices', { headers: { 'accept-encoding': 'br' } })).status);
  });
});
