import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Redis } from 'ioredis';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { createRequestRedis } from '../../shared/platform/redis.ts';
import type { SourceName } from '../../shared/platform/source-names.ts';
import { ageSeconds, freshPriceSql, observedAtSql, priceIsFresh, sourceState } from '../../shared/prices/freshness.ts';
import { findNewestPriceSnapshot } from '../../shared/prices/repository.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { requestBudgetKeys } from '../../shared/sources/budget.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { sourceSettings } from '../../shared/sources/settings.ts';
import { type IngestOutcome, runSourceIngest } from '../../workers/ingest/run.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, eventually, scratchTestApp, seedFreshFxRates, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

/**
 * One freshness rule (issue 29, docs/design.md §9 and §13, shared/prices/freshness.ts): a source is fresh while
 * its last success is at most its threshold old; a price is fresh iff its source is fresh and it was
 * observed (never later than we read it) at most the threshold ago; ages in whole seconds. The unit tests hold the rule and
 * its SQL form to each other; the regression replays the check from outside that found GET /health
 * and GET /v2/prices/{id} disagreeing.
 */

const S = 1000;

describe('the rule', () => {
  const now = Date.parse('2031-05-05T12:00:00.000Z');
  const source = (lastSuccessMs: number | null, staleAfterSeconds = 30) => ({ lastSuccessMs, staleAfterSeconds });

  test('a source is fresh while its last success is at most the threshold old in whole seconds', () => {
    expect(sourceState(source(null), now)).toBe('never_succeeded');
    expect(sourceState(source(now - 30 * S), now)).toBe('fresh');
    // 30.999 s is 30 whole seconds: fresh; 31 s is stale.
    expect(sourceState(source(now - 31 * S + 1), now)).toBe('fresh');
    expect(sourceState(source(now - 31 * S), now)).toBe('stale');
    expect(sourceState(source(now + 5 * S), now)).toBe('fresh');
  });

  test('a price is fresh only while its source is fresh, and only while it is at most the threshold old', () => {
    // Observed just now, but the source's last success is 31 s old: stale (the source is).
    expect(priceIsFresh(now, source(now - 31 * S), now)).toBe(false);
    // The source succeeded just now, the price was observed 31 s ago: stale (the price is).
    expect(priceIsFresh(now - 31 * S, source(now), now)).toBe(false);
    expect(priceIsFresh(now - 31 * S + 1, source(now), now)).toBe(true);
    // Never succeeded: never fresh, however young the price.
    expect(priceIsFresh(now, source(null), now)).toBe(false);
    // At each boundary a price read at its source's last success says what the source says.
    for (const age of [0, 29_999, 30_000, 30_500, 30_999, 31_000, 31_001]) {
      expect([age, priceIsFresh(now - age, source(now - age), now)]).toEqual([age, sourceState(source(now - age), now) === 'fresh']);
      // And what its age_seconds says against the threshold.
      expect([age, priceIsFresh(now - age, source(now - age), now)]).toEqual([age, ageSeconds(now - age, now) <= 30]);
    }
  });

  test('age_seconds: whole seconds since the price was observed, 0 when that is ahead of now', () => {
    expect(ageSeconds(now - 30_999, now)).toBe(30);
    expect(ageSeconds(now - 31 * S, now)).toBe(31);
    expect(ageSeconds(now + 120 * S, now)).toBe(0);
  });
});

let t: TestApp;
let cached: TestApp | undefined;
let simulator: MarketSimulator;
let redis: Redis;
let keyHeaders: Record<string, string> = {};
let akId = '';
const queuePrefix = `freshness${process.pid}`;
const hanging: Promise<IngestOutcome>[] = [];
let config: Record<string, string> = {};

const MARKETPLACES = ['csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals'] as const satisfies readonly SourceName[];
const FAILING = ['csmarket', 'waxpeer', 'bitskins'] as const;
const HEALTHY = ['lisskins', 'whitemarket', 'csdeals'] as const;
const AK = 'AK-47 | Redline (Field-Tested)';
// csmarket's upstream clock runs two minutes ahead of ours (its `time` is believed up to 5 minutes ahead).
const UPSTREAM_AHEAD_MS = 120 * S;
// Started on whole seconds near the wall clock: Retry-After blocks live in Redis, timed by its clock.
const clock = testClock(new Date(Math.floor(Date.now() / S) * S));

