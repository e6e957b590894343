import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import type { ItemPrices } from '../../shared/prices/current.ts';
import { claimIngestRun } from '../../shared/prices/ingest.ts';
import { writeSalesWindows } from '../../shared/prices/sales.ts';
import { compareDecimals, formatUnscaled, meanOfTwoDecimals, multiplyDecimal, parseUnscaled, summarizeDecimals } from '../../shared/util/decimal.ts';
import { createKey, createTestApp, errorOf, eventually, testClock, workspaceWithKey } from '../helpers.ts';

const clock = testClock('2030-06-15T12:00:00.000Z');
const t = createTestApp({ now: clock.now });
const sql = t.deps.sql;
afterAll(async () => {
  await sql`delete from price_sources where name like 'ptest-%'`;
  await t.close();
});

const NOW = clock.now();
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000);
const HOUR = 3_600_000;

/** A catalog item of its own (unique name), as the catalog generator would store it. */
async function insertItem(tag = 'item') {
  const name = `Test ${tag} | ${crypto.randomUUID()} (Field-Tested)`;
  const catalogId = catalogIdFor(name);
  await sql`insert into catalog_items (catalog_id, market_hash_name, type, weapon, exterior) values (${catalogId}, ${name}, 'weapon', 'AK-47', 'field-tested')`;
  return { catalog_id: catalogId, market_hash_name: name };
}

type LatestPrice = {
  source: string;
  version?: string;
  price: string;
  median_price?: string | null;
  bid?: string | null;
  volume_7d?: number | null;
  quantity?: number | null;
  source_time?: Date;
  ingested_at?: Date;
};

/**
 * Latest prices as an ingest run leaves them: each source marked successful as of the write (a price
 * is never fresh while its source is stale: shared/prices/freshness.ts), its threshold kept.
 */
async function insertLatest(catalogId: string, rows: LatestPrice[]) {
  for (const row of rows) {
    const ingestedAt = row.ingested_at ?? ago(20);
    await sql`
      insert into latest_prices (catalog_id, source, version, price, median_price, bid, volume_7d, quantity, source_time, ingested_at, run_id)
      values (${catalogId}, ${row.source}, ${row.version ?? 'default'}, ${row.price}::numeric, ${row.median_price ?? null}::numeric,
              ${row.bid ?? null}::numeric, ${row.volume_7d ?? null}, ${row.quantity ?? null}, ${row.source_time ?? ago(30)},
              ${ingestedAt}, ${crypto.randomUUID()})`;
    await sql`
      insert into price_sources (name, last_success_at) values (${row.source}, ${ingestedAt})
      on conflict (name) do update set last_success_at = greatest(price_sources.last_success_at, excluded.last_success_at)`;
  }
}

type Rollup = {
  source?: string;
  version?: string;
  granularity?: string;
  bucket_start: Date;
  open?: string;
  high?: string;
  low?: string;
  close?: string;
  samples?: number;
};

async function insertRollups(catalogId: string, rows: Rollup[]) {
  for (const row of rows) {
    await sql`
      insert into price_rollups (catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at)
      values (${catalogId}, ${row.source ?? 'skinport'}, ${row.version ?? 'default'}, ${row.granularity ?? 'hourly'}, ${row.bucket_start},
              ${row.open ?? '1.00'}::numeric, ${row.high ?? '1.10'}::numeric, ${row.low ?? '0.90'}::numeric, ${row.close ?? '1.05'}::numeric,
              ${row.samples ?? 1}, ${row.bucket_start}, ${row.bucket_start})`;
  }
}

/** A source name of this suite, so stale thresholds set here never meet another suite's sources. */
const testSource = (tag: string) => `ptest-${tag}-${crypto.randomUUID().slice(0, 8)}`;

/** Pro tier: the paging tests spend more than the free minute budget. */
const reader = () => workspaceWithKey(t, { tier: 'pro' });

function get(path: string, key: string | null, query: Record<string, string> = {}) {
  const search = new URLSearchParams(query).toString();
  return t.request(`${path}${search ? `?${search}` : ''}`, { headers: key ? { 'x-api-key': key } : {} });
}

// The response body as the route declares it.
type PricesBody = ItemPrices;

