import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import path from 'node:path';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { claimIngestRun } from '../../shared/prices/ingest.ts';
import { findItemSales, liquidityOf, mapSalesToCatalog, type StagedSales, writeSalesWindows } from '../../shared/prices/sales.ts';
import { fetchSkinportSales, parseSkinportSalesRow } from '../../shared/sources/skinport-sales.ts';
import { type SalesWindowName, SourceRateLimitedError, SourceUnavailableError } from '../../shared/sources/types.ts';
import { parseJsonExact } from '../../shared/sources/upstream.ts';
import { runSkinportSales } from '../../workers/ingest/sales.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, failure, type TestApp } from '../helpers.ts';

/**
 * Sales windows (docs/design.md §19): skinport's sales history read from a recorded body of the real format
 * (test/fixtures/upstream/skinport-sales-history.json) and hostile ones over real HTTP; windows
 * combined over sources exactly (volume-weighted median and mean) in Postgres; liquidity.
 */

const silent = createLogger({ level: 'silent', name: 'test' });
const NOW = new Date('2026-11-28T12:00:00.000Z');
const FIXTURE = path.join(import.meta.dir, '..', 'fixtures', 'upstream', 'skinport-sales-history.json');

describe('skinport sales history', () => {
  let body: () => Response = () => new Response('[]');
  let requests = 0;
  let server: ReturnType<typeof Bun.serve>;
  const context = () => ({ baseUrl: `http://127.0.0.1:${server.port}`, log: silent, timeoutMs: 2_000, acquire: async () => undefined, now: () => NOW });
  beforeAll(() => {
    server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(request) {
        requests += 1;
        const url = new URL(request.url);
        if (url.pathname !== '/v1/sales/history' || url.searchParams.get('app_id') !== '730' || url.searchParams.get('currency') !== 'USD')
          return new Response('no', { status: 404 });
        return body();
      },
    });
  });
  afterAll(() => server.stop(true));

  test('reads every window of the recorded body: JSON numbers as their text, null prices when nothing sold, phases as versions', async () => {
    const text = await Bun.file(FIXTURE).text();
    body = () => new Response(text, { headers: { 'content-type': 'application/json' } });
    const result = await fetchSkinportSales(context());
    expect(result).toMatchObject({ rows: 3, skipped: 0, requests: 1 });
    const key = (name: string, version: string, window: SalesWindowName) =>
      result.sales.find((s) => s.market_hash_name === name && s.version === version && s.window === window);
    expect(key('AK-47 | Redline (Field-Tested)', 'default', '24h')).toEqual({
      market_hash_name: 'AK-47 | Redline (Field-Tested)',
      version: 'default',
      window: '24h',
      median: '29.3',
      mean: '29.41',
      min: '28.13',
      max: '31.9',
      volume: 41,
      source_time: NOW,
    });
    expect(key('★ Karambit | Doppler (Factory New)', 'ruby', '24h')).toMatchObject({ median: null, mean: null, min: null, max: null, volume: 0 });
    expect(key('★ Karambit | Doppler (Factory New)', 'ruby', '30d')).toMatchObject({ median: '4650.02', min: '4410', volume: 4 });
    expect(result.sales).toHaveLength(12);
  });

  test('hostile rows: each unreadable window is counted, the rest of its row still counts', () => {
    const parse = (json: string) => parseSkinportSalesRow(parseJsonExact(json), NOW);
    // A window of the wrong type, a negative median, a string volume; one good window.
    const row = parse(
      '{"market_hash_name":"X","version":null,"currency":"USD","last_24_hours":"n/a","last_7_days":{"min":1,"max":2,"avg":1.5,"median":-1,"volume":3},' +
        '"last_30_days":{"min":1,"max":2,"avg":1.5,"median":1.5,"volume":"3"},"last_90_days":{"min":1,"max":2,"avg":1.5,"median":1.5,"volume":3}}',
    );
    expect(row.skipped).toBe(3);
    expect(row.sales.map((s) => s.window)).toEqual(['90d']);
    // Missing windows are simply absent (no source, not malformed).
    expect(parse('{"market_hash_name":"X","version":null,"last_7_days":{"min":1,"max":1,"avg":1,"median":1,"volume":1}}')).toMatchObject({ skipped: 0 });
    // Prices given with volume 0 are not sales.
    expect(parse('{"market_hash_name":"X","last_24_hours":{"min":1,"max":1,"avg":1,"median":1,"volume":0}}').sales[0]).toMatchObject({
      median: null,
      volume: 0,
    });
    // Sales without a median, a row without a name, an unknown phase label, another currency.
    expect(parse('{"market_hash_name":"X","last_24_hours":{"min":1,"max":1,"avg":1,"median":null,"volume":2}}').skipped).toBe(1);
    expect(parse('{"version":null,"last_24_hours":{"volume":0}}').skipped).toBe(1);
    expect(parse('{"market_hash_name":"X","version":"Phase 9"}').skipped).toBe(1);
    expect(parse('{"market_hash_name":"X","currency":"EUR"}').skipped).toBe(1);
    expect(parse('[]').skipped).toBe(1);
  });

  test('429 carries its Retry-After; truncated bodies, 5xx and bodies of nothing readable are upstream failures', async () => {
    body = () => new Response('{"errors":[{"id":"rate_limit"}]}', { status: 429, headers: { 'retry-after': '120' } });
    const limited = await failure(fetchSkinportSales(context()));
    expect(limited).toBeInstanceOf(SourceRateLimitedError);
    expect((limited as SourceRateLimitedError).retryAfterMs).toBe(120_000);
    body = () => new Response('[{"market_hash_name":"AK-47 | Redline (Field-Tested)","last_24_hours":{"min":12.3');
    expect(await failure(fetchSkinportSales(context()))).toBeInstanceOf(SourceUnavailableError);
    body = () => new Response('oops', { status: 502 });
    expect(await failure(fetchSkinportSales(context()))).toBeInstanceOf(SourceUnavailableError);
    body = () => new Response('{"items":[]}');
    expect(await failure(fetchSkinportSales(context()))).toBeInstanceOf(SourceUnavailableError);
    body = () => new Response('[{"market_hash_name":"X","last_24_hours":"?"},{"version":1}]');
    expect(await failure(fetchSkinportSales(context()))).toBeInstanceOf(SourceUnavailableError);
    expect(requests).toBeGreaterThan(0);
  });
});

