import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import type { ChangedPrice, EventType } from '../../shared/events/outbox.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../../shared/prices/ingest.ts';
import { eventPagePath, PAGE_URL_TTL_SECONDS, signEventPageUrl } from '../../shared/webhooks/event-pages.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { webhooksPool } from '../../workers/webhooks/index.ts';
import { createTestApp, errorOf, eventually, testConfig, workspaceWithKey } from '../helpers.ts';
import {
  type CreatedWebhook,
  createWebhook,
  type ReceivedRequest,
  removeQueueKeys,
  retireEndpoints,
  startReceiver,
  uniquePath,
  WEBHOOK_KEY_A,
} from './webhooks-fixtures.ts';

/**
 * Market price events end to end: ingest runs written through writeIngestRun, the real webhooks pool
 * (BullMQ and Postgres) in this process under its own QUEUE_PREFIX, a receiver on loopback, and the
 * keyless pages behind prices.updated's signed next_url served by the app. Every endpoint here is
 * deleted before the test that made it ends, so no other run reaches it.
 */
const PUBLIC_BASE_URL = 'https://prices-api.example.test';
const queuePrefix = `whprices${process.pid}`;
const settings = {
  WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS_MS: '0,200,200',
  WEBHOOK_TIMEOUT_MS: '2000',
  QUEUE_PREFIX: queuePrefix,
  PUBLIC_BASE_URL,
};
const t = createTestApp({ config: settings });
const sql = t.deps.sql;
const receiver = startReceiver();
let pool: RunningPools | undefined;
let ws: Awaited<ReturnType<typeof workspaceWithKey>>;
const sources: string[] = [];
const itemIds: string[] = [];

beforeAll(async () => {
  ws = await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write'] });
  pool = await startPools([webhooksPool], testConfig(settings), createLogger({ level: 'silent', name: 'webhooks-price-events-test' }));
});

afterAll(async () => {
  await pool?.stop(5_000);
  await retireEndpoints(sql, [ws.workspace.id]);
  if (sources.length > 0) await sql`delete from price_sources where name in ${sql(sources)}`;
  if (itemIds.length > 0) await sql`delete from latest_prices where catalog_id in ${sql(itemIds)}`;
  await receiver.stop();
  await removeQueueKeys(t.deps.config.REDIS_URL, queuePrefix);
  await t.close();
});

