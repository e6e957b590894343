import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { type CatalogItem, type CatalogRecord, catalogIdFor } from '../../shared/catalog/identity.ts';
import { recordUnknownNames } from '../../shared/catalog/provisional.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createRequestRedis } from '../../shared/platform/redis.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { runSourceIngest } from '../../workers/ingest/run.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { webhooksPool } from '../../workers/webhooks/index.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { eventually, scratchTestApp, type TestApp, testClock, testConfig, workspaceWithKey } from '../helpers.ts';
import { parseExposition, sampleValue } from '../metrics/prometheus.ts';
import {
  type CreatedWebhook,
  createWebhook,
  removeQueueKeys,
  retireEndpoints,
  startReceiver,
  uniquePath,
  WEBHOOK_KEY_A,
} from '../webhooks/webhooks-fixtures.ts';

/**
 * docs/design.md §19 "New items", end to end over real Postgres and Redis: the market simulator lists items
 * the catalog lacks from a given time (test/fakes/simulator/new-items.ts); ingest runs of skinport and
 * lisskins record them per source; a name seen on two sources (or on steam) that parses becomes a
 * provisional catalog item priced from the next run and announced once with `catalog.item_added`;
 * names that do not parse are counted in /metrics and listed in GET /v2/status; `catalog:sync`
 * adopts a provisional item keeping its id and prices. A scratch database of its own: the suite
 * counts the catalog's provisional items and unparsed names, which no other suite's rows may touch.
 */

const AK = 'AK-47 | Redline (Field-Tested)';
// Real market names @ianlucas/cs2-lib 7.33 lacks: a souvenir highlight package, and two that do not
// parse (a skin of a weapon no catalog knows, an operation pass).
const NEW_ITEM = 'Austin 2025 Inferno Souvenir Highlight Package';
const AMBIGUOUS = 'Cobra Knife | Fade (Factory New)';
const UNRECOGNISED = 'Operation Hydra Access Pass';
const APPEARS_AFTER_MS = 60_000;
const INTERVAL_SECONDS = 10;

const queuePrefix = `provisional${process.pid}`;
const webhookSettings = {
  WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS_MS: '0,200,200',
  WEBHOOK_TIMEOUT_MS: '2000',
  QUEUE_PREFIX: queuePrefix,
};
// On a bucket boundary, so the simulator's appearance bucket is exact.
const clock = testClock(new Date(Math.ceil(Date.now() / 30_000) * 30_000));
const appearsAt = new Date(clock.now().getTime() + APPEARS_AFTER_MS);

let t: TestApp;
let simulator: MarketSimulator;
let redis: Redis;
let pool: RunningPools | undefined;
const receiver = startReceiver();
let ws: Awaited<ReturnType<typeof workspaceWithKey>>;
let hook: CreatedWebhook;
let hookPath = '';

beforeAll(async () => {
  simulator = startMarketSimulator({
    items: [{ market_hash_name: AK, phases: [] }],
    newItems: [NEW_ITEM, AMBIGUOUS, UNRECOGNISED].map((name) => ({ market_hash_name: name, phases: [], appearsAt })),
    // Pinned: listed by every source (no marketplace's absent share leaves them out).
    prices: { [AK]: { default: '30.00' }, [NEW_ITEM]: { default: '3.21' }, [AMBIGUOUS]: { default: '150.00' }, [UNRECOGNISED]: { default: '9.99' } },
    now: clock.now,
  });
  const config: Record<string, string> = { ...webhookSettings, SOURCES: 'skinport,lisskins' };
  for (const name of ['skinport', 'lisskins']) {
    config[`SOURCE_${name.toUpperCase()}_URL`] = `${simulator.url}/${name}`;
    config[`SOURCE_${name.toUpperCase()}_INTERVAL_SECONDS`] = String(INTERVAL_SECONDS);
  }
  t = await scratchTestApp({ tag: 'provisional', now: clock.now, config });
  await syncCatalog(
    t.deps.sql,
    generateCatalog().filter((item) => item.market_hash_name === AK),
  );
  redis = createRequestRedis(t.deps.config.REDIS_URL, 'provisional-items-test');
  await eventually(async () => (redis.status === 'ready' ? true : undefined));
  ws = await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write', 'catalog:read'] });
  hookPath = uniquePath('catalog-item-added');
  hook = await createWebhook(t, ws.key, { url: receiver.url(hookPath), event_types: ['catalog.item_added'] });
  pool = await startPools(
    [webhooksPool],
    testConfig({ ...webhookSettings, DATABASE_URL: t.deps.config.DATABASE_URL }),
    createLogger({ level: 'silent', name: 'provisional-items-test' }),
  );
}, 60_000);