describe('combined windows', () => {
  const t = createTestApp();
  const sql = t.deps.sql;
  afterAll(() => t.close());

  async function item(): Promise<string> {
    const name = `Sales Window ${crypto.randomUUID()}`;
    const catalogId = catalogIdFor(name);
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
    return catalogId;
  }
  const row = (catalogId: string, window: SalesWindowName, values: Partial<StagedSales>): StagedSales => ({
    catalog_id: catalogId,
    version: 'default',
    window,
    median: null,
    mean: null,
    min: null,
    max: null,
    volume: 0,
    source_time: NOW,
    ...values,
  });
  const write = async (source: string, rows: StagedSales[]) => {
    const runId = (await claimIngestRun(sql, `sales-test-${source}`, Math.floor(Math.random() * 1e12), new Date()))!;
    return writeSalesWindows(sql, { source, runId, rows, ingestedAt: new Date(), skipped: 0, unknownNames: 0 });
  };

  test('volume-weighted median and mean, min and max over the sources that publish them, exact decimals', async () => {
    const id = await item();
    await write('skinport', [
      row(id, '24h', { median: '10.00', mean: '11.00', min: '9.5', max: '14', volume: 3 }),
      row(id, '7d', { median: '10.10', mean: '10.333', min: '9', max: '15', volume: 7 }),
    ]);
    expect((await findItemSales(sql, id)).get('default')).toEqual({
      '24h': { median: '10.00', mean: '11.00', min: '9.5', max: '14', volume: 3, sources: ['skinport'] },
      '7d': { median: '10.10', mean: '10.333', min: '9', max: '15', volume: 7, sources: ['skinport'] },
      '30d': null,
      '90d': null,
    });
    // Steam's 24 h: a median and a volume only. 5 of 8 sales at 12: the weighted median is 12.
    await write('steam', [row(id, '24h', { median: '12.00', volume: 5 })]);
    expect((await findItemSales(sql, id)).get('default')!['24h']).toEqual({
      median: '12.00',
      mean: '11.00',
      min: '9.5',
      max: '14',
      volume: 8,
      sources: ['skinport', 'steam'],
    });
    // Exactly half the volume on each side: the mean of the two medians, exact.
    await write('steam', [row(id, '24h', { median: '10.05', volume: 3 })]);
    expect((await findItemSales(sql, id)).get('default')!['24h']).toMatchObject({ median: '10.025', volume: 6 });
  });

  test('the weighted mean is rounded half-even to 4 places; nothing sold leaves prices null but the window present', async () => {
    const id = await item();
    // (1 × 1 + 2 × 2) / 3 = 1.6666…: 1.6667. Two sources with means.
    await write('skinport', [row(id, '30d', { median: '1', mean: '1', volume: 1 })]);
    await write('steam', [row(id, '30d', { median: '2', mean: '2', volume: 2 })]);
    expect((await findItemSales(sql, id)).get('default')!['30d']).toMatchObject({ mean: '1.6667', median: '2', volume: 3 });
    const quiet = await item();
    await write('skinport', [row(quiet, '24h', { volume: 0 })]);
    expect((await findItemSales(sql, quiet)).get('default')!['24h']).toEqual({
      median: null,
      mean: null,
      min: null,
      max: null,
      volume: 0,
      sources: ['skinport'],
    });
  });

  test('half-even at the fifth place: 0.00005 ties go to the even neighbour', async () => {
    const [rounded] = await sql<{ a: string; b: string; c: string }[]>`
      select round_half_even(1.00005, 4)::text as a, round_half_even(1.00015, 4)::text as b, round_half_even(-2.5, 0)::text as c`;
    expect(rounded).toEqual({ a: '1.0000', b: '1.0002', c: '-2' });
  });

  test('an unchanged window writes nothing more; a changed one enters the history once', async () => {
    const id = await item();
    const first = await write('skinport', [row(id, '7d', { median: '3.10', volume: 2 })]);
    expect(first).toMatchObject({ changed: 1, combined: 1 });
    expect(await write('skinport', [row(id, '7d', { median: '3.10', volume: 2 })])).toMatchObject({ changed: 0, combined: 0 });
    expect(await write('skinport', [row(id, '7d', { median: '3.20', volume: 3 })])).toMatchObject({ changed: 1, combined: 1 });
    const history = await sql<
      { median: string; volume: number }[]
    >`select median::text as median, volume from sales_observations where catalog_id = ${id} order by ingested_at`;
    expect([...history]).toEqual([
      { median: '3.10', volume: 2 },
      { median: '3.20', volume: 3 },
    ]);
  });

  test('names the catalog lacks and versions an item cannot carry are counted, not written', () => {
    const catalog = new Map([['Known', { catalogId: 'itm_k', phases: ['ruby'] }]]);
    const sale = (name: string, version: string) => ({
      market_hash_name: name,
      version,
      window: '7d' as const,
      median: '1',
      mean: null,
      min: null,
      max: null,
      volume: 1,
      source_time: NOW,
    });
    const mapped = mapSalesToCatalog(
      [sale('Known', 'default'), sale('Known', 'ruby'), sale('Known', 'emerald'), sale('Other', 'default'), sale('Other', 'ruby')],
      catalog,
    );
    expect(mapped.staged.map((s) => s.version)).toEqual(['default', 'ruby']);
    expect(mapped).toMatchObject({ unknownNames: 1, unknownVersions: 1 });
  });
});

