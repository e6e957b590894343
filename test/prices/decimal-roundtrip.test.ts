import { afterAll, beforeAll, expect, test } from 'bun:test';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { createRequestRedis } from '../../shared/platform/redis.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { requestBudgetKeys, sourceBudgetPrefix } from '../../shared/sources/budget.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { runSourceIngest } from '../../workers/ingest/run.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { createTestApp, eventually, testConfig, workspaceWithKey } from '../helpers.ts';

// Property: any decimal price the upstream writes comes out of the API as the same string —
// upstream JSON → adapter → Postgres numeric → /v2/prices and /v1/prices — never through a float.
const t = createTestApp();
let simulator: MarketSimulator;
const expected = new Map<string, { catalogId: string; price: string }>();

function randomDecimal(): string {
  const magnitude = Math.floor(Math.random() * 6);
  const integer = magnitude === 0 ? '0' : String(Math.floor(Math.random() * 10 ** magnitude) + 10 ** (magnitude - 1)).slice(0, magnitude);
  const decimals = Math.floor(Math.random() * 3);
  const fraction = Array.from({ length: decimals }, () => Math.floor(Math.random() * 10)).join('');
  const text = decimals === 0 ? integer : `${integer}.${fraction}`;
  // Prices are positive; "0", "0.0" and "0.00" are not prices.
  return /^0(\.0*)?$/.test(text) ? '0.01' : text;
}

beforeAll(async () => {
  const catalog = generateCatalog();
  await syncCatalog(t.deps.sql, catalog);
  const sample = catalog.filter((_, index) => index % 181 === 7).slice(0, 200);
  const prices: Record<string, Record<string, string>> = {};
  for (const item of sample) {
    const price = randomDecimal();
    prices[item.market_hash_name] = { default: price };
    expected.set(item.market_hash_name, { catalogId: item.catalog_id, price });
  }
  // A clock ahead of any other suite's runs, so no stored observation is newer than these.
  simulator = startMarketSimulator({
    items: sample.map((item) => ({ market_hash_name: item.market_hash_name, phases: [] })),
    prices,
    now: () => new Date('2031-01-01T00:00:00Z'),
  });
});

afterAll(async () => {
  await t.deps.sql`delete from latest_prices where source = 'skinport' and catalog_id in ${t.deps.sql([...expected.values()].map((entry) => entry.catalogId))}`;
  await simulator.stop();
  await t.close();
});

test('random decimal strings survive ingest and come out of both price APIs unchanged', async () => {
  // Its own QUEUE_PREFIX: the request budget and any Retry-After block live in Redis under it, so no
  // other suite's skinport runs (or a 429 they provoked) can refuse this run.
  const config = testConfig({
    SOURCES: 'skinport',
    SOURCE_SKINPORT_URL: `${simulator.url}/skinport`,
    QUEUE_PREFIX: `roundtrip${crypto.randomUUID().slice(0, 8)}`,
  });
  const budgetKeys = requestBudgetKeys(sourceBudgetPrefix(config.QUEUE_PREFIX), 'skinport');
  const redis = createRequestRedis(config.REDIS_URL, 'roundtrip');
  try {
    // A request connection has no offline queue: a command before it is ready fails at once.
    await eventually(async () => (redis.status === 'ready' ? true : undefined));
    const outcome = await runSourceIngest(
      { sql: t.deps.sql, redis, config, log: t.deps.log, now: () => new Date() },
      ADAPTERS.skinport,
      new Date(Date.UTC(2031, 0, 1) + Math.floor(Math.random() * 1e9)),
    );
    expect(outcome).toMatchObject({ status: 'succeeded' });
    // The run's one upstream request was admitted by the budget under this QUEUE_PREFIX.
    expect(await redis.zcard(budgetKeys.window)).toBe(1);
    await buildPriceSnapshot(t.deps.sql, new Date());
  } finally {
    await redis.del(budgetKeys.window, budgetKeys.blocked).catch((error: Error) => t.deps.log.warn({ err: error.message }, 'could not remove the budget keys'));
    redis.disconnect();
  }

  const ws = await workspaceWithKey(t, { scopes: ['prices:read'], tier: 'pro' });
  for (const [name, { catalogId, price }] of expected) {
    const keyed = await t.request(`/v2/prices/${catalogId}`, { headers: ws.keyHeaders });
    expect(keyed.status).toBe(200);
    const body = (await keyed.json()) as { versions: { version: string; sources: { source: string; price: string }[] }[] };
    const skinport = body.versions.find((version) => version.version === 'default')?.sources.find((source) => source.source === 'skinport');
    expect({ name, price: skinport?.price }).toEqual({ name, price });
  }

  // The API process picks the new snapshot up within its poll interval.
  const [name, { price }] = [...expected][0]!;
  await eventually(
    async () => {
      const response = await t.request(`/v1/prices/${encodeURIComponent(name)}`, { headers: { 'x-forwarded-for': '203.0.113.250' } });
      return response.status === 200 && (await response.text()).includes(`"${price}"`) ? true : undefined;
    },
    15_000,
    250,
  );
  const keyless = await t.request('/v1/prices?source=skinport', { headers: { 'x-forwarded-for': '203.0.113.251' } });
  expect(keyless.status).toBe(200);
  const text = await keyless.text();
  for (const entry of expected.values()) expect(text).toContain(`"${entry.price}"`);
  // A snapshot of the whole shared database (every suite's prices) and a wait of up to 15 s above.
}, 30_000);
