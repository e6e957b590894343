import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { freePort } from '../../scripts/services.ts';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { createSql } from '../../shared/platform/db.ts';
import { createTestApp, eventually, workspaceWithKey } from '../helpers.ts';
import { referenceLink } from '../market-index/index-reference.ts';
import { spawnedProcesses, waitForHttp } from '../spawned.ts';

// End to end over real processes: market simulator → two ingest workers (+ the index pool's
// snapshot job) → Postgres → API.
const sql = createSql(process.env.DATABASE_URL!, { max: 2 });
let simulatorUrl = '';
let apiUrl = '';
let apiKey = '';

const { spawn, stopAll } = spawnedProcesses();

const health = async () => {
  const response = await fetch(`${apiUrl}/health`);
  return {
    status: response.status,
    body: (await response.json()) as { status: string; sources: Record<string, { status: string; updated_at: string | null }> },
  };
};
const control = (source: string, mode: string) => fetch(`${simulatorUrl}/_control/${source}/${mode}`, { method: 'POST' });

beforeAll(async () => {
  await syncCatalog(sql, generateCatalog());
  const t = createTestApp();
  const { key } = await workspaceWithKey(t, { scopes: ['prices:read', 'catalog:read', 'market:read'], tier: 'enterprise' });
  apiKey = key;
  await t.close();

  const simulatorPort = await freePort();
  simulatorUrl = `http://127.0.0.1:${simulatorPort}`;
  spawn(['test/fakes/simulator-main.ts'], { SIMULATOR_PORT: String(simulatorPort) });
  await waitForHttp(`${simulatorUrl}/_control`);

  const sources = {
    SOURCES: 'skinport,steam,csfloat',
    SOURCE_SKINPORT_URL: `${simulatorUrl}/skinport`,
    SOURCE_STEAM_URL: `${simulatorUrl}/steam`,
    SOURCE_CSFLOAT_URL: `${simulatorUrl}/csfloat`,
    SOURCE_SKINPORT_INTERVAL_SECONDS: '6',
    SOURCE_CSFLOAT_INTERVAL_SECONDS: '6',
    SOURCE_STEAM_INTERVAL_SECONDS: '2',
    SOURCE_SKINPORT_STALE_SECONDS: '60',
    SOURCE_CSFLOAT_STALE_SECONDS: '60',
    SOURCE_STEAM_STALE_SECONDS: '8',
    // The keyless list over the whole catalog rebuilt at most every 5 s, not after every 2 s steam run
    // (under load a new snapshot came between every two requests of the ETag check below).
    PRICE_SNAPSHOT_INTERVAL_SECONDS: '5',
    // docs/design.md §14: the always-on fx source (part of /health) reads the simulator's ECB file.
    FX_URL: `${simulatorUrl}/fx`,
  };
  // Two workers of the same pool: runs must never be written twice.
  spawn(['workers/main.ts', 'ingest'], sources);
  spawn(['workers/main.ts', 'ingest'], sources);
  // The index pool rebuilds the keyless price snapshot and calculates the market index after each run.
  spawn(['workers/main.ts', 'index'], sources);
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;
  spawn(['api/main.ts'], { ...sources, PORT: String(apiPort), PUBLIC_PRICES_RATE_LIMIT: '100000' });
  await waitForHttp(`${apiUrl}/v2/health`);
}, 120_000);

afterAll(async () => {
  await stopAll();
  await sql.end({ timeout: 5 });
}, 30_000);