describe('liquidity', () => {
  const window = (volume: number) => ({ median: '1', mean: null, min: null, max: null, volume, sources: ['skinport'] });
  test('listings summed over fresh sources, days_to_sell = listings × 7 / sales_7d to one decimal, half-even', () => {
    expect(liquidityOf([10, null, 5], window(21))).toEqual({ listings: 15, sales_7d: 21, days_to_sell: '5.0' });
    // 1 × 7 / 4 = 1.75 → 1.8; 1 × 7 / 8 = 0.875 → 0.9; 3 × 7 / 40 = 0.525 → 0.5 (tie-free), 1 × 7 / 28 = 0.25 → 0.2 (tie to even).
    expect(liquidityOf([1], window(4)).days_to_sell).toBe('1.8');
    expect(liquidityOf([1], window(8)).days_to_sell).toBe('0.9');
    expect(liquidityOf([1], window(28)).days_to_sell).toBe('0.2');
    expect(liquidityOf([3], window(28)).days_to_sell).toBe('0.8');
    expect(liquidityOf([100_000], window(1)).days_to_sell).toBe('700000.0');
  });
  test('null without listings or sales', () => {
    expect(liquidityOf([null], window(3))).toEqual({ listings: null, sales_7d: 3, days_to_sell: null });
    expect(liquidityOf([4], null)).toEqual({ listings: 4, sales_7d: null, days_to_sell: null });
    expect(liquidityOf([4], window(0))).toEqual({ listings: 4, sales_7d: 0, days_to_sell: null });
    expect(liquidityOf([0], window(5))).toEqual({ listings: 0, sales_7d: 5, days_to_sell: '0.0' });
  });
});