beforeAll(async () => {
  simulator = startMarketSimulator({
    items: [{ market_hash_name: AK, phases: [] }],
    prices: {
      [AK]: {
        default: {
          price: '30.00',
          bid: '29.000',
          sources: { csmarket: '29.50', lisskins: '30.10', waxpeer: '29.80', whitemarket: '30.40', bitskins: '29.90', csdeals: '30.20' },
        },
      },
    },
    now: () => new Date(clock.now().getTime() + UPSTREAM_AHEAD_MS),
  });
  // As in the check from outside: every marketplace every 10 s, stale after 30 s.
  config = { SOURCES: MARKETPLACES.join(','), QUEUE_PREFIX: queuePrefix };
  for (const name of MARKETPLACES) {
    const upper = name.toUpperCase();
    config[`SOURCE_${upper}_URL`] = `${simulator.url}/${name}`;
    config[`SOURCE_${upper}_INTERVAL_SECONDS`] = '10';
    config[`SOURCE_${upper}_STALE_SECONDS`] = '30';
  }
  t = await scratchTestApp({ tag: 'freshness', now: clock.now, config });
  const catalog = generateCatalog().filter((item) => item.market_hash_name === AK);
  await syncCatalog(t.deps.sql, catalog);
  akId = catalog[0]!.catalog_id;
  ({ keyHeaders } = await workspaceWithKey(t, { scopes: ['prices:read', 'market:read'], tier: 'enterprise' }));
  redis = createRequestRedis(t.deps.config.REDIS_URL, 'freshness-test');
  await eventually(async () => (redis.status === 'ready' ? true : undefined));
}, 60_000);

afterAll(async () => {
  // Stopping the simulator answers the hanging bitskins request: its run fails and is recorded.
  await simulator?.stop();
  await Promise.all(hanging);
  await cached?.close();
  for (const key of (await redis?.keys(`${queuePrefix}*`)) ?? []) await redis.del(key);
  redis?.disconnect();
  await t?.close();
});

const ingest = (name: (typeof MARKETPLACES)[number]) =>
  runSourceIngest({ sql: t.deps.sql, redis, config: t.deps.config, log: t.deps.log, now: clock.now }, ADAPTERS[name], clock.now());

type HealthBody = { status: string; sources: Record<string, { status: string }> };
type SourceEntry = { source: string; freshness: 'fresh' | 'stale'; age_seconds: number; bid: string | null };
type Consensus = { price: string; best_ask: string; best_bid: string | null; sources: number; outliers: string[]; spread: string | null };
type ItemBody = { versions: { version: string; consensus: Consensus | null; sources: SourceEntry[] }[] };

/** GET /health, GET /v2/status and GET /v2/prices/{id}, one after the other at the clock's instant. */
async function readAll() {
  const health = await t.request('/health');
  const status = (await (await t.request('/v2/status')).json()) as { degraded: string[]; components: { sources: Record<string, { status: string }> } };
  const prices = await t.request(`/v2/prices/${akId}`, { headers: keyHeaders });
  expect(prices.status).toBe(200);
  const text = await prices.text();
  return { healthStatus: health.status, health: (await health.json()) as HealthBody, status, pricesText: text, prices: JSON.parse(text) as ItemBody };
}

const said = <T>(pick: (name: (typeof MARKETPLACES)[number]) => T) => Object.fromEntries(MARKETPLACES.map((name) => [name, pick(name)]));

/**
 * Everything that says "fresh", read at the clock's instant: asserts that each says the same of
 * every marketplace (GET /health, GET /v2/status, the price entries, the consensus, the keyed price
 * cache, a keyless list built now, the market summary's fresh_only) and returns what they said.
 */
