import { afterAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { claimIngestRun, writeIngestRun } from '../../shared/prices/ingest.ts';
import { PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import { createTestApp, eventually, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { startPrivateRedis } from '../private-redis.ts';

/**
 * The per-process caches of GET /v2/prices/{id} and its history: kept until an ingest run is seen
 * (an announcement on Redis, or a check against Postgres at most PRICE_CACHE_MS old), not for a
 * fixed time; ages and freshness computed per request; cursors encoded per caller.
 */

const clock = testClock('2030-06-15T12:00:00.000Z');
// Its own Redis: a dev instance's index pool announcing snapshots on the shared one would drop
// these caches at random moments. A short bound, so checks against Postgres happen within a test.
const redis = await startPrivateRedis();
const t = createTestApp({ now: clock.now, config: { PRICE_CACHE_MS: '200', REDIS_URL: redis.url } });
const sql = t.deps.sql;
afterAll(async () => {
  await sql`delete from price_sources where name like 'pcache-%'`;
  await t.close();
  await redis.kill();
});

/** A source name of this suite (no other suite writes its price_sources row). */
const testSource = () => `pcache-${crypto.randomUUID().slice(0, 8)}`;

async function insertItem() {
  const name = `Cache Test Item ${crypto.randomUUID()}`;
  const catalogId = catalogIdFor(name);
  await sql`insert into catalog_items (catalog_id, market_hash_name, type, phases) values (${catalogId}, ${name}, 'sticker', '{ruby}')`;
  return catalogId;
}

/** A price written straight into latest_prices, as no ingest run would: nothing announces or marks it. */
async function insertPriceQuietly(catalogId: string, source: string, price: string, version = 'default', sourceTime = clock.now()) {
  await sql`
    insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
    values (${catalogId}, ${source}, ${version}, ${price}::numeric, ${sourceTime}, ${sourceTime}, ${crypto.randomUUID()})
    on conflict (catalog_id, version, source) do update set price = excluded.price`;
}

/** A real ingest run of `source` for one item (claim, then the run's one write transaction; rollups included). */
async function ingestRun(catalogId: string, source: string, price: string, sourceTime: Date) {
  const runId = (await claimIngestRun(sql, source, Date.now() + Math.floor(Math.random() * 1e6), new Date()))!;
  await writeIngestRun(sql, {
    runId,
    source,
    rows: [{ catalog_id: catalogId, version: 'default', price, median_price: null, quantity: 1, source_time: sourceTime }],
    ingestedAt: new Date(),
    staleAfterSeconds: 600,
    received: 1,
    skipped: 0,
    unknownNames: 0,
  });
}

type Body = { versions: { version: string; sources: { source: string; price: string; freshness: string; age_seconds: number }[] }[] };

async function pricesOf(app: TestApp, catalogId: string, headers: Record<string, string>, query = '') {
  const response = await app.request(`/v2/prices/${catalogId}${query}`, { headers });
  expect(response.status).toBe(200);
  return (await response.json()) as Body;
}

const summary = (body: Body) => body.versions.flatMap((version) => version.sources.map((source) => `${version.version}/${source.source}:${source.price}`));

/**
 * Resolves once every ingest run committed so far has been seen: after two more checks, the second
 * of which started after this call. Tests that expect a read to stay cached start from here, so a
 * run of an earlier test is not taken in halfway through them.
 */
async function runsSeen() {
  const runs = t.deps.priceRuns!;
  const target = runs.checks + 2;
  await eventually(async () => {
    await runs.generation();
    return runs.checks >= target ? true : undefined;
  }, 10_000);
}

/** Resolves once the process has checked Postgres for new runs `count` more times (requests drive the checks). */
async function afterChecks(count: number, request: () => Promise<unknown>) {
  const target = t.deps.priceRuns!.checks + count;
  await eventually(async () => {
    await request();
    return t.deps.priceRuns!.checks >= target ? true : undefined;
  }, 10_000);
}

describe('GET /v2/prices/{id}: the item price cache', () => {
  test('cached prices are kept while no ingest run happens, however often the process checks', async () => {
    const catalogId = await insertItem();
    const source = testSource();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    await insertPriceQuietly(catalogId, source, '1.10');
    await runsSeen();
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${source}:1.10`]);

    await insertPriceQuietly(catalogId, source, '1.25');
    // Several checks later (each well past PRICE_CACHE_MS / 2), still what was read: no run, no reload.
    await afterChecks(3, () => pricesOf(t, catalogId, ws.keyHeaders));
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${source}:1.10`]);
  });

  test('an ingest run is picked up within PRICE_CACHE_MS without any announcement', async () => {
    const catalogId = await insertItem();
    const source = testSource();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    await ingestRun(catalogId, source, '2.00', new Date(clock.now().getTime() - 60_000));
    await eventually(async () => (summary(await pricesOf(t, catalogId, ws.keyHeaders))[0] === `default/${source}:2.00` ? true : undefined), 10_000);

    await ingestRun(catalogId, source, '2.50', new Date(clock.now().getTime() - 30_000));
    const checksAtCommit = t.deps.priceRuns!.checks;
    await eventually(async () => (summary(await pricesOf(t, catalogId, ws.keyHeaders))[0] === `default/${source}:2.50` ? true : undefined), 10_000);
    // The first check that starts after the commit sees the run (one in flight may predate it, and
    // on a busy machine one more may finish before the next request), and checks are at most
    // PRICE_CACHE_MS apart while requests come in: that is the bound.
    expect(t.deps.priceRuns!.checks - checksAtCommit).toBeLessThanOrEqual(3);
  });

  test('cached item prices are dropped as soon as a new snapshot is announced', async () => {
    const catalogId = await insertItem();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const [first, second] = [testSource(), testSource()].sort();
    await insertPriceQuietly(catalogId, first!, '1.10');
    await runsSeen();
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${first}:1.10`]);
    await insertPriceQuietly(catalogId, second!, '1.20');
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${first}:1.10`]);
    // What the index pool announces after an ingest run's snapshot.
    await t.deps.redis.publish(PRICE_SNAPSHOT_CHANNEL, '0');
    await eventually(async () => (summary(await pricesOf(t, catalogId, ws.keyHeaders)).length === 2 ? true : undefined), 10_000);
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${first}:1.10`, `default/${second}:1.20`]);
  });

  test('ages and freshness are computed per request from the cached prices', async () => {
    const catalogId = await insertItem();
    const source = testSource();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    // Its source succeeded now (600 s default threshold): a price is never fresh while its source is stale.
    await sql`insert into price_sources (name, last_success_at) values (${source}, ${clock.now()})`;
    await insertPriceQuietly(catalogId, source, '3.00', 'default', new Date(clock.now().getTime() - 100_000));
    await runsSeen();
    const first = (await pricesOf(t, catalogId, ws.keyHeaders)).versions[0]!.sources[0]!;
    expect(first).toMatchObject({ price: '3.00', age_seconds: 100, freshness: 'fresh' });
    await insertPriceQuietly(catalogId, source, '3.50');
    clock.advance(501_000);
    // Same cached row (3.00), its age as of now: past the 600 s default threshold.
    const later = (await pricesOf(t, catalogId, ws.keyHeaders)).versions[0]!.sources[0]!;
    expect(later).toMatchObject({ price: '3.00', age_seconds: 601, freshness: 'stale' });
    clock.advance(-501_000);
  });

  test('one entry per item serves every version filter', async () => {
    const catalogId = await insertItem();
    const source = testSource();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    await insertPriceQuietly(catalogId, source, '4.00');
    await insertPriceQuietly(catalogId, source, '40.00', 'ruby');
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders))).toEqual([`default/${source}:4.00`, `ruby/${source}:40.00`]);
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders, '?version=ruby'))).toEqual([`ruby/${source}:40.00`]);
    expect(summary(await pricesOf(t, catalogId, ws.keyHeaders, '?version=default'))).toEqual([`default/${source}:4.00`]);
    expect((await pricesOf(t, catalogId, ws.keyHeaders, '?version=phase-2')).versions).toEqual([]);
  });

  test('a cached item still authenticates, checks the scope and meters each workspace on its own', async () => {
    const catalogId = await insertItem();
    const source = testSource();
    await insertPriceQuietly(catalogId, source, '5.00');
    const first = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const second = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const noScope = await workspaceWithKey(t, { scopes: ['catalog:read'] });
    const a = await t.request(`/v2/prices/${catalogId}`, { headers: first.keyHeaders });
    const b = await t.request(`/v2/prices/${catalogId}`, { headers: second.keyHeaders });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    // Prices are the same for everyone; budgets are not.
    expect(await b.text()).toBe(await a.text());
    expect(a.headers.get('ratelimit')).toBe(b.headers.get('ratelimit'));
    expect((await t.request(`/v2/prices/${catalogId}`, { headers: first.keyHeaders })).headers.get('ratelimit')).not.toBe(a.headers.get('ratelimit'));
    expect((await t.request(`/v2/prices/${catalogId}`, { headers: noScope.keyHeaders })).status).toBe(403);
    expect((await t.request(`/v2/prices/${catalogId}`)).status).toBe(401);
  });

  test('an unknown id is not kept: an item added afterwards is found at once', async () => {
    const name = `Cache Test Item ${crypto.randomUUID()}`;
    const catalogId = catalogIdFor(name);
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    expect((await t.request(`/v2/prices/${catalogId}`, { headers: ws.keyHeaders })).status).toBe(404);
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
    expect((await pricesOf(t, catalogId, ws.keyHeaders)).versions).toEqual([]);
  });
});

describe('GET /v2/prices/{id}/history: the page cache', () => {
  const hour = (n: number) => new Date(Date.parse('2030-06-10T00:00:00.000Z') + n * 3_600_000);

  /** A skinport bucket written straight into price_rollups, as no ingest run would: nothing marks it. */
  async function insertRollupQuietly(catalogId: string, bucketStart: Date, close: string) {
    await sql`
      insert into price_rollups (catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at)
      values (${catalogId}, 'skinport', 'default', 'hourly', ${bucketStart}, 1, 1, 1, ${close}::numeric, 1, ${bucketStart}, ${bucketStart})`;
  }

  type Page = { data: { version: string; points: { bucket_start: string; close: string }[] }[]; next_cursor: string | null };

  async function page(catalogId: string, headers: Record<string, string>, extra: Record<string, string> = {}) {
    const query = new URLSearchParams({ marketplace: 'skinport', granularity: 'hourly', from: hour(0).toISOString(), to: hour(48).toISOString(), ...extra });
    const response = await t.request(`/v2/prices/${catalogId}/history?${query}`, { headers });
    return { status: response.status, body: (response.status === 200 ? await response.json() : await response.text()) as Page };
  }
  const closes = (body: Page) => body.data.flatMap((series) => series.points.map((point) => point.close));

  test('a page is kept until an ingest run is seen, then read again', async () => {
    const catalogId = await insertItem();
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    await insertRollupQuietly(catalogId, hour(1), '1.00');
    await runsSeen();
    expect(closes((await page(catalogId, ws.keyHeaders)).body)).toEqual(['1.00']);

    await insertRollupQuietly(catalogId, hour(2), '2.00');
    await afterChecks(2, () => page(catalogId, ws.keyHeaders));
    // No run: the page as read.
    expect(closes((await page(catalogId, ws.keyHeaders)).body)).toEqual(['1.00']);

    // An ingest run (of any source: this one writes its own source's rollups) moves the generation,
    // and the page is read again.
    await ingestRun(catalogId, testSource(), '9.99', hour(3));
    await eventually(async () => (closes((await page(catalogId, ws.keyHeaders)).body).length === 2 ? true : undefined), 10_000);
    expect(closes((await page(catalogId, ws.keyHeaders)).body)).toEqual(['1.00', '2.00']);
  });

  test('a cached page gives each caller a cursor for its own workspace', async () => {
    const catalogId = await insertItem();
    for (let n = 0; n < 3; n += 1) await insertRollupQuietly(catalogId, hour(n), `${n}.00`);
    const first = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const second = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const a = await page(catalogId, first.keyHeaders, { limit: '2' });
    const b = await page(catalogId, second.keyHeaders, { limit: '2' });
    expect(closes(a.body)).toEqual(['0.00', '1.00']);
    expect(closes(b.body)).toEqual(['0.00', '1.00']);
    expect(b.body.next_cursor).not.toBe(a.body.next_cursor);
    // Each cursor pages on for its own workspace only (docs/interface.md §4: cursors bind the workspace).
    expect(closes((await page(catalogId, second.keyHeaders, { limit: '2', cursor: b.body.next_cursor! })).body)).toEqual(['2.00']);
    expect((await page(catalogId, second.keyHeaders, { limit: '2', cursor: a.body.next_cursor! })).status).toBe(400);
    // Another limit is another page, not a slice of the cached one.
    expect(closes((await page(catalogId, first.keyHeaders, { limit: '3' })).body)).toEqual(['0.00', '1.00', '2.00']);
  });

  test('an unknown item is not kept: its history is found once the item exists', async () => {
    const name = `Cache Test Item ${crypto.randomUUID()}`;
    const catalogId = catalogIdFor(name);
    const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
    expect((await page(catalogId, ws.keyHeaders)).status).toBe(404);
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
    expect((await page(catalogId, ws.keyHeaders)).body.data).toEqual([]);
  });
});