describe('simulator → ingest → Postgres → API', () => {
  test('every source turns fresh and prices reach the keyed and keyless APIs', async () => {
    // Other suites may have marked a source healthy already: wait for this run's full skinport snapshot too.
    await eventually(
      async () => {
        if ((await health()).status !== 200) return undefined;
        const [priced] = await sql<{ count: number }[]>`select count(*)::int as count from latest_prices where source = 'skinport'`;
        return priced!.count > 30_000 ? true : undefined;
      },
      90_000,
      500,
    );
    const report = await health();
    expect(Object.keys(report.body.sources).sort()).toEqual(['csfloat', 'skinport', 'steam']);
    expect(report.body.status).toBe('up');

    const [row] = await sql<{ catalog_id: string; price: string; market_hash_name: string }[]>`
      select l.catalog_id, l.price::text as price, c.market_hash_name from latest_prices l
      join catalog_items c using (catalog_id) where l.source = 'skinport' and l.version = 'default' limit 1`;
    expect(row).toBeDefined();
    const prices = await fetch(`${apiUrl}/v2/prices/${row!.catalog_id}`, { headers: { 'x-api-key': apiKey } });
    expect(prices.status).toBe(200);
    const body = (await prices.json()) as { versions: { version: string; sources: { source: string; price: string }[] }[] };
    const fromSkinport = body.versions.find((version) => version.version === 'default')?.sources.find((source) => source.source === 'skinport');
    expect(typeof fromSkinport?.price).toBe('string');
    expect(fromSkinport!.price).toMatch(/^\d+(\.\d+)?$/);

    const keyless = await eventually(
      async () => {
        const response = await fetch(`${apiUrl}/v1/prices/${encodeURIComponent(row!.market_hash_name)}`);
        return response.status === 200 ? response : undefined;
      },
      30_000,
      250,
    );
    expect(keyless.headers.get('etag')).toBeTruthy();
    // The list's ETag answers 304 while its snapshot is current. A snapshot published between the two
    // requests makes the second a 200 with the new ETag: then the pair is asked again.
    await eventually(
      async () => {
        const list = await fetch(`${apiUrl}/v1/prices`, { headers: { 'accept-encoding': 'br' } });
        expect(list.status).toBe(200);
        const etag = list.headers.get('etag')!;
        const again = await fetch(`${apiUrl}/v1/prices`, { headers: { 'if-none-match': etag } });
        if (again.status === 200) {
          expect(again.headers.get('etag')).not.toBe(etag);
          return undefined;
        }
        expect(again.status).toBe(304);
        return true;
      },
      30_000,
      0,
    );

    // (price.updated events are written only while an endpoint subscribes: test/webhooks/webhooks-price-events.test.ts.)
  }, 120_000);

  test('each successful run is followed by a market index calculation that anyone can recompute from the API', async () => {
    const headers = { 'x-api-key': apiKey };
    type Calculation = { id: string; level: string; previous_level: string | null; link_factor: string | null; constituent_count: number; inception: boolean };
    const linked = (query: string) =>
      eventually(
        async () => {
          const response = await fetch(`${apiUrl}/v2/market-index/cs2?${query}`, { headers });
          if (response.status !== 200) return undefined;
          const body = (await response.json()) as Calculation;
          return body.inception ? undefined : body;
        },
        90_000,
        500,
      );
    for (const query of ['marketplace=skinport', 'marketplace=skinport&segment=weapon&value=AK-47']) {
      const calculation = await linked(query);
      const constituents: { previous_price: string; current_price: string }[] = [];
      let cursor: string | null = null;
      do {
        const response = await fetch(
          `${apiUrl}/v2/market-index/cs2/calculations/${calculation.id}/constituents?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { headers },
        );
        expect(response.status).toBe(200);
        const page = (await response.json()) as { data: { previous_price: string; current_price: string }[]; next_cursor: string | null };
        constituents.push(...page.data);
        cursor = page.next_cursor;
      } while (cursor);
      expect(constituents.length).toBe(calculation.constituent_count);
      const recomputed = referenceLink(
        calculation.previous_level!,
        constituents.map((c) => ({ previous: c.previous_price, current: c.current_price })),
      );
      expect({ link: calculation.link_factor, level: calculation.level }).toEqual(recomputed);
    }
  }, 120_000);

  test('a failing source turns stale and /health answers 503 while the others stay fresh', async () => {
    const since = new Date();
    await control('steam', 'fail');
    try {
      // A failed steam run of this test, and /health at 503 with steam stale and the others fresh. (Under
      // load a run can come later than its 8 s threshold: steam can turn stale before any run failed, and
      // another source can be stale for a moment while steam is still fresh. The 503 alone proves nothing.)
      const { report, failed } = await eventually(
        async () => {
          const [found] = await sql<{ error: string }[]>`
            select error from ingest_runs where source = 'steam' and status = 'failed' and started_at >= ${since} order by started_at desc limit 1`;
          if (!found) return undefined;
          const answer = await health();
          const { steam, skinport, csfloat } = answer.body.sources;
          const settled = steam?.status === 'stale' && skinport?.status === 'fresh' && csfloat?.status === 'fresh';
          return answer.status === 503 && settled ? { report: answer, failed: found } : undefined;
        },
        60_000,
        500,
      );
      expect(report.body.sources.steam!.status).toBe('stale');
      expect(report.body.sources.skinport!.status).toBe('fresh');
      expect(report.body.sources.csfloat!.status).toBe('fresh');
      expect(failed.error).toBeTruthy();
    } finally {
      await control('steam', 'ok');
    }
    await eventually(async () => ((await health()).status === 200 ? true : undefined), 60_000, 500);
  }, 150_000);

  test('malformed rows are skipped and counted while the rest land', async () => {
    const since = new Date();
    await control('skinport', 'partial');
    try {
      const run = await eventually(
        async () => {
          const [found] = await sql<{ rows_written: number; rows_skipped: number }[]>`
          select rows_written, rows_skipped from ingest_runs
          where source = 'skinport' and status = 'succeeded' and started_at > ${since} and rows_skipped > 0 limit 1`;
          return found;
        },
        60_000,
        500,
      );
      expect(run.rows_skipped).toBeGreaterThan(0);
      const [source] = await sql<
        { last_rows_skipped: number; last_error: string | null }[]
      >`select last_rows_skipped, last_error from price_sources where name = 'skinport'`;
      expect(source!.last_error).toBeNull();
    } finally {
      await control('skinport', 'ok');
    }
  }, 90_000);

  test('two workers never write one run twice', async () => {
    const [duplicates] = await sql<{ count: number }[]>`
      select count(*)::int as count from (
        select catalog_id, source, version, source_time from price_observations
        group by 1, 2, 3, 4 having count(*) > 1) d`;
    expect(duplicates!.count).toBe(0);
    const [runs] = await sql<{ count: number }[]>`select count(*)::int as count from ingest_runs where status = 'succeeded'`;
    expect(runs!.count).toBeGreaterThan(3);
  });
});