async function prices(key: string, catalogId: string, query: Record<string, string> = {}): Promise<PricesBody> {
  const response = await get(`/v2/prices/${catalogId}`, key, query);
  if (response.status !== 200) throw new Error(`prices failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as PricesBody;
}

describe('decimal strings', () => {
  test('compare numerically whatever their scale', () => {
    expect(compareDecimals('2.3', '2.30')).toBe(0);
    expect(compareDecimals('10', '9.99')).toBe(1);
    expect(compareDecimals('0.0001', '0.001')).toBe(-1);
    expect(compareDecimals('123456789.12', '123456789.119')).toBe(1);
    expect(compareDecimals('007.50', '7.5')).toBe(0);
    expect(compareDecimals('-0.00', '0')).toBe(0);
    expect(compareDecimals('-2.5', '-2.49')).toBe(-1);
    expect(compareDecimals('-1', '0.001')).toBe(-1);
    expect(() => compareDecimals('1e3', '1')).toThrow('not a decimal string');
  });

  // The digit-wise comparison and multiplication agree with BigInt arithmetic on unscaled integers.
  test('digit-wise comparison and multiplication agree with exact integer arithmetic', () => {
    const decimal = fc
      .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 22n }), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 2 }))
      // Leading zeros too ("007.50"): Postgres never writes them, upstream text may.
      .map(([negative, value, scale, zeros]) => `${negative ? '-' : ''}${'0'.repeat(zeros)}${formatUnscaled(value, scale)}`);
    const exact = (text: string) => parseUnscaled(text.replace(/^(-?)0+(?=\d)/, '$1'));
    fc.assert(
      fc.property(decimal, decimal, fc.integer({ min: 0, max: 12 }), (a, b, factor) => {
        const x = exact(a);
        const y = exact(b);
        const scale = Math.max(x.scale, y.scale);
        const difference = x.value * 10n ** BigInt(scale - x.scale) - y.value * 10n ** BigInt(scale - y.scale);
        expect(compareDecimals(a, b)).toBe(difference < 0n ? -1 : difference > 0n ? 1 : 0);
        const product = exact(multiplyDecimal(a, factor));
        expect(product.value * 10n ** BigInt(x.scale - product.scale)).toBe(x.value * BigInt(factor));
        expect(product.scale).toBe(x.scale);
      }),
      { seed: 1913, numRuns: 2_000 },
    );
  });

  test('the mean of two keeps the finer scale and adds a digit only when halving needs it', () => {
    expect(meanOfTwoDecimals('2.30', '2.50')).toBe('2.40');
    expect(meanOfTwoDecimals('2.30', '2.41')).toBe('2.355');
    expect(meanOfTwoDecimals('1', '2')).toBe('1.5');
    expect(meanOfTwoDecimals('0.0001', '0.0002')).toBe('0.00015');
    expect(meanOfTwoDecimals('123456789.12', '123456789.13')).toBe('123456789.125');
    expect(meanOfTwoDecimals('99999999999999999999.99', '99999999999999999999.99')).toBe('99999999999999999999.99');
  });

  test('min and max are inputs unchanged; the median is the middle, or the exact mean of the two middles', () => {
    expect(summarizeDecimals([])).toBeNull();
    expect(summarizeDecimals(['2.30'])).toEqual({ min: '2.30', median: '2.30', max: '2.30' });
    expect(summarizeDecimals(['5', '0.0001', '2.30'])).toEqual({ min: '0.0001', median: '2.30', max: '5' });
    expect(summarizeDecimals(['5', '2.41', '0.0001', '2.30'])).toEqual({ min: '0.0001', median: '2.355', max: '5' });
    expect(summarizeDecimals(['10.00', '9.5'])).toEqual({ min: '9.5', median: '9.75', max: '10.00' });
  });
});

describe('GET /v2/prices/{catalog_id}', () => {
  test('returns every version and source with the stored decimal strings unchanged', async () => {
    const ws = await reader();
    const item = await insertItem();
    const [a, b, c] = [testSource('a'), testSource('b'), testSource('c')];
    await insertLatest(item.catalog_id, [
      { source: a, price: '2.30', median_price: '2.41', quantity: 17, source_time: ago(30), ingested_at: ago(20) },
      { source: b, price: '0.0001', median_price: null, quantity: null, source_time: ago(45), ingested_at: ago(40) },
      { source: c, price: '123456789.12', median_price: '123456789.120', quantity: 0 },
      { source: a, version: 'ruby', price: '1500.00' },
      { source: a, version: 'phase-2', price: '900.5' },
    ]);

    const body = await prices(ws.key, item.catalog_id);
    expect(body.catalog_id).toBe(item.catalog_id);
    expect(body.market_hash_name).toBe(item.market_hash_name);
    expect(body.currency).toBe('USD');
    // default first, then the other versions in byte order.
    expect(body.versions.map((v) => v.version)).toEqual(['default', 'phase-2', 'ruby']);
    const byDefault = body.versions[0]!;
    expect(byDefault.sources.map((s) => s.source)).toEqual([a, b, c]);
    expect(byDefault.sources[0]).toEqual({
      source: a,
      price: '2.30',
      median_price: '2.41',
      bid: null,
      volume_7d: null,
      quantity: 17,
      source_time: ago(30).toISOString(),
      ingested_at: ago(20).toISOString(),
      freshness: 'fresh',
      age_seconds: 30,
      stale_after_seconds: 600,
    });
    expect(byDefault.sources[1]).toMatchObject({ price: '0.0001', median_price: null, quantity: null });
    expect(byDefault.sources[2]).toMatchObject({ price: '123456789.12', median_price: '123456789.120', quantity: 0 });
    expect({ min: byDefault.min, median: byDefault.median, max: byDefault.max }).toEqual({ min: '0.0001', median: '2.30', max: '123456789.12' });
    expect(body.versions[1]).toMatchObject({ version: 'phase-2', min: '900.5', median: '900.5', max: '900.5' });
    expect(body.versions[2]).toMatchObject({ version: 'ruby', min: '1500.00', median: '1500.00', max: '1500.00' });
  });

  test('bid, volume_7d and the consensus: stale sources left out, a wild fresh source flagged as an outlier', async () => {
    const ws = await reader();
    const item = await insertItem();
    const strict = testSource('strict');
    await sql`insert into price_sources (name, stale_after_seconds) values (${strict}, 60)`;
    const [market, lis, wax, wild] = [testSource('market'), testSource('lis'), testSource('wax'), testSource('wild')];
    await insertLatest(item.catalog_id, [
      { source: market, price: '10.393', bid: '9.8', volume_7d: 42 },
      { source: lis, price: '10.10' },
      { source: wax, price: '9.999' },
      { source: wild, price: '45.00' },
      // Stale (61 s against 60): counts in min/median/max, never in the consensus.
      { source: strict, price: '0.50', bid: '12.00', source_time: ago(61) },
    ]);
    const [version] = (await prices(ws.key, item.catalog_id)).versions;
    // m0 = (10.10 + 10.393) / 2 = 10.2465; 45.00 > 3 × m0 = 30.7395 → outlier.
    expect(version!.consensus).toEqual({ price: '10.10', best_ask: '9.999', best_bid: '9.8', sources: 3, outliers: [wild], spread: '0.0199' });
    const bySource = new Map(version!.sources.map((entry) => [entry.source, entry]));
    expect(bySource.get(market)).toMatchObject({ price: '10.393', bid: '9.8', volume_7d: 42, freshness: 'fresh' });
    expect(bySource.get(market)).not.toHaveProperty('outlier');
    expect(bySource.get(wild)).toMatchObject({ bid: null, volume_7d: null, outlier: true });
    expect(bySource.get(strict)).toMatchObject({ freshness: 'stale', bid: '12.00' });
    expect(bySource.get(strict)).not.toHaveProperty('outlier');
    expect({ min: version!.min, max: version!.max }).toEqual({ min: '0.50', max: '45.00' });
  });

  test('sales windows per version (docs/design.md §19) and liquidity from the fresh sources’ listings; a sales read reaches a cached answer', async () => {
    const ws = await reader();
    const item = await insertItem();
    const strict = testSource('strict');
    await sql`insert into price_sources (name, stale_after_seconds) values (${strict}, 60)`;
    const [a, b] = [testSource('a'), testSource('b')];
    await insertLatest(item.catalog_id, [
      { source: a, price: '10.00', quantity: 30 },
      { source: b, price: '10.50', quantity: null },
      // Stale: its listings are not counted.
      { source: strict, price: '9.00', quantity: 500, source_time: ago(61) },
      { source: a, version: 'ruby', price: '900.00', quantity: 2 },
    ]);
    const before = await prices(ws.key, item.catalog_id);
    expect(before.versions[0]).toMatchObject({
      sales: { '24h': null, '7d': null, '30d': null, '90d': null },
      liquidity: { listings: 30, sales_7d: null, days_to_sell: null },
    });
    const runId = (await claimIngestRun(sql, 'sales-test', Math.floor(Math.random() * 1e12), new Date()))!;
    const window = (version: string, sales_window: '24h' | '7d', median: string, volume: number) => ({
      catalog_id: item.catalog_id,
      version,
      window: sales_window,
      median,
      mean: null,
      min: null,
      max: null,
      volume,
      source_time: new Date(),
    });
    await writeSalesWindows(sql, {
      source: 'skinport',
      runId,
      rows: [window('default', '7d', '9.95', 70), window('default', '24h', '9.90', 8), window('ruby', '7d', '880.00', 1)],
      ingestedAt: new Date(),
      skipped: 0,
      unknownNames: 0,
    });
    // The answer cached above is replaced: the sales reader's success moves the ingest marker.
    const after = await eventually(async () => {
      const body = await prices(ws.key, item.catalog_id);
      return body.versions[0]!.sales['7d'] ? body : undefined;
    });
    expect(after.versions[0]!.sales).toEqual({
      '24h': { median: '9.90', mean: null, min: null, max: null, volume: 8, sources: ['skinport'] },
      '7d': { median: '9.95', mean: null, min: null, max: null, volume: 70, sources: ['skinport'] },
      '30d': null,
      '90d': null,
    });
    // 30 listings at 70 a week: 3.0 days.
    expect(after.versions[0]!.liquidity).toEqual({ listings: 30, sales_7d: 70, days_to_sell: '3.0' });
    expect(after.versions[1]).toMatchObject({ version: 'ruby', liquidity: { listings: 2, sales_7d: 1, days_to_sell: '14.0' } });
    expect(after.versions[1]!.sales['7d']).toMatchObject({ median: '880.00' });
  });

  test('no fresh source: the consensus is null', async () => {
    const ws = await reader();
    const item = await insertItem();
    const strict = testSource('strict');
    await sql`insert into price_sources (name, stale_after_seconds) values (${strict}, 60)`;
    await insertLatest(item.catalog_id, [{ source: strict, price: '1.00', source_time: ago(3_600) }]);
    const [version] = (await prices(ws.key, item.catalog_id)).versions;
    expect(version!.consensus).toBeNull();
    expect(version!.sources[0]).toMatchObject({ freshness: 'stale' });
  });

  test('the median of an even number of sources is the exact mean of the two middle prices', async () => {
    const ws = await reader();
    const item = await insertItem();
    await insertLatest(item.catalog_id, [
      { source: testSource('a'), price: '2.30' },
      { source: testSource('b'), price: '2.41' },
      { source: testSource('c'), price: '5' },
      { source: testSource('d'), price: '0.0001' },
    ]);
    const [version] = (await prices(ws.key, item.catalog_id)).versions;
    expect({ min: version!.min, median: version!.median, max: version!.max }).toEqual({ min: '0.0001', median: '2.355', max: '5' });
  });

  test("a price is stale once older than its source's stale_after_seconds (600 s by default)", async () => {
    const ws = await reader();
    const item = await insertItem();
    const strict = testSource('strict');
    const defaultFresh = testSource('default');
    const defaultStale = testSource('default');
    await sql`insert into price_sources (name, stale_after_seconds) values (${strict}, 60)`;
    await insertLatest(item.catalog_id, [
      { source: strict, price: '1.00', source_time: ago(61) },
      { source: strict, version: 'phase-1', price: '1.00', source_time: ago(60) },
      { source: defaultFresh, price: '1.00', source_time: ago(600) },
      { source: defaultStale, price: '1.00', source_time: ago(601) },
      // An upstream clock ahead of ours: aged from when we read it (20 s ago), fresh.
      { source: defaultFresh, version: 'phase-1', price: '1.00', source_time: new Date(NOW.getTime() + 5_000) },
    ]);
    const body = await prices(ws.key, item.catalog_id);
    const find = (version: string, source: string) => body.versions.find((v) => v.version === version)!.sources.find((s) => s.source === source)!;
    expect(find('default', strict)).toMatchObject({ freshness: 'stale', age_seconds: 61, stale_after_seconds: 60 });
    expect(find('phase-1', strict)).toMatchObject({ freshness: 'fresh', age_seconds: 60, stale_after_seconds: 60 });
    expect(find('default', defaultFresh)).toMatchObject({ freshness: 'fresh', age_seconds: 600, stale_after_seconds: 600 });
    expect(find('default', defaultStale)).toMatchObject({ freshness: 'stale', age_seconds: 601, stale_after_seconds: 600 });
    expect(find('phase-1', defaultFresh)).toMatchObject({ freshness: 'fresh', age_seconds: 20 });
  });

  test('version narrows to one version; a valid version without a price is an empty list', async () => {
    const ws = await reader();
    const item = await insertItem();
    const source = testSource('v');
    await insertLatest(item.catalog_id, [
      { source, price: '10.00' },
      { source, version: 'ruby', price: '1500.00' },
    ]);
    expect((await prices(ws.key, item.catalog_id, { version: 'ruby' })).versions.map((v) => [v.version, v.min])).toEqual([['ruby', '1500.00']]);
    expect((await prices(ws.key, item.catalog_id, { version: 'default' })).versions.map((v) => v.version)).toEqual(['default']);
    const empty = await prices(ws.key, item.catalog_id, { version: 'phase-3' });
    expect(empty).toEqual({ catalog_id: item.catalog_id, market_hash_name: item.market_hash_name, image: null, currency: 'USD', versions: [] });
  });

  test('an item without any price is 200 with no versions', async () => {
    const ws = await reader();
    const item = await insertItem();
    expect((await prices(ws.key, item.catalog_id)).versions).toEqual([]);
  });

  test.each([
    ['a random word', 'not-an-id'],
    ['upper-case letters', `itm_${'A'.repeat(26)}`],
    ['a short id', 'itm_abc'],
    ['a digit outside base32', `itm_${'1'.repeat(26)}`],
  ])('a malformed catalog id (%s) is 400 invalid_catalog_id, even without a key', async (_name, catalogId) => {
    const ws = await reader();
    for (const key of [ws.key, null]) {
      const response = await get(`/v2/prices/${catalogId}`, key);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_catalog_id');
    }
  });

  test.each([['phase-5'], ['Default'], ['pattern-1001'], ['tier-0'], ['']])('version %p is a 400 naming the field', async (version) => {
    const ws = await reader();
    const item = await insertItem();
    const response = await get(`/v2/prices/${item.catalog_id}`, ws.key, { version });
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.[0]?.field).toBe('query.version');
  });

  test('an unknown query parameter is a 400', async () => {
    const ws = await reader();
    const item = await insertItem();
    const response = await get(`/v2/prices/${item.catalog_id}`, ws.key, { marketplace: 'steam' });
    expect(response.status).toBe(400);
  });

  test('a well-formed catalog id that names no item is 404', async () => {
    const ws = await reader();
    const response = await get(`/v2/prices/${catalogIdFor(`No such item ${crypto.randomUUID()}`)}`, ws.key);
    expect(response.status).toBe(404);
    expect((await errorOf(response)).code).toBe('not_found');
  });

  test('a missing or unknown key is 401; a key without prices:read is 403 naming the scope', async () => {
    const item = await insertItem();
    expect((await get(`/v2/prices/${item.catalog_id}`, null)).status).toBe(401);
    expect((await get(`/v2/prices/${item.catalog_id}`, 'cs2_not-a-real-key')).status).toBe(401);
    const ws = await reader();
    const limited = await createKey(t, ws.token, { scopes: ['usage:read'] });
    const denied = await get(`/v2/prices/${item.catalog_id}`, limited.key);
    expect(denied.status).toBe(403);
    const error = await errorOf(denied);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('prices:read');
  });

  test('a successful read debits one unit and carries RateLimit headers', async () => {
    const ws = await reader();
    const item = await insertItem();
    const response = await get(`/v2/prices/${item.catalog_id}`, ws.key);
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toContain('"minute";r=');
  });
});

type Point = { bucket_start: string; open: string; high: string; low: string; close: string; samples: number };
type HistoryBody = {
  catalog_id: string;
  market_hash_name: string;
  marketplace: string;
  granularity: string;
  from: string;
  to: string;
  data: { version: string; points: Point[] }[];
  next_cursor: string | null;
};

async function history(key: string, catalogId: string, query: Record<string, string>): Promise<HistoryBody> {
  const response = await get(`/v2/prices/${catalogId}/history`, key, query);
  if (response.status !== 200) throw new Error(`history failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as HistoryBody;
}

/** Every page of a history query, and the (version, bucket_start) pairs in the order served. */
async function allHistory(key: string, catalogId: string, query: Record<string, string>) {
  const pages: HistoryBody[] = [];
  let cursor: string | null = null;
  do {
    const current: HistoryBody = await history(key, catalogId, { ...query, ...(cursor ? { cursor } : {}) });
    pages.push(current);
    cursor = current.next_cursor;
    if (pages.length > 200) throw new Error('pagination does not terminate');
  } while (cursor);
  const served = pages.flatMap((page) => page.data.flatMap((series) => series.points.map((point) => `${series.version}@${point.bucket_start}`)));
  return { pages, served };
}

// Whole hours well before the suite's clock, so default windows (ending at the clock) are predictable.
const hour = (index: number) => new Date(Date.parse('2030-06-01T00:00:00.000Z') + index * HOUR);

describe('GET /v2/prices/{catalog_id}/history', () => {
  test('returns rollup buckets with open/high/low/close as stored, from inclusive and to exclusive', async () => {
    const ws = await reader();
    const item = await insertItem();
    await insertRollups(item.catalog_id, [
      { bucket_start: hour(0), open: '2.30', high: '123456789.12', low: '0.0001', close: '2.3', samples: 7 },
      { bucket_start: hour(1), open: '1', high: '2', low: '0.5', close: '1.50', samples: 3 },
      { bucket_start: hour(2) },
      // Other sources, granularities and items never leak in.
      { bucket_start: hour(1), source: 'steam' },
      { bucket_start: hour(1), granularity: 'daily' },
      { bucket_start: hour(1), granularity: '10m' },
    ]);
    const body = await history(ws.key, item.catalog_id, { marketplace: 'skinport', from: hour(0).toISOString(), to: hour(2).toISOString() });
    expect(body).toEqual({
      catalog_id: item.catalog_id,
      market_hash_name: item.market_hash_name,
      marketplace: 'skinport',
      granularity: 'hourly',
      from: hour(0).toISOString(),
      to: hour(2).toISOString(),
      data: [
        {
          version: 'default',
          points: [
            { bucket_start: hour(0).toISOString(), open: '2.30', high: '123456789.12', low: '0.0001', close: '2.3', samples: 7 },
            { bucket_start: hour(1).toISOString(), open: '1', high: '2', low: '0.5', close: '1.50', samples: 3 },
          ],
        },
      ],
      next_cursor: null,
    });
    const daily = await history(ws.key, item.catalog_id, {
      marketplace: 'skinport',
      granularity: 'daily',
      from: hour(0).toISOString(),
      to: hour(24).toISOString(),
    });
    expect(daily.data.flatMap((s) => s.points.map((p) => p.bucket_start))).toEqual([hour(1).toISOString()]);
    const steam = await history(ws.key, item.catalog_id, {
      marketplace: 'steam',
      granularity: 'hourly',
      from: hour(0).toISOString(),
      to: hour(24).toISOString(),
    });
    expect(steam.data.flatMap((s) => s.points.map((p) => p.bucket_start))).toEqual([hour(1).toISOString()]);
  });

  test('without version every stored version is its own series; with version only that one', async () => {
    const ws = await reader();
    const item = await insertItem();
    await insertRollups(item.catalog_id, [
      { bucket_start: hour(0), version: 'ruby', close: '1500.00' },
      { bucket_start: hour(0), version: 'default', close: '800.00' },
      { bucket_start: hour(1), version: 'phase-2', close: '900.00' },
      { bucket_start: hour(1), version: 'default', close: '801.00' },
    ]);
    const range = { marketplace: 'skinport', from: hour(0).toISOString(), to: hour(3).toISOString() };
    const all = await history(ws.key, item.catalog_id, range);
    expect(all.data.map((s) => [s.version, s.points.map((p) => p.close)])).toEqual([
      ['default', ['800.00', '801.00']],
      ['phase-2', ['900.00']],
      ['ruby', ['1500.00']],
    ]);
    const ruby = await history(ws.key, item.catalog_id, { ...range, version: 'ruby' });
    expect(ruby.data).toEqual([{ version: 'ruby', points: [expect.objectContaining({ close: '1500.00' })] }]);
    const none = await history(ws.key, item.catalog_id, { ...range, version: 'emerald' });
    expect(none.data).toEqual([]);
    expect(none.next_cursor).toBeNull();
  });

  test('pages across versions in (version, bucket_start) order neither skip nor repeat a point', async () => {
    const ws = await reader();
    const item = await insertItem();
    const versions = ['default', 'pattern-12', 'phase-1', 'tier-2'];
    const rows: Rollup[] = [];
    for (const version of versions) for (let i = 0; i < 23; i += 1) rows.push({ version, bucket_start: hour(i), close: `${i}.${version.length}` });
    await insertRollups(item.catalog_id, rows);
    const expected = versions.flatMap((version) => Array.from({ length: 23 }, (_, i) => `${version}@${hour(i).toISOString()}`));
    const range = { marketplace: 'skinport', from: hour(0).toISOString(), to: hour(48).toISOString() };

    for (const limit of ['1', '7', '23', '24', '1000']) {
      const { pages, served } = await allHistory(ws.key, item.catalog_id, { ...range, limit });
      expect(served).toEqual(expected);
      expect(pages.length).toBe(Math.ceil(expected.length / Number(limit)));
      for (const page of pages) expect(page.data.reduce((n, s) => n + s.points.length, 0)).toBeLessThanOrEqual(Number(limit));
    }
    // A series cut by the limit continues at the top of the next page under the same version.
    const first = await history(ws.key, item.catalog_id, { ...range, limit: '30' });
    expect(first.data.map((s) => [s.version, s.points.length])).toEqual([
      ['default', 23],
      ['pattern-12', 7],
    ]);
    const second = await history(ws.key, item.catalog_id, { ...range, limit: '30', cursor: first.next_cursor! });
    expect(second.data.map((s) => [s.version, s.points.length])).toEqual([
      ['pattern-12', 16],
      ['phase-1', 14],
    ]);
  });

  test('buckets off the millisecond grid page by their microseconds: none skipped, none repeated', async () => {
    const ws = await reader();
    const item = await insertItem();
    // Three buckets within one millisecond (shown as the same .123Z) and one after it; sent as text,
    // since a Date (and postgres.js's timestamptz parameters) stop at milliseconds.
    for (const micros of ['123001', '123002', '123999', '124000']) {
      const bucketStart = `${hour(0).toISOString().slice(0, 19)}.${micros}Z`;
      await sql`
        insert into price_rollups (catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at)
        values (${item.catalog_id}, 'skinport', 'default', 'hourly', ${bucketStart}::text::timestamptz,
                ${micros}::numeric, 1, 1, 1, 1, ${bucketStart}::text::timestamptz, ${bucketStart}::text::timestamptz)`;
    }
    const { pages } = await allHistory(ws.key, item.catalog_id, {
      marketplace: 'skinport',
      from: hour(0).toISOString(),
      to: hour(1).toISOString(),
      limit: '1',
    });
    const points = pages.flatMap((page) => page.data.flatMap((series) => series.points.map((point) => `${point.bucket_start} ${point.open}`)));
    const second = hour(0).toISOString().slice(0, 19);
    expect(points).toEqual([`${second}.123Z 123001`, `${second}.123Z 123002`, `${second}.123Z 123999`, `${second}.124Z 124000`]);
  });

  test('limit defaults to 288 and may be 1000', async () => {
    const ws = await reader();
    const item = await insertItem();
    // Ten days back: inside the 10m horizon (31 days).
    const start = clock.now().getTime() - 10 * 86_400_000;
    await insertRollups(
      item.catalog_id,
      Array.from({ length: 300 }, (_, i) => ({ granularity: '10m', bucket_start: new Date(start + i * 600_000) })),
    );
    const range = { marketplace: 'skinport', granularity: '10m', from: new Date(start).toISOString(), to: new Date(start + 3 * 86_400_000).toISOString() };
    const first = await history(ws.key, item.catalog_id, range);
    expect(first.data[0]!.points).toHaveLength(288);
    expect(first.next_cursor).toBeString();
    const largest = await history(ws.key, item.catalog_id, { ...range, limit: '1000' });
    expect(largest.data[0]!.points).toHaveLength(300);
    expect(largest.next_cursor).toBeNull();
  });

  test("the default window ends now, spans 30 days hourly, and later pages keep the first page's window", async () => {
    const ws = await reader();
    const item = await insertItem();
    const now = clock.now().getTime();
    const inside = [new Date(now - 30 * 86_400_000), new Date(now - 29 * 86_400_000), new Date(now - HOUR)];
    await insertRollups(item.catalog_id, [
      { bucket_start: new Date(now - 30 * 86_400_000 - HOUR) },
      ...inside.map((bucket_start) => ({ bucket_start })),
      { bucket_start: new Date(now) },
    ]);
    const first = await history(ws.key, item.catalog_id, { marketplace: 'skinport', limit: '1' });
    expect(first.from).toBe(new Date(now - 30 * 86_400_000).toISOString());
    expect(first.to).toBe(new Date(now).toISOString());
    expect(first.data[0]!.points.map((p) => p.bucket_start)).toEqual([inside[0]!.toISOString()]);
    // Two days later the default window would start after the remaining points; the cursor keeps the old one.
    clock.advance(2 * 86_400_000);
    try {
      const rest = await allHistory(ws.key, item.catalog_id, { marketplace: 'skinport', limit: '1', cursor: first.next_cursor! });
      expect(rest.served.map((s) => s.split('@')[1])).toEqual(inside.slice(1).map((d) => d.toISOString()));
      expect(rest.pages[0]!.from).toBe(first.from);
    } finally {
      clock.set(NOW);
    }
  });

  test('the widest range of each granularity is accepted, back to its horizon', async () => {
    const ws = await reader();
    const item = await insertItem();
    // The widest ranges equal the default horizons (RETENTION_ROLLUPS_*_DAYS: 31, 366, 3660 days).
    const to = clock.now().getTime();
    for (const [granularity, days] of [
      ['10m', 31],
      ['hourly', 366],
      ['daily', 3660],
    ] as const) {
      const response = await get(`/v2/prices/${item.catalog_id}/history`, ws.key, {
        marketplace: 'csfloat',
        granularity,
        from: new Date(to - days * 86_400_000).toISOString(),
        to: new Date(to).toISOString(),
      });
      expect(response.status).toBe(200);
    }
  });

  describe('400s', () => {
    const to = '2030-01-01T00:00:00.000Z';
    const before = (days: number) => new Date(Date.parse(to) - days * 86_400_000).toISOString();
    test.each([
      ['marketplace missing', {}, 'query.marketplace'],
      ['an unknown marketplace', { marketplace: 'buff' }, 'query.marketplace'],
      ['an invalid version', { marketplace: 'steam', version: 'phase-9' }, 'query.version'],
      ['an unknown granularity', { marketplace: 'steam', granularity: 'weekly' }, 'query.granularity'],
      ['a from that is not a date-time', { marketplace: 'steam', from: 'yesterday' }, 'query.from'],
      ['a to without a time', { marketplace: 'steam', to: '2030-01-01' }, 'query.to'],
      ['from equal to to', { marketplace: 'steam', from: to, to }, 'query.from'],
      ['from after to', { marketplace: 'steam', from: to, to: before(1) }, 'query.from'],
      ['a from in the future without to', { marketplace: 'steam', from: '2099-01-01T00:00:00Z' }, 'query.from'],
      ['a 10m range over 31 days', { marketplace: 'steam', granularity: '10m', from: before(31.001), to }, 'query.to'],
      ['an hourly range over 366 days', { marketplace: 'steam', from: before(367), to }, 'query.to'],
      ['a daily range over 3660 days', { marketplace: 'steam', granularity: 'daily', from: before(3661), to }, 'query.to'],
      ['a from alone further back than the maximum', { marketplace: 'steam', granularity: '10m', from: before(400) }, 'query.to'],
      [
        'a 10m from before its 31-day horizon',
        { marketplace: 'steam', granularity: '10m', from: '2030-05-14T00:00:00Z', to: '2030-05-15T00:00:00Z' },
        'query.from',
      ],
      ['an hourly window ending before its 366-day horizon', { marketplace: 'steam', to: '2029-06-01T00:00:00Z' }, 'query.from'],
      ['limit 0', { marketplace: 'steam', limit: '0' }, 'query.limit'],
      ['limit 1001', { marketplace: 'steam', limit: '1001' }, 'query.limit'],
      ['limit abc', { marketplace: 'steam', limit: 'abc' }, 'query.limit'],
      ['a fractional limit', { marketplace: 'steam', limit: '2.5' }, 'query.limit'],
      ['an unknown parameter', { marketplace: 'steam', source: 'steam' }, 'query'],
    ])('%s is 400 invalid_request naming the field', async (_name, query, field) => {
      const ws = await reader();
      const item = await insertItem();
      const response = await get(`/v2/prices/${item.catalog_id}/history`, ws.key, query as Record<string, string>);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_request');
      expect(error.details?.map((d) => d.field).join(' ')).toContain(field);
    });

    test('an unknown marketplace names the allowed ones', async () => {
      const ws = await reader();
      const item = await insertItem();
      for (const query of [{ marketplace: 'buff' }, {}] as Record<string, string>[]) {
        const error = await errorOf(await get(`/v2/prices/${item.catalog_id}/history`, ws.key, query));
        expect(error.details?.[0]?.message).toContain('skinport, steam, csfloat');
      }
    });

    test('a malformed catalog id is 400 invalid_catalog_id', async () => {
      const ws = await reader();
      const response = await get('/v2/prices/itm_nope/history', ws.key, { marketplace: 'steam' });
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_catalog_id');
    });

    test('tampered, garbage, re-filtered, foreign-item and foreign-workspace cursors are 400 invalid_cursor', async () => {
      const ws = await reader();
      const other = await reader();
      const item = await insertItem();
      const otherItem = await insertItem();
      await insertRollups(
        item.catalog_id,
        [0, 1, 2].map((i) => ({ bucket_start: hour(i) })),
      );
      const range = { marketplace: 'skinport', from: hour(0).toISOString(), to: hour(10).toISOString() };
      const { next_cursor: cursor } = await history(ws.key, item.catalog_id, { ...range, limit: '1' });
      expect(cursor).toBeString();
      // The genuine cursor works, also with another page size.
      expect((await get(`/v2/prices/${item.catalog_id}/history`, ws.key, { ...range, limit: '2', cursor: cursor! })).status).toBe(200);

      const [payload, signature] = cursor!.split('.') as [string, string];
      const flipped = (text: string, index: number) => `${text.slice(0, index)}${text[index] === 'A' ? 'B' : 'A'}${text.slice(index + 1)}`;
      const attempts: [string, string, Record<string, string>, string][] = [
        ['tampered payload', item.catalog_id, range, `${flipped(payload, 5)}.${signature}`],
        ['tampered signature', item.catalog_id, range, `${payload}.${flipped(signature, 3)}`],
        ['garbage', item.catalog_id, range, 'garbage'],
        ['three parts', item.catalog_id, range, `${cursor}.x`],
        ['another marketplace', item.catalog_id, { ...range, marketplace: 'steam' }, cursor!],
        ['another version', item.catalog_id, { ...range, version: 'default' }, cursor!],
        ['another granularity', item.catalog_id, { ...range, granularity: 'daily' }, cursor!],
        ['another from', item.catalog_id, { ...range, from: hour(1).toISOString() }, cursor!],
        ['no to', item.catalog_id, { marketplace: 'skinport', from: hour(0).toISOString() }, cursor!],
        ['another item', otherItem.catalog_id, range, cursor!],
      ];
      for (const [name, catalogId, query, candidate] of attempts) {
        const response = await get(`/v2/prices/${catalogId}/history`, ws.key, { ...query, cursor: candidate });
        expect([name, response.status]).toEqual([name, 400]);
        expect([name, (await errorOf(response)).code]).toEqual([name, 'invalid_cursor']);
      }
      const foreign = await get(`/v2/prices/${item.catalog_id}/history`, other.key, { ...range, cursor: cursor! });
      expect(foreign.status).toBe(400);
      expect((await errorOf(foreign)).code).toBe('invalid_cursor');
    });
  });

  test('401 without a key, 403 without prices:read, 404 for an unknown item', async () => {
    const item = await insertItem();
    const query = { marketplace: 'steam' };
    expect((await get(`/v2/prices/${item.catalog_id}/history`, null, query)).status).toBe(401);
    const ws = await reader();
    const limited = await createKey(t, ws.token, { scopes: ['catalog:read'] });
    const denied = await get(`/v2/prices/${item.catalog_id}/history`, limited.key, query);
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).code).toBe('insufficient_scope');
    const missing = await get(`/v2/prices/${catalogIdFor(`No such item ${crypto.randomUUID()}`)}/history`, ws.key, query);
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('not_found');
  });
});
