import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import Decimal from 'decimal.js';
import { saveRateDays } from '../../shared/fx/repository.ts';
import type { Sql } from '../../shared/platform/db.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { buildDerivedList } from '../../shared/prices/derived-list.ts';
import { DerivedListPool, DerivedListPoolClosedError } from '../../shared/prices/derived-list-pool.ts';
import { encodeBody, lazyEncodedBody, type PublicPriceList } from '../../shared/prices/public-document.ts';
import { findNewestPriceSnapshot } from '../../shared/prices/repository.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { LoadedPriceSnapshot, PriceSnapshotCache } from '../../shared/prices/snapshot-cache.ts';
import { indexPriceList } from '../../shared/prices/snapshot-index.ts';
import { createTestApp, eventually, scratchTestApp, type TestApp } from '../helpers.ts';

/**
 * Keyless lists per currency and per source are built off the event loop (docs/design.md §21, issue 29): in
 * a derived-list thread, while the API goes on answering. On a database of its own holding a list
 * large enough (ITEMS items, three sources each) that each build takes a good fraction of a second,
 * so "answered while the lists build" is a matter of order, not of timing.
 */

const ITEMS = 12_000;
const SOURCES = ['skinport', 'steam', 'csfloat'] as const;
// Units per 1 EUR, as the ECB file states them.
const RATES = new Map([
  ['USD', '1.0834'],
  ['CHF', '0.9412'],
  ['PLN', '4.2510'],
  ['SEK', '11.2345'],
  ['JPY', '162.41'],
]);
const AS_OF = '2026-11-24';
const SAMPLE = 'Bulk Test Item 00042 (Field-Tested)';

let t: TestApp;
const opened: TestApp[] = [];
let address = 0;
const keyless = (target: TestApp, path: string) =>
  target.request(path, { headers: { 'x-forwarded-for': `198.18.${Math.floor(address / 250) % 250}.${(address += 1) % 250}`, 'accept-encoding': 'identity' } });
const expected = (usd: string, currency: string, places: number) =>
  new Decimal(usd).times(RATES.get(currency)!).dividedBy(RATES.get('USD')!).toDecimalPlaces(places, Decimal.ROUND_HALF_EVEN).toFixed(places);