async function agreeAt() {
  const read = await readAll();
  const states = said((name) => read.health.sources[name]!.status);
  expect(said((name) => read.status.components.sources[name]!.status)).toEqual(states);
  const stalePaths = MARKETPLACES.filter((name) => states[name] !== 'fresh').map((name) => `sources.${name}`);
  expect(read.status.degraded.filter((path) => path.startsWith('sources.')).sort()).toEqual(stalePaths.sort());
  expect(read.healthStatus).toBe(stalePaths.length === 0 ? 200 : 503);

  const [version] = read.prices.versions;
  const entries = new Map(version!.sources.map((entry) => [entry.source, entry]));
  // Each price entry says what /health says of its source, and agrees with its own age.
  expect(said((name): string => entries.get(name)!.freshness)).toEqual(states);
  for (const entry of version!.sources) expect([entry.source, entry.freshness]).toEqual([entry.source, entry.age_seconds <= 30 ? 'fresh' : 'stale']);
  // The consensus counts exactly the fresh sources (no outliers among these prices).
  expect(version!.consensus?.sources ?? 0).toBe(MARKETPLACES.filter((name) => states[name] === 'fresh').length);

  // The per-process price cache (PRICE_CACHE_MS, as `npm start` runs) decides per request too.
  cached ??= createTestApp({ now: clock.now, config: { ...config, DATABASE_URL: t.deps.config.DATABASE_URL, PRICE_CACHE_MS: '60000' } });
  const viaCache = await cached.request(`/v2/prices/${akId}`, { headers: keyHeaders });
  expect(await viaCache.text()).toBe(read.pricesText);

  // A keyless list built at this instant (docs/design.md §13: decided as of its build) says the same.
  await buildPriceSnapshot(t.deps.sql, clock.now());
  const snapshot = await findNewestPriceSnapshot(t.deps.sql);
  const list = JSON.parse(Buffer.from(snapshot!.body).toString('utf8')) as { items: { catalog_id: string; consensus: Consensus | null }[] };
  expect(list.items.find((entry) => entry.catalog_id === akId)!.consensus).toEqual(version!.consensus);

  // The market summary's fresh_only counts the same prices.
  const summary = await t.request('/v2/market/summary?fresh_only=true', { headers: keyHeaders });
  expect(summary.status).toBe(200);
  const marketplaces = ((await summary.json()) as { marketplaces: { marketplace: string; items_priced: number }[] }).marketplaces;
  const priced = new Map(marketplaces.map((entry) => [entry.marketplace, entry.items_priced]));
  expect(said((name) => priced.get(name))).toEqual(said((name) => (states[name] === 'fresh' ? 1 : 0)));

  return { healthStatus: read.healthStatus, states, ages: said((name) => entries.get(name)!.age_seconds), consensus: version!.consensus };
}

describe('GET /health and GET /v2/prices/{id} at the same instant (the check from outside)', () => {
  test('csmarket 500, waxpeer 429 with Retry-After, bitskins hanging: every place says the same at 30.5 s (fresh) and 31 s (stale)', async () => {
    await seedFreshFxRates(t.deps.sql, clock.now());
    const firstRuns = await Promise.all(MARKETPLACES.map(ingest));
    expect(firstRuns.map((outcome) => outcome.status)).toEqual(MARKETPLACES.map(() => 'succeeded'));
    // All six fresh: csmarket's ask is the best, its buy order the best bid.
    const before = await readAll();
    expect(before.healthStatus).toBe(200);
    expect(before.prices.versions[0]!.consensus).toMatchObject({ sources: 6, best_ask: '29.500', best_bid: '29.000' });

    simulator.setMode('csmarket', 'fail');
    simulator.setMode('waxpeer', 'rate_limit');
    simulator.setMode('bitskins', 'stall');
    const bitskinsAsked = simulator.requestCount('bitskins');
    for (let run = 1; run <= 3; run += 1) {
      clock.advance(10 * S);
      const outcomes = await Promise.all([ingest('csmarket'), ingest('waxpeer'), ...HEALTHY.map(ingest)]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['failed', 'failed', 'succeeded', 'succeeded', 'succeeded']);
      if (run === 1) {
        expect((outcomes[0] as { error: string }).error).toContain('500');
        expect((outcomes[1] as { error: string }).error).toMatch(/rate-limited/);
        // bitskins' upstream never answers: its run stays in flight while everything is read.
        hanging.push(ingest('bitskins'));
        await eventually(async () => (simulator.requestCount('bitskins') > bitskinsAsked ? true : undefined));
      }
    }

    // 30.5 s after the three last succeeded (the other three 0.5 s ago): 30 whole seconds, still fresh
    // everywhere. (Here GET /health said stale, to the millisecond, while the prices were fresh.)
    clock.advance(500);
    const edge = await agreeAt();
    expect(edge.healthStatus).toBe(200);
    // Ages count from when we read the price, never from csmarket's `time` ahead of ours.
    expect(edge.ages).toEqual(said((name) => ((FAILING as readonly string[]).includes(name) ? 30 : 0)));
    expect(edge.consensus).toMatchObject({ sources: 6, best_ask: '29.500', best_bid: '29.000' });

    // 31 s: the three are stale in /health, /v2/status, their price entries, the consensus, the keyless
    // list and the summary alike. (Here csmarket's price stayed fresh: its upstream time is ahead.)
    clock.advance(500);
    const stale = await agreeAt();
    expect(stale.healthStatus).toBe(503);
    expect(stale.states).toEqual(said((name) => ((FAILING as readonly string[]).includes(name) ? 'stale' : 'fresh')));
    expect(stale.ages).toEqual(said((name) => ((FAILING as readonly string[]).includes(name) ? 31 : 1)));
    expect(stale.consensus).toEqual({ price: '30.20', best_ask: '30.10', best_bid: null, sources: 3, outliers: [], spread: null });

    // Half a minute on, csmarket's upstream `time` still ahead of us: the same.
    for (let run = 0; run < 3; run += 1) {
      clock.advance(10 * S);
      await Promise.all([ingest('csmarket'), ingest('waxpeer'), ...HEALTHY.map(ingest)]);
    }
    // The runs are seen by the cached process as their announcement (or its check within PRICE_CACHE_MS) would.
    cached!.deps.priceRuns!.changed();
    const later = await agreeAt();
    expect(later.states).toEqual(stale.states);
    expect(later.consensus).toEqual(stale.consensus);
  }, 60_000);
});