afterAll(async () => {
  await pool?.stop(5_000);
  if (t) await retireEndpoints(t.deps.sql, [ws.workspace.id]);
  await simulator?.stop();
  await receiver.stop();
  redis?.disconnect();
  await removeQueueKeys(process.env.REDIS_URL!, queuePrefix);
  await t?.close();
});

/** One run of a source at the clock's time, then the clock moves on by an interval (the next run's slot). */
async function ingest(source: 'skinport' | 'lisskins') {
  const outcome = await runSourceIngest({ sql: t.deps.sql, redis, config: t.deps.config, log: t.deps.log, now: clock.now }, ADAPTERS[source], clock.now());
  clock.advance(INTERVAL_SECONDS * 1000);
  if (outcome.status !== 'succeeded') throw new Error(`${source} run: ${JSON.stringify(outcome)}`);
  return outcome;
}

async function catalogRow(name: string) {
  const [row] = await t.deps.sql<(CatalogRecord & { provisional: boolean })[]>`
    select catalog_id, market_hash_name, type, weapon, exterior, rarity, stattrak, souvenir, definition_index, paint_index, phases, provisional
    from catalog_items where market_hash_name = ${name}`;
  return row;
}

type ItemAdded = { id: string; type: string; data: CatalogRecord };

/** The verified catalog.item_added deliveries this suite's endpoint received for `catalogId`. */
function deliveredFor(catalogId: string): ItemAdded[] {
  return receiver
    .received(hookPath)
    .map((request) => new Webhook(hook.secret).verify(request.body, request.headers) as ItemAdded)
    .filter((event) => event.data.catalog_id === catalogId);
}

