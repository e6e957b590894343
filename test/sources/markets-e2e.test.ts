import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Redis } from 'ioredis';
import { freePort } from '../../scripts/services.ts';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import type { Sql } from '../../shared/platform/db.ts';
import { SOURCE_NAMES, type SourceName } from '../../shared/platform/source-names.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { eventually, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';
import { referenceLink } from '../market-index/index-reference.ts';
import { spawnedProcesses, waitForHttp } from '../spawned.ts';

// End to end over real processes with all ten marketplaces (docs/design.md §13 and §14): market simulator (in
// this process) → one ingest worker (every source) + the index pool → Postgres → API. test/sources/ingest-e2e.test.ts covers
// skinport, steam and csfloat in depth (two workers, failure modes); this suite shows the ten
// together: bids, consensus, a new marketplace's index, and one bad source leaving the rest alone.
// Skinbaron (EUR) runs with a key the simulator accepts, converted at the rates the fx source stores.
// A database and queue prefix of its own: ten sources' prices and schedules never meet another suite's.
let t: TestApp;
let simulator: MarketSimulator | undefined;
let sql: Sql;
const queuePrefix = `markets${process.pid}`;
let simulatorUrl = '';
let apiUrl = '';
let apiKey = '';

const { spawn, stopAll } = spawnedProcesses();

type Health = { status: string; sources: Record<string, { status: string; updated_at: string | null }> };
const health = async () => {
  const response = await fetch(`${apiUrl}/health`);
  return { status: response.status, body: (await response.json()) as Health };
};
const control = (source: string, mode: string) => fetch(`${simulatorUrl}/_control/${source}/${mode}`, { method: 'POST' });

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'markets' });
  sql = t.deps.sql;
  // Every eighth item of the real catalog (~4 700, of every kind), in the database and on the simulator's
  // market: ten whole-market bodies of all ~38 000 items every 20 s kept two cores busy for minutes, and
  // test/sources/ingest-e2e.test.ts already ingests the whole catalog.
  const catalog = generateCatalog().filter((_, index) => index % 8 === 0);
  await syncCatalog(sql, catalog);
  const { key } = await workspaceWithKey(t, { scopes: ['prices:read', 'market:read'], tier: 'enterprise' });
  apiKey = key;

  simulator = startMarketSimulator({ items: catalog });
  simulatorUrl = simulator.url;

  // Eight whole-market bodies, each run followed by a market index calculation over its fresh prices,
  // on two cores shared with Postgres and the tests: every 20 s (csdeals, the smallest and the failure
  // subject, every 4 s; steam prices a few names every 2 s), the keyless list rebuilt at most every 5 s.
  const schedule: Partial<Record<SourceName, [interval: number, stale: number]>> = { steam: [2, 30], csdeals: [4, 60] };
  const env: Record<string, string> = {
    DATABASE_URL: t.deps.config.DATABASE_URL,
    QUEUE_PREFIX: queuePrefix,
    SOURCES: SOURCE_NAMES.join(','),
    PRICE_SNAPSHOT_INTERVAL_SECONDS: '5',
    // docs/design.md §14: the always-on fx source (part of /health) reads the simulator's ECB file.
    FX_URL: `${simulatorUrl}/fx`,
    // docs/design.md §14: skinbaron runs only with a key; the simulator accepts any.
    SOURCE_SKINBARON_KEY: 'markets-e2e-any-key',
  };
  for (const name of SOURCE_NAMES) {
    const upper = name.toUpperCase();
    const [interval, stale] = schedule[name] ?? [20, 180];
    env[`SOURCE_${upper}_URL`] = `${simulatorUrl}/${name}`;
    env[`SOURCE_${upper}_INTERVAL_SECONDS`] = String(interval);
    env[`SOURCE_${upper}_STALE_SECONDS`] = String(stale);
  }
  spawn(['workers/main.ts', 'ingest'], env);
  spawn(['workers/main.ts', 'index'], env);
  const apiPort = await freePort();
  apiUrl = `http://127.0.0.1:${apiPort}`;
  spawn(['api/main.ts'], { ...env, PORT: String(apiPort), PUBLIC_PRICES_RATE_LIMIT: '100000' });
  await waitForHttp(`${apiUrl}/v2/health`);
}, 120_000);

