import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import type { CatalogItem } from '../../shared/catalog/identity.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { calculateMarketIndex } from '../../shared/market-index/calculate.ts';
import { claimIngestRun, writeIngestRun } from '../../shared/prices/ingest.ts';
import { errorOf, scratchTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { referenceLink } from './index-reference.ts';

// The index reads every latest price of a marketplace, so this suite has a database of its own.
// Runs are written through the real ingest write path (writeIngestRun) and calculated by the real
// index calculation; the API is then read like a client would.
const STALE_AFTER_SECONDS = 300;
const T0 = new Date('2026-03-02T12:00:00.000Z');
const minutes = (count: number) => new Date(T0.getTime() + count * 60_000);
const clock = testClock(minutes(25));

let t: TestApp;
let key = '';
let slot = 0;
const catalog = generateCatalog();
const ak = catalog.filter((item) => item.weapon === 'AK-47' && !item.stattrak && !item.souvenir).slice(0, 40);
const m4 = catalog.filter((item) => item.weapon === 'M4A4' && !item.stattrak && !item.souvenir).slice(0, 30);
const stickers = catalog.filter((item) => item.type === 'sticker').slice(0, 20);
const knives = catalog.filter((item) => item.type === 'knife' && item.phases.length === 0).slice(0, 5);
const items = [...ak, ...m4, ...stickers, ...knives];

type Priced = { item: CatalogItem; price: string };

async function ingest(source: string, at: Date, prices: Priced[]): Promise<void> {
  const runId = (await claimIngestRun(t.deps.sql, source, (slot += 1), at))!;
  await writeIngestRun(t.deps.sql, {
    runId,
    source,
    rows: prices.map(({ item, price }) => ({ catalog_id: item.catalog_id, version: 'default', price, median_price: null, quantity: 1, source_time: at })),
    ingestedAt: at,
    staleAfterSeconds: STALE_AFTER_SECONDS,
    received: prices.length,
    skipped: 0,
    unknownNames: 0,
  });
}

const calculate = (marketplace: string) => calculateMarketIndex(t.deps.sql, { marketplace, now: clock.now });

/** Cents as a decimal string with two places. */
const cents = (value: number) => (value / 100).toFixed(2);
const priceAt = (index: number, run: number) => cents(1_000 + index * 37 + run * ((index % 5) - 2) * 11);

type CalculationBody = {
  id: string;
  level: string;
  previous_level: string | null;
  link_factor: string | null;
  constituent_count: number;
  inception: boolean;
  segment: string | null;
  value: string | null;
  as_of: string;
  previous_calculation_id: string | null;
  links: { constituents: string; previous_constituents: string | null; history: string };
};
type ConstituentBody = {
  catalog_id: string;
  market_hash_name: string;
  version: string;
  previous_price: string | null;
  current_price: string;
  ratio: string | null;
};

const get = (path: string, apiKey: string | null = key) => t.request(path, { headers: apiKey ? { 'x-api-key': apiKey } : {} });

async function latest(query: string): Promise<CalculationBody> {
  const response = await get(`/v2/market-index/cs2?${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as CalculationBody;
}

async function allConstituents(calculationId: string, limit = 7): Promise<ConstituentBody[]> {
  const all: ConstituentBody[] = [];
  let cursor: string | null = null;
  do {
    const response = await get(
      `/v2/market-index/cs2/calculations/${calculationId}/constituents?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(response.status).toBe(200);
    const page = (await response.json()) as { data: ConstituentBody[]; next_cursor: string | null };
    expect(page.data.length).toBeLessThanOrEqual(limit);
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'mindex', now: clock.now });
  await syncCatalog(t.deps.sql, items);
  key = (await workspaceWithKey(t, { scopes: ['market:read'], tier: 'enterprise' })).key;

  // Run 1 (t0): AK-47s, M4A4s and stickers. Every segment starts at 1000.
  await ingest(
    'skinport',
    minutes(0),
    [...ak, ...m4, ...stickers].map((item, index) => ({ item, price: priceAt(index, 0) })),
  );
  await calculate('skinport');
  // Run 2 (t0 + 10 min): half the stickers are missing (stale by now), the knives are new.
  await ingest('skinport', minutes(10), [
    ...[...ak, ...m4].map((item, index) => ({ item, price: priceAt(index, 1) })),
    ...stickers.slice(0, 10).map((item, index) => ({ item, price: priceAt(ak.length + m4.length + index, 1) })),
    ...knives.map((item, index) => ({ item, price: cents(50_000 + index) })),
  ]);
  await calculate('skinport');
  // Run 3 (t0 + 20 min): every M4A4 is missing; the rest moves again.
  await ingest('skinport', minutes(20), [
    ...ak.map((item, index) => ({ item, price: priceAt(index, 2) })),
    ...stickers.map((item, index) => ({ item, price: priceAt(ak.length + m4.length + index, 2) })),
    ...knives.map((item, index) => ({ item, price: cents(51_000 + index * 3) })),
  ]);
  await calculate('skinport');
});