describe('new items the day they appear', () => {
  test('a name on one source waits; on a second it becomes a provisional item, priced by the next run and announced once', async () => {
    // Before its time the simulator lists none of the new names.
    expect((await ingest('skinport')).unknownNames).toBe(0);
    clock.set(new Date(appearsAt.getTime() + 1_000));
    // Skinport lists the three: recorded, but one source is not enough.
    expect((await ingest('skinport')).unknownNames).toBe(3);
    expect(await catalogRow(NEW_ITEM)).toBeUndefined();
    const sightings = await t.deps.sql<{ market_hash_name: string; source: string }[]>`
      select market_hash_name, source from unknown_item_sightings
      where market_hash_name in ${t.deps.sql([NEW_ITEM, AMBIGUOUS, UNRECOGNISED])} and source = 'skinport' order by market_hash_name`;
    expect([...sightings]).toEqual([AMBIGUOUS, UNRECOGNISED, NEW_ITEM].sort().map((name) => ({ market_hash_name: name, source: 'skinport' })));

    // Lisskins lists them too: the parseable one is added, provisional, with the generator's identity.
    const second = await ingest('lisskins');
    expect(second.unknownNames).toBe(3);
    const added = await catalogRow(NEW_ITEM);
    expect(added).toEqual({
      catalog_id: catalogIdFor(NEW_ITEM),
      market_hash_name: NEW_ITEM,
      type: 'container',
      weapon: null,
      exterior: null,
      rarity: null,
      stattrak: false,
      souvenir: false,
      definition_index: null,
      paint_index: null,
      phases: [],
      provisional: true,
    });
    // The two that do not parse are not added.
    expect(await catalogRow(AMBIGUOUS)).toBeUndefined();
    expect(await catalogRow(UNRECOGNISED)).toBeUndefined();

    // The next run prices it (the run that added it reloaded its name map).
    const next = await ingest('skinport');
    expect(next.unknownNames).toBe(2);
    const [price] = await t.deps.sql<{ price: string }[]>`
      select price::text from latest_prices where catalog_id = ${added!.catalog_id} and source = 'skinport' and version = 'default'`;
    expect(price?.price).toBe('3.21');

    // GET /v2/catalog/items shows it with `provisional: true`.
    const listed = await t.request(`/v2/catalog/items?q=${encodeURIComponent('Inferno Souvenir Highlight')}`, { headers: ws.keyHeaders });
    expect(listed.status).toBe(200);
    const page = (await listed.json()) as { data: (CatalogRecord & { image: unknown })[] };
    expect(page.data.map(({ image: _image, ...item }) => item)).toEqual([added!]);

    // Announced once, with the catalog record, however many runs see the name again.
    await ingest('lisskins');
    const [announced] = await eventually(async () => {
      const events = deliveredFor(added!.catalog_id);
      return events.length > 0 ? events : undefined;
    }, 30_000);
    expect(announced).toMatchObject({ type: 'catalog.item_added', data: added! });
    const [outbox] = await t.deps.sql<{ count: number }[]>`
      select count(*)::int as count from event_outbox where event_type = 'catalog.item_added' and payload->>'catalog_id' = ${added!.catalog_id}`;
    expect(outbox!.count).toBe(1);
    await eventually(async () => {
      const [open] = await t.deps.sql<{ count: number }[]>`
        select count(*)::int as count from webhook_deliveries where endpoint_id = ${hook.id} and state in ('pending', 'delivering')`;
      return open!.count === 0 ? true : undefined;
    }, 30_000);
    expect(deliveredFor(added!.catalog_id)).toHaveLength(1);
  }, 60_000);

  test('the names that do not parse stay counted: /metrics and GET /v2/status list them', async () => {
    // Seen on two sources here, whatever the other test did: they qualify and do not parse.
    for (const source of ['csmarket', 'waxpeer']) await recordUnknownNames(t.deps.sql, { source, names: [AMBIGUOUS, UNRECOGNISED], at: clock.now() });
    const [expected] = await t.deps.sql<{ provisional: number; unparsed: number }[]>`
      select (select count(*) from catalog_items where provisional)::int as provisional, (select count(*) from unparsed_item_names)::int as unparsed`;
    expect(expected!.unparsed).toBeGreaterThanOrEqual(2);
    const reasons = await t.deps.sql<{ market_hash_name: string; status: string }[]>`
      select market_hash_name, status from unparsed_item_names where market_hash_name in ${t.deps.sql([AMBIGUOUS, UNRECOGNISED])} order by market_hash_name`;
    expect([...reasons]).toEqual([
      { market_hash_name: AMBIGUOUS, status: 'ambiguous' },
      { market_hash_name: UNRECOGNISED, status: 'unrecognised' },
    ]);

    const status = (await (await t.request('/v2/status')).json()) as {
      components: { catalog: { status: string; provisional_items: number; unparsed_names: { count: number; names: string[] } } };
    };
    expect(status.components.catalog).toMatchObject({ status: 'ok', provisional_items: expected!.provisional, unparsed_names: { count: expected!.unparsed } });
    expect(status.components.catalog.unparsed_names.names).toEqual(expect.arrayContaining([AMBIGUOUS, UNRECOGNISED]));
    expect(status.components.catalog.unparsed_names.names.length).toBeLessThanOrEqual(20);

    const samples = parseExposition(await (await t.request('/metrics')).text());
    expect(sampleValue(samples, 'cs2_catalog_unparsed_names', {})).toBe(expected!.unparsed);
    expect(sampleValue(samples, 'cs2_catalog_provisional_items', {})).toBe(expected!.provisional);
  });

  test('steam alone is enough; one source seen twice is not; two processes adding the same name add and announce it once', async () => {
    const at = clock.now();
    const steamOnly = 'Souvenir Charm | Cologne 2026 Highlight | MATYS ACE';
    const oneSource = 'Sticker | zorte (Gold, Ranked) | Cologne 2026';
    const raced = 'Souvenir Charm | Budapest 2025 Highlight | b1t mid-air catch';
    expect((await recordUnknownNames(t.deps.sql, { source: 'steam', names: [steamOnly], at })).added.map((item) => item.market_hash_name)).toEqual([steamOnly]);
    expect((await catalogRow(steamOnly))?.provisional).toBe(true);
    for (let run = 0; run < 2; run += 1) expect((await recordUnknownNames(t.deps.sql, { source: 'csmarket', names: [oneSource], at })).added).toEqual([]);
    expect(await catalogRow(oneSource)).toBeUndefined();

    // Seen on csmarket; then two processes see it at once on two other sources: one insert, one event.
    await recordUnknownNames(t.deps.sql, { source: 'csmarket', names: [raced], at });
    const outcomes = await Promise.all(['waxpeer', 'bitskins'].map((source) => recordUnknownNames(t.deps.sql, { source, names: [raced], at })));
    expect(outcomes.flatMap((outcome) => outcome.added).map((item) => item.market_hash_name)).toEqual([raced]);
    const [outbox] = await t.deps.sql<{ count: number }[]>`
      select count(*)::int as count from event_outbox where event_type = 'catalog.item_added' and payload->>'market_hash_name' = ${raced}`;
    expect(outbox!.count).toBe(1);
    // Seen again later: it is in the catalog, so the caller is told to reload its name map.
    expect(await recordUnknownNames(t.deps.sql, { source: 'csdeals', names: [raced], at })).toEqual({
      added: [],
      unparsed: [],
      newlyUnparsed: [],
      catalogChanged: true,
    });
  });

  test('catalog:sync with a library that generates a provisional item makes it regular under the same id, prices kept; the others stay provisional', async () => {
    const catalog = generateCatalog();
    // A name the generator produces, unknown to this database's catalog (synced with AK only).
    const generated = catalog.find((item) => item.market_hash_name === 'Austin 2025 Dust II Souvenir Package')!;
    const lacking = 'Souvenir Charm | Austin 2025 Highlight | chopper Double Kill';
    const at = clock.now();
    for (const source of ['csmarket', 'lisskins']) await recordUnknownNames(t.deps.sql, { source, names: [generated.market_hash_name], at });
    await recordUnknownNames(t.deps.sql, { source: 'steam', names: [lacking], at });
    const provisional = await catalogRow(generated.market_hash_name);
    expect(provisional).toMatchObject({ catalog_id: generated.catalog_id, type: generated.type, rarity: null, definition_index: null, provisional: true });
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${generated.catalog_id}, 'csmarket', 'default', 0.42, now(), now(), ${crypto.randomUUID()})`;

    const regular = catalog.filter((item) => item.market_hash_name === AK);
    const [stillProvisional] = await t.deps.sql<
      { count: number }[]
    >`select count(*)::int as count from catalog_items where provisional and catalog_id <> ${generated.catalog_id}`;
    const counts = await syncCatalog(t.deps.sql, [...regular, generated]);
    expect(counts).toMatchObject({ inserted: 0, adopted: 1, provisional: stillProvisional!.count, deleted: 0, total: 2 });
    // Generated attributes win; the id, and so the price, stay.
    expect(await catalogRow(generated.market_hash_name)).toEqual({ ...(generated as CatalogItem), provisional: false });
    const [price] = await t.deps.sql<
      { price: string }[]
    >`select price::text from latest_prices where catalog_id = ${generated.catalog_id} and source = 'csmarket'`;
    expect(price?.price).toBe('0.42');
    // What the library still lacks stays provisional.
    expect((await catalogRow(lacking))?.provisional).toBe(true);
    // A second sync: nothing left to adopt.
    expect(await syncCatalog(t.deps.sql, [...regular, generated])).toMatchObject({ inserted: 0, updated: 0, adopted: 0, unchanged: 2 });
  });
});