describe('the SQL form decides as the TypeScript one', () => {
  test('observed time and freshness agree on every boundary', async () => {
    const now = Date.parse('2031-05-05T12:00:00.000Z');
    const threshold = 30;
    const times = {
      lastSuccess: [null, now - 30 * S, now - 30 * S - 1, now - 29 * S, now + 5 * S],
      sourceTime: [now - 30 * S, now - 30 * S - 1, now - 40 * S, now + 120 * S],
      ingestedAt: [now - 30 * S, now - 31 * S, now - 10 * S],
      listedAt: [null, now - 5 * S, now - 30 * S - 1],
    };
    const sql = t.deps.sql;
    let cases = 0;
    for (const lastSuccess of times.lastSuccess) {
      for (const sourceTime of times.sourceTime) {
        for (const ingestedAt of times.ingestedAt) {
          for (const listedAt of times.listedAt) {
            for (const listed of [true, false]) {
              // The rule: min(source_time, ingested_at), or the source's last listing for a row it still lists.
              const read = Math.min(sourceTime, ingestedAt);
              const observed = listed && listedAt !== null ? Math.max(read, listedAt) : read;
              const expected = priceIsFresh(observed, { lastSuccessMs: lastSuccess, staleAfterSeconds: threshold }, now);
              const date = (ms: number | null) => (ms === null ? null : new Date(ms));
              const [row] = await sql<{ observed_at: Date; fresh: boolean }[]>`
                select ${observedAtSql(sql)} as observed_at, ${freshPriceSql(sql, new Date(now))} as fresh
                from (select ${date(sourceTime)}::timestamptz as source_time, ${date(ingestedAt)}::timestamptz as ingested_at, ${listed}::boolean as listed) p,
                     (select ${date(listedAt)}::timestamptz as listed_at, ${date(lastSuccess)}::timestamptz as last_success_at, ${threshold}::int as stale_after_seconds) s`;
              const label = { lastSuccess, sourceTime, ingestedAt, listedAt, listed };
              expect([label, row!.observed_at.getTime(), row!.fresh]).toEqual([label, observed, expected]);
              cases += 1;
            }
          }
        }
      }
    }
    expect(cases).toBe(360);
  });
});

describe('a run clock far from the wall clock', () => {
  test('an upstream 429 blocks the source for its Retry-After, not for the distance between the clocks', async () => {
    const keys = requestBudgetKeys(sourceSettings(t.deps.config, ADAPTERS.waxpeer).budget.keyPrefix, 'waxpeer');
    await redis.del(keys.blocked);
    simulator.setMode('waxpeer', 'rate_limit');
    simulator.setRetryAfter('30');
    try {
      // A year ahead: the block's end is computed on this clock and held in Redis as a duration.
      const future = new Date(Date.now() + 365 * 86_400 * S);
      const outcome = await runSourceIngest({ sql: t.deps.sql, redis, config: t.deps.config, log: t.deps.log, now: () => future }, ADAPTERS.waxpeer, future);
      expect(outcome.status).toBe('failed');
      const blockedMs = await redis.pttl(keys.blocked);
      expect(blockedMs).toBeGreaterThan(25 * S);
      expect(blockedMs).toBeLessThanOrEqual(30 * S);
    } finally {
      simulator.setMode('waxpeer', 'ok');
      await redis.del(keys.blocked);
    }
  });
});