/** Catalog items of this file, ids zero-padded so their order is plain. */
async function items(count: number): Promise<string[]> {
  const tag = crypto.randomUUID().slice(0, 8);
  const ids = Array.from({ length: count }, (_, index) => `itm_pe_${tag}_${String(index).padStart(5, '0')}`);
  await sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select id, 'Price Events ' || id, 'sticker' from unnest(${ids}::text[]) as id`;
  itemIds.push(...ids);
  return ids;
}

function newSource(): string {
  const source = `pe_${crypto.randomUUID().slice(0, 8)}`;
  sources.push(source);
  return source;
}

async function run(source: string, slot: number, rows: StagedObservation[]) {
  const runId = (await claimIngestRun(sql, source, slot, new Date()))!;
  const result = await writeIngestRun(sql, {
    runId,
    source,
    rows,
    ingestedAt: new Date(),
    staleAfterSeconds: 600,
    received: rows.length,
    skipped: 0,
    unknownNames: 0,
  });
  return { runId, ...result };
}

const row = (catalogId: string, price: string, sourceTime: Date): StagedObservation => ({
  catalog_id: catalogId,
  version: 'default',
  price,
  median_price: null,
  quantity: 1,
  source_time: sourceTime,
});

async function endpoint(eventTypes: EventType[]) {
  const path = uniquePath(eventTypes.join('+'));
  const hook = await createWebhook(t, ws.key, { url: receiver.url(path), event_types: eventTypes });
  return { path, hook };
}

async function remove(hook: CreatedWebhook) {
  expect((await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
}

type Verified<T> = { id: string; type: string; data: T };
function verify<T>(hook: CreatedWebhook, request: ReceivedRequest): Verified<T> {
  return new Webhook(hook.secret).verify(request.body, request.headers) as Verified<T>;
}

/** Waits until every delivery of the endpoint has settled and returns how many succeeded. */
function settled(hook: CreatedWebhook, expected: number): Promise<number> {
  return eventually(async () => {
    const [counts] = await sql<{ open: number; succeeded: number }[]>`
      select count(*) filter (where state in ('pending', 'delivering'))::int as open, count(*) filter (where state = 'succeeded')::int as succeeded
      from webhook_deliveries where endpoint_id = ${hook.id}`;
    return counts!.open === 0 && counts!.succeeded >= expected ? counts!.succeeded : undefined;
  }, 30_000);
}

function received(path: string, count: number): Promise<ReceivedRequest[]> {
  return eventually(async () => (receiver.received(path).length >= count ? receiver.received(path) : undefined), 30_000);
}

type PricesUpdated = {
  source: string;
  run_id: string;
  currency: string;
  item_count: number;
  page: number;
  page_count: number;
  items: ChangedPrice[];
  next_url: string | null;
};
type Page = {
  event_id: string;
  type: string;
  source: string;
  run_id: string;
  page: number;
  page_count: number;
  items: ChangedPrice[];
  next_url: string | null;
};

/** A next_url, requested of the app as a client without any API key would. */
function follow(url: string) {
  expect(url.startsWith(`${PUBLIC_BASE_URL}/v2/webhooks/events/`)).toBe(true);
  const parsed = new URL(url);
  return t.request(parsed.pathname + parsed.search);
}

describe('price.updated and prices.updated', () => {
  test('each endpoint gets only the type it subscribed to; price.updated is one per changed item and version per run, coalesced', async () => {
    const single = await endpoint(['price.updated']);
    const batched = await endpoint(['prices.updated']);
    const [a, b, c] = await items(3);
    const source = newSource();
    const earlier = new Date(Date.now() - 60_000);
    const later = new Date();

    // The run sees item a twice: one event for it, carrying the newer observation.
    // c comes with a buy order and a 7-day volume (docs/design.md §13), carried by both event types.
    const first = await run(source, 1, [
      row(a!, '1.00', earlier),
      row(b!, '2.00', later),
      row(a!, '1.50', later),
      { ...row(c!, '3.00', later), bid: '2.950', volume_7d: 41 },
    ]);
    expect(first.changed).toBe(3);
    type Single = { catalog_id: string; source: string; price: string; previous_price: string | null; bid: string | null; volume_7d: number | null };
    const singles = (await received(single.path, 3)).map((request) => verify<Single>(single.hook, request));
    expect(singles.map((event) => event.type)).toEqual(['price.updated', 'price.updated', 'price.updated']);
    expect(singles.map((event) => [event.data.catalog_id, event.data.price, event.data.previous_price, event.data.bid, event.data.volume_7d]).sort()).toEqual([
      [a!, '1.50', null, null, null],
      [b!, '2.00', null, null, null],
      [c!, '3.00', null, '2.950', 41],
    ]);
    const [batch] = (await received(batched.path, 1)).map((request) => verify<PricesUpdated>(batched.hook, request));
    expect(batch!.type).toBe('prices.updated');
    expect(batch!.data).toEqual({
      source,
      run_id: first.runId,
      ingested_at: expect.any(String),
      currency: 'USD',
      item_count: 3,
      page: 1,
      page_count: 1,
      items: [
        { catalog_id: a!, version: 'default', price: '1.50', previous_price: null, bid: null, volume_7d: null },
        { catalog_id: b!, version: 'default', price: '2.00', previous_price: null, bid: null, volume_7d: null },
        { catalog_id: c!, version: 'default', price: '3.00', previous_price: null, bid: '2.950', volume_7d: 41 },
      ],
      next_url: null,
    } as unknown as PricesUpdated);

    // A second run: a is observed again at the same price (a sample, not a change), b moves.
    const second = await run(source, 2, [row(a!, '1.50', new Date()), row(b!, '2.50', new Date()), row(b!, '2.75', new Date(Date.now() - 1_000))]);
    expect(second.changed).toBe(1);
    await settled(single.hook, 4);
    await settled(batched.hook, 2);
    const all = receiver.received(single.path).map((request) => verify<{ catalog_id: string; price: string; previous_price: string }>(single.hook, request));
    expect(all).toHaveLength(4);
    expect([all[3]!.data.catalog_id, all[3]!.data.price, all[3]!.data.previous_price]).toEqual([b!, '2.50', '2.00']);
    const batches = receiver.received(batched.path).map((request) => verify<PricesUpdated>(batched.hook, request));
    expect(batches.map((event) => event.type)).toEqual(['prices.updated', 'prices.updated']);
    expect(batches[1]!.data.items).toEqual([{ catalog_id: b!, version: 'default', price: '2.50', previous_price: '2.00', bid: null, volume_7d: null }]);

    // In the outbox: one price.updated per changed item and version per run, one prices.updated per run.
    const stored = await sql<{ event_type: string; count: number }[]>`
      select event_type, count(*)::int as count from event_outbox
      where payload->>'source' = ${source} group by event_type order by event_type`;
    expect([...stored]).toEqual([
      { event_type: 'price.updated', count: 4 },
      { event_type: 'prices.updated', count: 2 },
    ]);
    await remove(single.hook);
    await remove(batched.hook);
  }, 60_000);

  test('a run of 2 500 changes: 1 000 in the event, the rest behind a signed, keyless next_url, each item exactly once', async () => {
    const batched = await endpoint(['prices.updated']);
    const ids = await items(2_500);
    const source = newSource();
    const at = new Date();
    const prices = new Map(ids.map((id, index) => [id, `${1 + (index % 400)}.${String(index % 100).padStart(2, '0')}`]));
    const first = await run(
      source,
      1,
      ids.map((id) => row(id, prices.get(id)!, at)),
    );
    expect(first.changed).toBe(2_500);

    const [request] = await received(batched.path, 1);
    const event = verify<PricesUpdated>(batched.hook, request!);
    expect(event.type).toBe('prices.updated');
    expect(event.data).toMatchObject({ source, run_id: first.runId, item_count: 2_500, page: 1, page_count: 3 });
    expect(event.data.items).toHaveLength(1_000);
    expect(event.data.next_url).toStartWith(`${PUBLIC_BASE_URL}${eventPagePath(event.id, 2)}?expires=`);

    const seen: ChangedPrice[] = [...event.data.items];
    let next = event.data.next_url;
    const pages: Page[] = [];
    while (next) {
      const response = await follow(next);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('private, no-store');
      const page = (await response.json()) as Page;
      pages.push(page);
      seen.push(...page.items);
      next = page.next_url;
    }
    expect(pages.map((page) => [page.event_id, page.type, page.source, page.run_id, page.page, page.page_count, page.items.length])).toEqual([
      [event.id, 'prices.updated', source, first.runId, 2, 3, 1_000],
      [event.id, 'prices.updated', source, first.runId, 3, 3, 500],
    ]);
    // Every changed item exactly once, in one order across pages, with its price as a decimal string.
    expect(seen.map((item) => item.catalog_id)).toEqual(ids);
    for (const item of seen)
      expect(item).toEqual({
        catalog_id: item.catalog_id,
        version: 'default',
        price: prices.get(item.catalog_id)!,
        previous_price: null,
        bid: null,
        volume_7d: null,
      });

    // One event for the run (whatever its size), one row per further page, one delivery per endpoint.
    const [counts] = await sql<{ events: number; pages: number; deliveries: number }[]>`
      select (select count(*)::int from event_outbox where event_type = 'prices.updated' and payload->>'source' = ${source}) as events,
             (select count(*)::int from price_event_pages where event_id = ${event.id}) as pages,
             (select count(*)::int from webhook_deliveries where event_id = ${event.id}) as deliveries`;
    expect(counts).toEqual({ events: 1, pages: 2, deliveries: 1 });

    // A steady run: a tenth of the items move; previous prices come with them.
    const moved = ids.filter((_, index) => index % 10 === 0);
    const second = await run(
      source,
      2,
      moved.map((id) => row(id, '999.99', new Date())),
    );
    expect(second.changed).toBe(250);
    const [, steadyRequest] = await received(batched.path, 2);
    const steady = verify<PricesUpdated>(batched.hook, steadyRequest!);
    expect(steady.data).toMatchObject({ run_id: second.runId, item_count: 250, page_count: 1, next_url: null });
    expect(steady.data.items).toEqual(
      moved.map((id) => ({ catalog_id: id, version: 'default', price: '999.99', previous_price: prices.get(id)!, bid: null, volume_7d: null })),
    );
    await remove(batched.hook);

    // The URL is the credential: any edit, a missing part, or age makes it a 403 with the error body.
    const valid = new URL(event.data.next_url!);
    const expectForbidden = async (url: string, code: string) => {
      const response = await follow(url);
      expect(response.status).toBe(403);
      const error = await errorOf(response);
      expect(error.code).toBe(code);
      expect(error.request_id).toBeString();
    };
    const edited = (edit: (url: URL) => void) => {
      const copy = new URL(valid);
      edit(copy);
      return copy.href;
    };
    const signature = valid.searchParams.get('signature')!;
    await expectForbidden(
      edited((url) => url.searchParams.set('signature', `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`)),
      'invalid_page_url',
    );
    await expectForbidden(
      edited((url) => url.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3_600))),
      'invalid_page_url',
    );
    await expectForbidden(
      edited((url) => (url.pathname = eventPagePath(event.id, 3))),
      'invalid_page_url',
    );
    await expectForbidden(
      edited((url) => (url.pathname = eventPagePath(crypto.randomUUID(), 2))),
      'invalid_page_url',
    );
    await expectForbidden(
      edited((url) => url.searchParams.delete('signature')),
      'invalid_page_url',
    );
    const links = { signingKey: t.deps.config.SIGNING_KEY!, baseUrl: PUBLIC_BASE_URL };
    const old = signEventPageUrl(links, event.id, 2, new Date(Date.now() - PAGE_URL_TTL_SECONDS * 1000 - 1_000));
    await expectForbidden(old, 'page_url_expired');
    // Signed but never stored (or past retention): 404; a malformed id or page: 400.
    expect((await follow(signEventPageUrl(links, event.id, 4, new Date()))).status).toBe(404);
    expect((await follow(edited((url) => (url.pathname = '/v2/webhooks/events/not-a-uuid/pages/2')))).status).toBe(400);
    expect((await follow(edited((url) => (url.pathname = `/v2/webhooks/events/${event.id}/pages/0`)))).status).toBe(400);
  }, 90_000);
});