afterAll(async () => {
  await stopAll();
  await simulator?.stop();
  await t?.close();
  // The spawned processes' queues and schedules.
  const redis = new Redis(t?.deps.config.REDIS_URL ?? process.env.REDIS_URL!);
  const keys = await redis.keys(`${queuePrefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
}, 30_000);

type Consensus = { price: string; best_ask: string; best_bid: string | null; sources: number; outliers: string[]; spread: string | null };
type KeyedSource = { source: string; price: string; bid: string | null; volume_7d: number | null; freshness: string; outlier?: true };

describe('ten marketplaces: simulator → ingest → Postgres → API', () => {
  test('every source turns fresh; an item priced by all ten shows bids, volume and one consensus, keyed and keyless', async () => {
    await eventually(async () => ((await health()).status === 200 ? true : undefined), 90_000, 500);
    expect(Object.keys((await health()).body.sources).sort()).toEqual([...SOURCE_NAMES].sort());

    // An item every source priced (steam prices a batch of names per run), csmarket with a buy order.
    const [item] = await eventually(
      async () => {
        const found = await sql<{ catalog_id: string; market_hash_name: string }[]>`
        select l.catalog_id, c.market_hash_name from latest_prices l join catalog_items c using (catalog_id)
        where l.version = 'default'
        group by l.catalog_id, c.market_hash_name
        having count(distinct l.source) = ${SOURCE_NAMES.length} and bool_or(l.source = 'csmarket' and l.bid is not null)
        limit 1`;
        return found.length > 0 ? found : undefined;
      },
      90_000,
      500,
    );

    const keyed = await fetch(`${apiUrl}/v2/prices/${item!.catalog_id}?version=default`, { headers: { 'x-api-key': apiKey } });
    expect(keyed.status).toBe(200);
    const [version] = ((await keyed.json()) as { versions: { sources: KeyedSource[]; consensus: Consensus | null }[] }).versions;
    expect(version!.sources.map((source) => source.source).sort()).toEqual([...SOURCE_NAMES].sort());
    const bySource = new Map(version!.sources.map((source) => [source.source, source]));
    const csmarket = bySource.get('csmarket')!;
    expect(csmarket.bid).toMatch(/^\d+(\.\d+)?$/);
    // Only csmarket publishes buy orders and 7-day sales keylessly.
    for (const name of SOURCE_NAMES.filter((name) => name !== 'csmarket')) expect(bySource.get(name)).toMatchObject({ bid: null, volume_7d: null });
    // Skinbaron alone prices in EUR (docs/design.md §14): its entry keeps the EUR it wrote beside the USD price.
    expect((bySource.get('skinbaron') as KeyedSource & { original?: { price: string; currency: string } }).original).toMatchObject({
      currency: 'EUR',
      price: expect.stringMatching(/^\d+(\.\d+)?$/),
    });
    for (const name of SOURCE_NAMES.filter((name) => name !== 'skinbaron')) expect(bySource.get(name)).not.toHaveProperty('original');
    // The simulator's sources agree within about ±10 %: every fresh source is in the consensus.
    const consensus = version!.consensus!;
    const fresh = version!.sources.filter((source) => source.freshness === 'fresh');
    expect(consensus.outliers).toEqual([]);
    expect(consensus.sources).toBe(fresh.length);
    expect(version!.sources.some((source) => source.outlier)).toBe(false);
    if (csmarket.freshness === 'fresh') expect(consensus.best_bid).toBe(csmarket.bid);
    expect(consensus.spread === null || /^-?\d+\.\d{4}$/.test(consensus.spread)).toBe(true);

    // The keyless item and list, once a snapshot holds all ten.
    const listed = await eventually(
      async () => {
        const response = await fetch(`${apiUrl}/v1/prices/${encodeURIComponent(item!.market_hash_name)}`);
        if (response.status !== 200) return undefined;
        const body = (await response.json()) as { versions: { version: string; sources: Record<string, { bid?: string }>; consensus: Consensus | null }[] };
        const defaults = body.versions.find((entry) => entry.version === 'default');
        return defaults && Object.keys(defaults.sources).length === SOURCE_NAMES.length ? defaults : undefined;
      },
      60_000,
      500,
    );
    expect(Object.keys(listed.sources)).toEqual([...SOURCE_NAMES].sort());
    expect(listed.sources.csmarket!.bid).toMatch(/^\d+(\.\d+)?$/);
    expect(listed.consensus).toMatchObject({ outliers: [] });
    const list = await fetch(`${apiUrl}/v1/prices?source=bitskins`);
    expect(list.status).toBe(200);
    const filtered = (await list.json()) as { source: string; items: { sources: Record<string, unknown>; consensus: Consensus | null }[] };
    expect(filtered.source).toBe('bitskins');
    expect(filtered.items.length).toBeGreaterThan(1_000);
    expect(filtered.items.every((entry) => Object.keys(entry.sources).every((name) => name === 'bitskins'))).toBe(true);
  }, 200_000);

  test("a new marketplace's index links run to run and anyone can recompute it", async () => {
    const headers = { 'x-api-key': apiKey };
    type Calculation = { id: string; level: string; previous_level: string | null; link_factor: string | null; constituent_count: number; inception: boolean };
    const calculation = await eventually(
      async () => {
        const response = await fetch(`${apiUrl}/v2/market-index/cs2?marketplace=csmarket`, { headers });
        if (response.status !== 200) return undefined;
        const body = (await response.json()) as Calculation;
        return body.inception ? undefined : body;
      },
      90_000,
      500,
    );
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
  }, 120_000);

  test('a source failing every way changes none of its stored prices, and every other source stays fresh', async () => {
    const stored = () => sql<{ catalog_id: string; version: string; price: string }[]>`
      select catalog_id, version, price::text as price from latest_prices where source = 'csdeals' order by catalog_id, version`;
    const failedRunAfter = (since: Date) =>
      eventually(
        async () => {
          const [found] = await sql<{ error: string }[]>`
          select error from ingest_runs where source = 'csdeals' and status = 'failed' and started_at > ${since} limit 1`;
          return found;
        },
        60_000,
        250,
      );
    // One failing mode after another, never `ok` between them: once a run has failed, no successful
    // run can land until the end. (Truncated JSON, stalls and partial bodies per adapter: test/sources/sources.test.ts.)
    try {
      await control('csdeals', 'fail');
      await failedRunAfter(new Date());
      const before = await stored();
      expect(before.length).toBeGreaterThan(1_000);
      for (const mode of ['wrong_types', 'rate_limit']) {
        await control('csdeals', mode);
        const failed = await failedRunAfter(new Date());
        expect([mode, failed.error]).toEqual([mode, expect.any(String)]);
        expect((await fetch(`${apiUrl}/v1/prices?source=csdeals`)).status).toBe(200);
      }
      expect(await stored()).toEqual(before);
    } finally {
      await control('csdeals', 'ok');
    }
    const report = await health();
    for (const name of SOURCE_NAMES.filter((name) => name !== 'csdeals')) expect([name, report.body.sources[name]!.status]).toEqual([name, 'fresh']);
  }, 150_000);
});