afterAll(async () => {
  await t?.close();
});

describe('market index calculation', () => {
  test('the series starts at 1000 (inception) and each later level is recomputable from its published constituents', async () => {
    const response = await get(`/v2/market-index/cs2/history?marketplace=skinport&from=${minutes(-1).toISOString()}&to=${minutes(30).toISOString()}`);
    expect(response.status).toBe(200);
    const history = (await response.json()) as {
      data: { calculation_id: string; level: string; inception: boolean; constituent_count: number; as_of: string }[];
    };
    expect(history.data.map((point) => point.as_of)).toEqual([minutes(0), minutes(10), minutes(20)].map((at) => at.toISOString()));
    expect(history.data[0]).toMatchObject({ level: '1000.000000000000', inception: true, constituent_count: 90 });

    let previousLevel = history.data[0]!.level;
    for (const point of history.data.slice(1)) {
      const constituents = await allConstituents(point.calculation_id);
      expect(constituents.length).toBe(point.constituent_count);
      const recomputed = referenceLink(
        previousLevel,
        constituents.map((c) => ({ previous: c.previous_price!, current: c.current_price })),
      );
      expect(point.level).toBe(recomputed.level);
      previousLevel = point.level;
    }
  });

  test('constituents are the items priced fresh at both t-1 and t: new and missing items are excluded', async () => {
    const history = (await (
      await get(`/v2/market-index/cs2/history?marketplace=skinport&from=${minutes(-1).toISOString()}&to=${minutes(30).toISOString()}`)
    ).json()) as {
      data: { calculation_id: string }[];
    };
    const second = await allConstituents(history.data[1]!.calculation_id, 1000);
    // Run 2: AK-47s, M4A4s and the 10 stickers priced in both runs; not the new knives nor the stale stickers.
    expect(new Set(second.map((c) => c.catalog_id))).toEqual(new Set([...ak, ...m4, ...stickers.slice(0, 10)].map((item) => item.catalog_id)));
    const third = await allConstituents(history.data[2]!.calculation_id, 1000);
    // Run 3: AK-47s, the 10 stickers of run 2 and the knives (priced in runs 2 and 3); not the M4A4s.
    expect(new Set(third.map((c) => c.catalog_id))).toEqual(new Set([...ak, ...stickers.slice(0, 10), ...knives].map((item) => item.catalog_id)));
    const first = third.find((c) => c.catalog_id === ak[0]!.catalog_id)!;
    expect(first).toMatchObject({ previous_price: priceAt(0, 1), current_price: priceAt(0, 2), market_hash_name: ak[0]!.market_hash_name });
    expect(first.ratio).toMatch(/^\d+\.\d{12}$/);
  });

  test('segments are calculated for every value present; a new segment starts at 1000 when it first has prices', async () => {
    const weapon = await latest('marketplace=skinport&segment=weapon&value=AK-47');
    expect(weapon).toMatchObject({ segment: 'weapon', value: 'AK-47', inception: false, constituent_count: ak.length, as_of: minutes(20).toISOString() });
    const knife = await latest('marketplace=skinport&segment=type&value=knife');
    // Knives first appeared in run 2: inception there; run 3 links to it.
    expect(knife).toMatchObject({ inception: false, previous_level: '1000.000000000000', constituent_count: knives.length });
    const knifeInception = (await allConstituents(knife.previous_calculation_id!, 1000)).map((c) => c.previous_price);
    expect(knifeInception).toEqual(knives.map(() => null));
    const market = await latest('marketplace=skinport');
    expect(market.segment).toBeNull();
    expect(market.links.constituents).toBe(`/v2/market-index/cs2/calculations/${market.id}/constituents`);
    const recomputed = referenceLink(
      market.previous_level!,
      (await allConstituents(market.id, 1000)).map((c) => ({ previous: c.previous_price!, current: c.current_price })),
    );
    expect({ link: market.link_factor, level: market.level }).toEqual(recomputed);
  });

  test('a segment without constituents is recorded as failed and never replaces the latest success', async () => {
    const m4Latest = await latest('marketplace=skinport&segment=weapon&value=M4A4');
    expect(m4Latest.as_of).toBe(minutes(10).toISOString());
    const [failed] = await t.deps.sql<{ status: string; failure_reason: string; constituent_count: number; as_of: Date }[]>`
      select status, failure_reason, constituent_count, as_of from market_index_calculations
      where marketplace = 'skinport' and segment = 'weapon' and value = 'M4A4' and status = 'failed'`;
    expect(failed).toMatchObject({ status: 'failed', constituent_count: 0, as_of: minutes(20) });
    expect(failed!.failure_reason).toContain('no constituents');
    // The failed calculation is not published.
    const [failedId] = await t.deps.sql<{ id: string }[]>`select id from market_index_calculations where status = 'failed' limit 1`;
    expect((await get(`/v2/market-index/cs2/calculations/${failedId!.id}/constituents`)).status).toBe(404);
  });

  test('a second job for the same ingest run is a no-op', async () => {
    const before = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from market_index_runs`;
    expect(await calculate('skinport')).toEqual({ status: 'skipped', reason: 'this ingest run is already calculated' });
    expect(await calculate('csfloat')).toEqual({ status: 'skipped', reason: 'the marketplace has no successful ingest run' });
    const after = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from market_index_runs`;
    expect(after).toEqual(before);
  });
});