describe('the skinport sales reader end to end (workers/ingest/sales.ts)', () => {
  // A simulator over items of this suite alone; the reader pointed at it.
  const names = [`Sales Reader ${crypto.randomUUID()} | A (Field-Tested)`, `Sales Reader ${crypto.randomUUID()} | B (Minimal Wear)`];
  let simulator: MarketSimulator;
  let t: TestApp;
  beforeAll(async () => {
    simulator = startMarketSimulator({ port: 0, seed: 7, items: names.map((name) => ({ market_hash_name: name, phases: [] })) });
    t = createTestApp({ config: { SOURCE_SKINPORT_URL: `${simulator.url}/skinport`, QUEUE_PREFIX: `salestest${process.pid}` } });
    for (const name of names)
      await t.deps.sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(name)}, ${name}, 'sticker')`;
  });
  afterAll(async () => {
    await t.close();
    await simulator.stop();
  });
  const deps = () => ({ sql: t.deps.sql, redis: t.deps.redis, config: t.deps.config, log: silent, now: () => new Date() });
  // Slots far apart, so each run claims its own (one hour per slot at the real interval).
  let slot = 0;
  const nextSlot = () => new Date(Date.now() + (slot += 1) * 86_400_000 * 30);

  test('reads, maps and stores every window of the suite’s items; GET /v2/status shows the reader', async () => {
    const outcome = await runSkinportSales(deps(), nextSlot());
    expect(outcome).toMatchObject({ status: 'succeeded', skipped: 0, unknownNames: 0 });
    const windows = await t.deps.sql<{ sales_window: string; sources: string[] }[]>`
      select sales_window, sources from item_sales where catalog_id in ${t.deps.sql(names.map((name) => catalogIdFor(name)))} order by catalog_id, sales_window`;
    expect(windows.length).toBe(8);
    expect(windows.every((row) => row.sources.join() === 'skinport')).toBe(true);
    const status = (await (await t.request('/v2/status')).json()) as {
      components: { sales: Record<string, { last_success_at: string | null; consecutive_failures: number }> };
    };
    expect(status.components.sales.skinport).toMatchObject({ consecutive_failures: 0 });
    expect(status.components.sales.skinport!.last_success_at).not.toBeNull();
  });

  test('a 429 blocks skinport’s budget for its Retry-After and is recorded on the reader only; skinport’s prices are untouched', async () => {
    await t.deps.sql`insert into price_sources (name, last_success_at) values ('skinport', now()) on conflict (name) do nothing`;
    const [before] = await t.deps.sql`select last_success_at, last_error from price_sources where name = 'skinport'`;
    simulator.setMode('skinport', 'rate_limit');
    simulator.setRetryAfter('120');
    try {
      const outcome = await runSkinportSales(deps(), nextSlot());
      expect(outcome.status).toBe('failed');
      // The next read does not even ask: the budget is blocked.
      const requests = simulator.requestCount('skinport');
      expect(await runSkinportSales(deps(), nextSlot())).toMatchObject({ status: 'failed', error: expect.stringContaining('Retry-After') });
      expect(simulator.requestCount('skinport')).toBe(requests);
    } finally {
      simulator.setMode('skinport', 'ok');
      await t.deps.redis.del(...(await t.deps.redis.keys(`salestest${process.pid}:*`)));
    }
    const [after] = await t.deps.sql`select last_success_at, last_error from price_sources where name = 'skinport'`;
    expect(after).toEqual(before!);
    const [reader] = await t.deps.sql<
      { consecutive_failures: number; last_error: string }[]
    >`select consecutive_failures, last_error from sales_readers where name = 'skinport'`;
    expect(reader!.consecutive_failures).toBeGreaterThanOrEqual(2);
  });

  test('wrong types in every window fail the read (nothing readable) and keep the stored windows', async () => {
    const id = catalogIdFor(names[0]!);
    const [stored] = await t.deps.sql`select count(*)::int as n from item_sales where catalog_id = ${id}`;
    simulator.setMode('skinport', 'wrong_types');
    try {
      expect(await runSkinportSales(deps(), nextSlot())).toMatchObject({ status: 'failed' });
    } finally {
      simulator.setMode('skinport', 'ok');
    }
    const [kept] = await t.deps.sql`select count(*)::int as n from item_sales where catalog_id = ${id}`;
    expect(kept).toEqual(stored!);
  });
});