async function seedLargeCatalog(sql: Sql, now: Date): Promise<void> {
  await sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select 'bulk_' || lpad(i::text, 5, '0'), 'Bulk Test Item ' || lpad(i::text, 5, '0') || ' (Field-Tested)', 'rifle'
    from generate_series(1, ${ITEMS}) i`;
  await sql`
    insert into latest_prices (catalog_id, source, version, price, bid, source_time, ingested_at, run_id)
    select c.catalog_id, s.source, 'default',
           round(0.03 + (abs(hashtext(c.catalog_id || s.source)) % 250000) / 100.0, 2),
           case when s.source = 'csfloat' then round(0.02 + (abs(hashtext(c.catalog_id || 'bid')) % 200000) / 100.0, 2) end,
           ${now}, ${now}, gen_random_uuid()
    from catalog_items c cross join unnest(${SOURCES as unknown as string[]}::text[]) s (source)`;
  await saveRateDays(sql, [{ date: AS_OF, rates: RATES }], now);
}

/** A fresh API process over the suite's database: nothing loaded yet, nothing built. */
function coldApp(): TestApp {
  const app = createTestApp({ config: { DATABASE_URL: t.deps.config.DATABASE_URL } });
  opened.push(app);
  return app;
}

type Timed = { status: number; endedAt: number; body: string };
async function timed(target: TestApp, path: string): Promise<Timed> {
  const response = await keyless(target, path);
  const body = await response.text();
  return { status: response.status, endedAt: performance.now(), body };
}

/**
 * Sends GET /v2/health and GET /v1/prices/{SAMPLE}, one after another, until `until` settles;
 * returns when each answer arrived and its status.
 */
async function probeUntil(target: TestApp, until: Promise<unknown>): Promise<{ health: Timed[]; item: Timed[] }> {
  let settled = false;
  void until.finally(() => {
    settled = true;
  });
  const health: Timed[] = [];
  const item: Timed[] = [];
  while (!settled) {
    health.push(await timed(target, '/v2/health'));
    item.push(await timed(target, `/v1/prices/${encodeURIComponent(SAMPLE)}`));
  }
  return { health, item };
}

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'derived_lists' });
  const now = new Date();
  await seedLargeCatalog(t.deps.sql, now);
  await buildPriceSnapshot(t.deps.sql, now);
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((app) => app.close()));
  await t?.close();
});

describe('currency lists built off the event loop', () => {
  test('several first lists at once on a cold process: none is a 503, each is exact, and other requests are answered while they build', async () => {
    const app = coldApp();
    const currencies = ['CHF', 'PLN', 'SEK'];
    const lists = currencies.map((currency) => timed(app, `/v1/prices?currency=${currency}`));
    const all = Promise.all(lists);
    // Once a build runs in the thread, the event loop is free: requests sent now are answered first.
    await eventually(async () => (app.deps.priceSnapshots.lists.stats.running > 0 ? true : undefined), 60_000, 5);
    const probes = await probeUntil(app, all);
    const answered = await all;
    const lastList = Math.max(...answered.map((list) => list.endedAt));

    for (const [index, list] of answered.entries()) {
      expect(list.status).toBe(200);
      const body = JSON.parse(list.body) as PublicPriceList & { fx: { quote: string; as_of: string } };
      expect(body.currency).toBe(currencies[index]!);
      expect(body.fx.quote).toBe(currencies[index]!);
      expect(body.fx.as_of).toBe(AS_OF);
      expect(body.item_count).toBe(ITEMS);
      const sample = body.items.find((entry) => entry.market_hash_name === SAMPLE)!;
      const usd = (await (await keyless(app, `/v1/prices/${encodeURIComponent(SAMPLE)}`)).json()) as {
        versions: { sources: Record<string, { price: string }> }[];
      };
      for (const source of SOURCES) expect(sample.sources[source]!.price).toBe(expected(usd.versions[0]!.sources[source]!.price, currencies[index]!, 2));
    }
    // Answered while the lists were being built, not after: many of each, every one a 200.
    for (const kind of [probes.health, probes.item]) {
      expect(kind.every((answer) => answer.status === 200)).toBe(true);
      expect(kind.filter((answer) => answer.endedAt < lastList).length).toBeGreaterThanOrEqual(3);
    }
    expect(probes.health[0]!.endedAt).toBeLessThan(lastList);
  }, 120_000);

  test('a new snapshot loaded while a list builds: the running build completes, the next request gets the new snapshot, nothing is a 503', async () => {
    const app = coldApp();
    expect((await timed(app, '/v1/prices')).status).toBe(200);
    const first = app.deps.priceSnapshots.loadedId!;
    const usdPrice = async () =>
      ((await (await keyless(app, `/v1/prices/${encodeURIComponent(SAMPLE)}`)).json()) as { versions: { sources: Record<string, { price: string }> }[] })
        .versions[0]!.sources.skinport!.price;
    const before = await usdPrice();
    const chf = timed(app, '/v1/prices?currency=CHF');
    await eventually(async () => (app.deps.priceSnapshots.lists.stats.running > 0 ? true : undefined), 60_000, 5);
    await t.deps.sql`update latest_prices set price = price + 0.01 where catalog_id = 'bulk_00042'`;
    const second = await buildPriceSnapshot(t.deps.sql, new Date());
    app.deps.priceSnapshots.notify();
    await eventually(async () => (app.deps.priceSnapshots.loadedId === second.id ? true : undefined), 60_000);
    expect(second.id).toBeGreaterThan(first);
    const pln = await timed(app, '/v1/prices?currency=PLN');
    const chfDone = await chf;
    expect(chfDone.status).toBe(200);
    expect(pln.status).toBe(200);
    const sampleOf = (body: string) => (JSON.parse(body) as PublicPriceList).items.find((entry) => entry.market_hash_name === SAMPLE)!;
    // CHF came from the first snapshot, PLN from the second (its skinport price one cent higher in USD).
    const after = await usdPrice();
    expect(new Decimal(after).minus(before).toFixed(2)).toBe('0.01');
    expect(sampleOf(chfDone.body).sources.skinport!.price).toBe(expected(before, 'CHF', 2));
    expect(sampleOf(pln.body).sources.skinport!.price).toBe(expected(after, 'PLN', 2));
  }, 120_000);

  test('identical concurrent requests share one build; a failed build is not kept and the next request builds again', async () => {
    const record = (await findNewestPriceSnapshot(t.deps.sql))!;
    let builds = 0;
    let fail = true;
    const builder = {
      build: async (json: Uint8Array, request: Parameters<typeof buildDerivedList>[1]) => {
        builds += 1;
        if (fail) throw new Error('thread lost');
        const built = buildDerivedList(json, request);
        return { json: Buffer.from(built.json), etag: built.etag };
      },
      index: async (json: Uint8Array) => indexPriceList(json),
    };
    const snapshot = await LoadedPriceSnapshot.load(record, builder);
    const together = await Promise.allSettled([snapshot.derivedBody('steam', null), snapshot.derivedBody('steam', null)]);
    expect(together.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(builds).toBe(1);
    fail = false;
    const built = await snapshot.derivedBody('steam', null);
    expect(builds).toBe(2);
    expect(JSON.parse(built.json.toString()).source).toBe('steam');
    expect(await snapshot.derivedBody('steam', null)).toBe(built);
    expect(builds).toBe(2);
  }, 60_000);

  test('a failed check with no snapshot in hand does not hold the next request for the poll interval', async () => {
    let failNext = true;
    const flaky = ((...args: unknown[]) => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error('write CONNECT_TIMEOUT 127.0.0.1:5432'));
      }
      return (t.deps.sql as unknown as (...inner: unknown[]) => unknown)(...args);
    }) as unknown as Sql;
    const cache = new PriceSnapshotCache(flaky, createLogger({ level: 'silent', name: 'test' }), { pollIntervalMs: 60_000 });
    try {
      expect(await cache.current()).toBeNull();
      expect((await cache.current())?.id).toBe((await findNewestPriceSnapshot(t.deps.sql))!.id);
    } finally {
      await cache.close();
    }
  }, 60_000);
});

describe('the derived-list pool', () => {
  const json = async () => {
    const record = (await findNewestPriceSnapshot(t.deps.sql))!;
    const shared = Buffer.from(new SharedArrayBuffer(record.body.length));
    shared.set(record.body);
    return shared;
  };
  const chf = {
    conversion: {
      currency: 'CHF',
      fx: { base: 'USD' as const, quote: 'CHF', rate: '0.86874654', as_of: AS_OF, source: 'ecb' as const },
      rate: '0.9412',
      usdRate: '1.0834',
    },
  };

  test("at most `threads` builds run at once, the others wait in order (a snapshot's index first); results match the in-process build", async () => {
    const pool = new DerivedListPool({ threads: 1 });
    try {
      const bytes = await json();
      const order: string[] = [];
      const builds = [pool.build(bytes, chf), pool.build(bytes, { source: 'steam' }), pool.build(bytes, { source: 'csfloat', conversion: chf.conversion })];
      builds.forEach((build, position) => void build.then(() => order.push(`list ${position}`)));
      const indexed = pool.index(bytes).then(() => order.push('index'));
      expect(pool.stats).toEqual({ threads: 1, running: 1, queued: 3 });
      const results = await Promise.all(builds);
      await indexed;
      expect(order).toEqual(['list 0', 'index', 'list 1', 'list 2']);
      expect(results.map((result) => result.etag)).toEqual([
        buildDerivedList(bytes, chf).etag,
        buildDerivedList(bytes, { source: 'steam' }).etag,
        buildDerivedList(bytes, { source: 'csfloat', conversion: chf.conversion }).etag,
      ]);
      expect(pool.started).toBe(1);
    } finally {
      await pool.close();
    }
  }, 60_000);

  test("a snapshot's index finds each item's JSON in the list's own bytes, or keeps a copy when the list is not JSON.stringify's text; the API serves items from it", async () => {
    const bytes = await json();
    const pool = new DerivedListPool();
    try {
      const index = await pool.index(bytes);
      const list = JSON.parse(bytes.toString()) as PublicPriceList;
      expect(index.items).toBeNull();
      expect(index.starts.length).toBe(list.items.length);
      let from = 0;
      for (const position of [0, 41, list.items.length - 1]) {
        const item = list.items[position]!;
        expect(bytes.toString('utf8', index.starts[position], index.ends[position])).toBe(JSON.stringify(item));
        from = position === 0 ? 0 : index.nameEnds[position - 1]!;
        expect(index.names.slice(from, index.nameEnds[position])).toBe(item.market_hash_name);
      }
    } finally {
      await pool.close();
    }
    const names = ['★ Karambit | Doppler (Factory New)', 'Sticker | Team Liquid (Holo) | Paris 2023', 'AK-47 | Redline (Field-Tested)'];
    const spaced = JSON.stringify(
      { currency: 'USD', item_count: 3, oldest_input_at: null, items: names.map((name) => ({ market_hash_name: name, catalog_id: name.length, sources: {} })) },
      null,
      1,
    );
    const index = indexPriceList(Buffer.from(spaced));
    expect(index.items).not.toBeNull();
    const items = Buffer.from(index.items!);
    expect(names.map((_name, position) => items.toString('utf8', index.starts[position], index.ends[position]))).toEqual(
      names.map((name) => JSON.stringify({ market_hash_name: name, catalog_id: name.length, sources: {} })),
    );
    expect(index.names).toBe(names.join(''));

    const app = coldApp();
    const item = (await (await keyless(app, `/v1/prices/${encodeURIComponent(SAMPLE)}`)).json()) as {
      market_hash_name: string;
      versions: { sources: Record<string, unknown> }[];
    };
    expect(item.market_hash_name).toBe(SAMPLE);
    expect(Object.keys(item.versions[0]!.sources).sort()).toEqual([...SOURCES].sort());
    expect((await keyless(app, '/v1/prices/Bulk%20Test%20Item%2099999%20(Field-Tested)')).status).toBe(404);
  }, 60_000);

  test('close() ends the threads and rejects running and waiting builds; a closed pool builds nothing', async () => {
    const pool = new DerivedListPool({ threads: 1 });
    const bytes = await json();
    const running = pool.build(bytes, chf).catch((error: unknown) => error);
    const waiting = pool.build(bytes, { source: 'steam' }).catch((error: unknown) => error);
    expect(pool.stats).toEqual({ threads: 1, running: 1, queued: 1 });
    await pool.close();
    expect(await running).toBeInstanceOf(DerivedListPoolClosedError);
    expect(await waiting).toBeInstanceOf(DerivedListPoolClosedError);
    expect(await pool.build(bytes, chf).catch((error: unknown) => error)).toBeInstanceOf(DerivedListPoolClosedError);
    expect(pool.stats).toEqual({ threads: 0, running: 0, queued: 0 });
  }, 60_000);

  test("the API's deps.close() ends its derived-list threads", async () => {
    const app = createTestApp({ config: { DATABASE_URL: t.deps.config.DATABASE_URL } });
    const list = await timed(app, '/v1/prices?currency=JPY');
    expect(list.status).toBe(200);
    expect(app.deps.priceSnapshots.lists.stats.threads).toBe(1);
    await app.close();
    expect(app.deps.priceSnapshots.lists.stats.threads).toBe(0);
    expect(await app.deps.priceSnapshots.lists.build(new Uint8Array(2), {}).catch((error: unknown) => error)).toBeInstanceOf(DerivedListPoolClosedError);
  }, 60_000);

  test('a build that fails rejects and the thread goes on; a build past the timeout ends its thread and the next build starts another', async () => {
    const bytes = await json();
    const pool = new DerivedListPool({ threads: 1, idleMs: 200 });
    const slow = new DerivedListPool({ threads: 1, timeoutMs: 1 });
    try {
      const broken = Buffer.from(new SharedArrayBuffer(9));
      broken.write('{"items":');
      const brokenBuild = pool.build(broken, chf).catch((error: Error) => error.message);
      const good = pool.build(bytes, { source: 'steam' });
      expect(await brokenBuild).toMatch(/^derived list not built: /);
      expect((await good).etag).toBe(buildDerivedList(bytes, { source: 'steam' }).etag);
      expect(pool.started).toBe(1);
      // Idle threads are ended, and started again for the next build.
      await eventually(async () => (pool.stats.threads === 0 ? true : undefined));
      await pool.build(bytes, { source: 'steam' });
      expect(pool.started).toBe(2);

      expect(await slow.build(bytes, chf).catch((error: Error) => error.message)).toBe('derived list not built within 1 ms');
      expect(slow.stats).toEqual({ threads: 0, running: 0, queued: 0 });
      expect(await slow.build(bytes, chf).catch((error: Error) => error.message)).toBe('derived list not built within 1 ms');
      expect(slow.started).toBe(2);
    } finally {
      await pool.close();
      await slow.close();
    }
  }, 60_000);
});

describe('derived bodies encoded on demand', () => {
  test('each encoding is made when first asked for, once, with the bytes encodeBody makes; the ETag needs none', async () => {
    const json = Buffer.from(JSON.stringify({ items: Array.from({ length: 500 }, (_, index) => ({ name: `item ${index}`, price: `${index}.50` })) }));
    const eager = await encodeBody(json, { brotliQuality: 5 });
    const lazy = lazyEncodedBody(json, { brotliQuality: 5 });
    expect(lazy.etag).toBe(eager.etag);
    const br = lazy.encoded('br');
    expect(lazy.encoded('br')).toBe(br);
    expect((await br).equals(eager.br)).toBe(true);
    expect((await lazy.encoded('gzip')).equals(eager.gzip)).toBe(true);
  });
});