describe('GET /v2/market-index/cs2 and friends', () => {
  test('200 with the inputs to reproduce the level; methodology defaults to the only one', async () => {
    const body = await latest('marketplace=skinport&methodology=cs2.chain-equal-weight.v1');
    expect(body).toMatchObject({ methodology: 'cs2.chain-equal-weight.v1', marketplace: 'skinport', segment: null, value: null, inception: false });
    expect(body.level).toMatch(/^\d+\.\d{12}$/);
    expect(body.links.history).toBe('/v2/market-index/cs2/history?marketplace=skinport&methodology=cs2.chain-equal-weight.v1');
    expect(body.links.previous_constituents).toBe(`/v2/market-index/cs2/calculations/${body.previous_calculation_id}/constituents`);
  });

  test.each([
    ['', 'query.marketplace'],
    ['marketplace=buff163', 'query.marketplace'],
    ['marketplace=skinport&segment=weapon', 'query.value'],
    ['marketplace=skinport&value=AK-47', 'query.value'],
    ['marketplace=skinport&segment=colour&value=red', 'query.segment'],
    ['marketplace=skinport&segment=weapon&value=AK-48', 'query.value'],
    ['marketplace=skinport&segment=type&value=Knife', 'query.value'],
    ['marketplace=skinport&methodology=cs2.cap-weighted.v1', 'query.methodology'],
    ['marketplace=skinport&extra=1', 'query'],
  ])('400 for %p', async (query, field) => {
    const response = await get(`/v2/market-index/cs2?${query}`);
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.details?.map((detail) => detail.field).join(' ')).toContain(field);
  });

  test('401 without a key, 403 without market:read, 404 when no calculation matches', async () => {
    expect((await get('/v2/market-index/cs2?marketplace=skinport', null)).status).toBe(401);
    const other = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const forbidden = await get('/v2/market-index/cs2?marketplace=skinport', other.key);
    expect(forbidden.status).toBe(403);
    expect((await errorOf(forbidden)).code).toBe('insufficient_scope');
    for (const path of [
      '/v2/market-index/cs2?marketplace=csfloat',
      '/v2/market-index/cs2?marketplace=skinport&segment=type&value=agent',
      '/v2/market-index/cs2/calculations/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/constituents',
    ]) {
      const response = await get(path);
      expect(response.status).toBe(404);
      expect((await errorOf(response)).code).toBe('not_found');
    }
    expect((await get('/v2/market-index/cs2/history?marketplace=skinport', null)).status).toBe(401);
    expect((await get('/v2/market-index/cs2/history?marketplace=skinport', other.key)).status).toBe(403);
    const market = await latest('marketplace=skinport');
    expect((await get(`/v2/market-index/cs2/calculations/${market.id}/constituents`, null)).status).toBe(401);
    expect((await get(`/v2/market-index/cs2/calculations/${market.id}/constituents`, other.key)).status).toBe(403);
  });

  test('constituents: 400 for a malformed id, a bad limit or a cursor of another calculation; pages neither skip nor repeat', async () => {
    expect((await get('/v2/market-index/cs2/calculations/not-a-uuid/constituents')).status).toBe(400);
    expect((await get('/v2/market-index/cs2/calculations/not-a-uuid/constituents', null)).status).toBe(400);
    const market = await latest('marketplace=skinport');
    for (const limit of ['0', '1001', 'x']) expect((await get(`/v2/market-index/cs2/calculations/${market.id}/constituents?limit=${limit}`)).status).toBe(400);
    const page = (await (await get(`/v2/market-index/cs2/calculations/${market.id}/constituents?limit=2`)).json()) as { next_cursor: string };
    const weapon = await latest('marketplace=skinport&segment=weapon&value=AK-47');
    const crossed = await get(`/v2/market-index/cs2/calculations/${weapon.id}/constituents?cursor=${encodeURIComponent(page.next_cursor)}`);
    expect(crossed.status).toBe(400);
    expect((await errorOf(crossed)).code).toBe('invalid_cursor');
    // A cursor is bound to the workspace too.
    const other = await workspaceWithKey(t, { scopes: ['market:read'], tier: 'enterprise' });
    expect((await get(`/v2/market-index/cs2/calculations/${market.id}/constituents?cursor=${encodeURIComponent(page.next_cursor)}`, other.key)).status).toBe(
      400,
    );
    const paged = await allConstituents(market.id, 3);
    const whole = await allConstituents(market.id, 1000);
    expect(paged).toEqual(whole);
    expect(new Set(whole.map((c) => `${c.catalog_id}/${c.version}`)).size).toBe(market.constituent_count);
  });

  test('history: oldest first, cursor pages through the same window, 400 for bad ranges and foreign cursors', async () => {
    const window = `from=${minutes(-1).toISOString()}&to=${minutes(30).toISOString()}`;
    const levels: string[] = [];
    let cursor: string | null = null;
    do {
      const response = await get(
        `/v2/market-index/cs2/history?marketplace=skinport&segment=weapon&value=AK-47&${window}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(response.status).toBe(200);
      const page = (await response.json()) as { data: { level: string }[]; next_cursor: string | null };
      levels.push(...page.data.map((point) => point.level));
      cursor = page.next_cursor;
      if (cursor) {
        const foreign = await get(`/v2/market-index/cs2/history?marketplace=skinport&segment=weapon&value=M4A4&${window}&cursor=${encodeURIComponent(cursor)}`);
        expect(foreign.status).toBe(400);
      }
    } while (cursor);
    expect(levels).toHaveLength(3);
    expect(levels[0]).toBe('1000.000000000000');
    // Default window: the 30 days before now; a window before any calculation is an empty page.
    const recent = (await (await get('/v2/market-index/cs2/history?marketplace=skinport')).json()) as { data: unknown[]; from: string; to: string };
    expect(recent.data).toHaveLength(3);
    expect(recent.to).toBe(clock.now().toISOString());
    const empty = (await (await get(`/v2/market-index/cs2/history?marketplace=skinport&to=${minutes(-5).toISOString()}`)).json()) as { data: unknown[] };
    expect(empty.data).toEqual([]);
    for (const query of [
      `from=${minutes(10).toISOString()}&to=${minutes(10).toISOString()}`,
      `from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`,
      'from=yesterday',
      'limit=0',
      'cursor=garbage',
    ]) {
      expect((await get(`/v2/market-index/cs2/history?marketplace=skinport&${query}`)).status).toBe(400);
    }
  });
});

describe('the window in which calculations are published (RETENTION_INDEX_VECTORS_DAYS)', () => {
  test('past it the latest calculation is 404 and its constituents 410 constituents_expired; its level stays in the history', async () => {
    const market = await latest('marketplace=skinport');
    const before = clock.now();
    const windowDays = t.deps.config.RETENTION_INDEX_VECTORS_DAYS;
    try {
      // Just inside the window: still published.
      clock.set(new Date(new Date(market.as_of).getTime() + windowDays * 86_400_000 - 60_000));
      expect((await get('/v2/market-index/cs2?marketplace=skinport')).status).toBe(200);
      expect((await get(`/v2/market-index/cs2/calculations/${market.id}/constituents`)).status).toBe(200);
      clock.advance(24 * 3_600_000);
      const gone = await get('/v2/market-index/cs2?marketplace=skinport');
      expect(gone.status).toBe(404);
      expect((await errorOf(gone)).message).toContain(`${windowDays} days`);
      const expired = await get(`/v2/market-index/cs2/calculations/${market.id}/constituents`);
      expect(expired.status).toBe(410);
      expect((await errorOf(expired)).code).toBe('constituents_expired');
      const history = (await (await get(`/v2/market-index/cs2/history?marketplace=skinport&from=${minutes(-1).toISOString()}`)).json()) as {
        data: { calculation_id: string }[];
      };
      expect(history.data.map((point) => point.calculation_id)).toContain(market.id);
    } finally {
      clock.set(before);
    }
  });
});

describe('property: an item missing at t or t-1 is excluded', () => {
  const pool = [...ak, ...m4].slice(0, 24);
  test('the link is the mean ratio over exactly the items priced at both runs', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            before: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null }),
            after: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null }),
          }),
          {
            minLength: pool.length,
            maxLength: pool.length,
          },
        ),
        async (plan) => {
          // A marketplace of its own per run of the property (the calculation reads all of its prices).
          run += 1;
          const source = `prop${run}`;
          const before = plan.flatMap((entry, index) => (entry.before === null ? [] : [{ item: pool[index]!, price: cents(entry.before) }]));
          const after = plan.flatMap((entry, index) => (entry.after === null ? [] : [{ item: pool[index]!, price: cents(entry.after) }]));
          await ingest(source, minutes(100), before);
          await calculate(source);
          await ingest(source, minutes(110), after);
          const outcome = await calculate(source);
          const both = plan.flatMap((entry, index) =>
            entry.before !== null && entry.after !== null ? [{ previous: cents(entry.before), current: cents(entry.after), id: pool[index]!.catalog_id }] : [],
          );
          const [market] = await t.deps.sql<{ status: string; link_factor: string | null; constituent_count: number; inception: boolean }[]>`
            select status, link_factor::text as link_factor, constituent_count, inception from market_index_calculations
            where marketplace = ${source} and segment = '' order by as_of desc limit 1`;
          if (before.length === 0 && after.length === 0) {
            expect(outcome.status).toBe('calculated');
            expect(market).toBeUndefined();
          } else if (before.length === 0) {
            expect(market).toMatchObject({ status: 'succeeded', inception: true, constituent_count: after.length });
          } else if (both.length === 0) {
            expect(market).toMatchObject({ status: 'failed', constituent_count: 0 });
          } else {
            expect(market).toMatchObject({ status: 'succeeded', inception: false, constituent_count: both.length });
            expect(market!.link_factor).toBe(referenceLink('1000.000000000000', both).link);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});
