import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { convertUsd } from '../../shared/fx/convert.ts';
import { findLatestRates } from '../../shared/fx/repository.ts';
import { cancelDraftsOfAccount, expireDueTradeIntents } from '../../shared/gameplatform/trade-intents.ts';
import type { Scope } from '../../shared/http/scopes.ts';
import { JOBS } from '../../shared/jobs/queues.ts';
import { maintenancePool } from '../../workers/maintenance/index.ts';
import { inventoryOf, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, seedFreshFxRates, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { setOwnerToken } from './inventory-fixtures.ts';

/**
 * docs/design.md §11 trade intents over real Postgres and Redis. Connected accounts and inventory snapshots
 * are written straight into their tables (fresh snapshots need no Steam fetch); missing or old
 * snapshots are fetched from the local Steam fake, and one suite goes through it end to end.
 */

const clock = testClock();
let t: TestApp;
let steam: SteamFake;
beforeAll(async () => {
  // Snapshots older than 10 minutes, or missing, are fetched from the fake (unknown owners: 404).
  steam = await startSteamFake();
  // A low policy limit keeps the valuation checks to a few small prices.
  t = createTestApp({
    now: clock.now,
    config: {
      TRADE_MAX_VALUE_USD: '100',
      STEAM_COMMUNITY_URL: steam.url,
      STEAM_API_URL: steam.url,
      WEBHOOK_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
    },
  });
});
afterAll(async () => {
  await t.close();
  await steam.stop();
});

const MINUTE = 60_000;
let assetCounter = 1_000_000;
const nextAssetId = () => String((assetCounter += 1));

/** A random individual SteamID64 (public universe, desktop instance). */
function randomSteamId(): string {
  return String(76561197960265728n + BigInt(1 + Math.floor(Math.random() * 2 ** 31)));
}

type Workspace = Awaited<ReturnType<typeof workspaceWithKey>>;

async function workspace(scopes?: Scope[]): Promise<Workspace> {
  return workspaceWithKey(t, scopes ? { scopes } : {});
}

async function connectAccount(ws: Workspace, steamId = randomSteamId()): Promise<{ accountId: number; steamId: string }> {
  const [row] = await t.deps.sql<{ account_id: string }[]>`
    insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at)
    values (${ws.workspace.id}, ${steamId}, 'trader', ${clock.now()}) returning account_id`;
  return { accountId: Number(row!.account_id), steamId };
}

type AssetFixture = { assetId?: string; tradable?: boolean; tradeHoldUntil?: string | null; catalogId?: string | null; paintIndex?: number };

const inventories = new Map<string, (AssetFixture & { assetId: string })[]>();

/**
 * Adds these assets to the inventory of `steamId` and writes it as its only snapshot, fetched at
 * `fetchedAt` (default now); returns the new assets' ids.
 */
async function snapshot(steamId: string, added: AssetFixture[], fetchedAt = clock.now()): Promise<string[]> {
  const id = crypto.randomUUID();
  const fresh = added.map((asset) => ({ ...asset, assetId: asset.assetId ?? nextAssetId() }));
  const assets = [...(inventories.get(steamId) ?? []).filter((asset) => !fresh.some((f) => f.assetId === asset.assetId)), ...fresh];
  inventories.set(steamId, assets);
  const ids = assets.map((asset) => asset.assetId);
  await t.deps.sql.begin(async (tx) => {
    await tx`delete from inventory_snapshots where steam_id = ${steamId}`;
    await tx`insert into inventory_snapshots (id, steam_id, fetched_at, total_assets) values (${id}, ${steamId}, ${fetchedAt}, ${assets.length})`;
    for (const [position, asset] of assets.entries()) {
      const record = {
        asset_id: ids[position],
        tradable: asset.tradable ?? true,
        trade_hold_until: asset.tradeHoldUntil ?? null,
        market_hash_name: null,
        state: asset.paintIndex === undefined ? {} : { paint_index: asset.paintIndex },
      };
      await tx`
        insert into inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record)
        values (${id}, ${position}, ${ids[position]!}, ${asset.tradable ?? true}, ${asset.catalogId ?? null}, ${tx.json(record)})`;
    }
  });
  return fresh.map((asset) => asset.assetId);
}

/** A catalog item priced at `prices` ({version: price}) on skinport; returns its catalog id. */
async function pricedItem(prices: Record<string, string>): Promise<string> {
  // Ids as the catalog derives them: other suites sharing the database pick priced items at random.
  const name = `Trade Test | ${crypto.randomUUID()}`;
  const catalogId = catalogIdFor(name);
  await t.deps.sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'weapon')`;
  for (const [version, price] of Object.entries(prices)) {
    await t.deps.sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogId}, 'skinport', ${version}, ${price}::numeric, ${clock.now()}, ${clock.now()}, ${crypto.randomUUID()})`;
  }
  return catalogId;
}

const inMinutes = (minutes: number) => new Date(clock.now().getTime() + minutes * MINUTE).toISOString();

function post(ws: Workspace, body: Record<string, unknown>, idempotencyKey: string = crypto.randomUUID()) {
  return t.request('/v2/trade-intents', { method: 'POST', headers: { ...ws.keyHeaders, 'idempotency-key': idempotencyKey }, json: body });
}

/** A workspace with a connected account, a partner, and one tradable asset on each side. */
async function tradeSetup(options: { scopes?: Scope[] } = {}) {
  const ws = await workspace(options.scopes);
  const account = await connectAccount(ws);
  const partner = randomSteamId();
  const [give] = await snapshot(account.steamId, [{}]);
  const [receive] = await snapshot(partner, [{}]);
  const offer = (extra: Record<string, unknown> = {}) => ({
    kind: 'create_offer',
    account_id: account.accountId,
    external_reference: `ref-${crypto.randomUUID()}`,
    expires_at: inMinutes(60),
    partner_steam_id: partner,
    give: [give],
    receive: [receive],
    ...extra,
  });
  return { ws, account, partner, give: give!, receive: receive!, offer };
}

type Intent = {
  trade_intent_id: string;
  state: string;
  give: string[];
  receive: string[];
  partner_steam_id: string | null;
  target_trade_id: string | null;
  account_id: number;
  valuation: { marketplace: string; give_total: string; receive_total: string; currency: string; unpriced_asset_ids: string[] };
  reservations: { asset_id: string; expires_at: string; released_at: string | null }[];
  assets: IntentAsset[];
};
type IntentAsset = {
  asset_id: string;
  side: 'give' | 'receive';
  market_hash_name: string | null;
  catalog_id: string | null;
  image: { url: string; source: string } | null;
};

async function created(response: Response): Promise<Intent> {
  if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${await response.text()}`);
  return (await response.json()) as Intent;
}

async function activeReservations(steamId: string, assetId: string): Promise<string[]> {
  const rows = await t.deps.sql<{ intent_id: string }[]>`
    select intent_id from trade_reservations where steam_id = ${steamId} and asset_id = ${assetId} and released_at is null`;
  return rows.map((row) => row.intent_id);
}

describe('trade intents in another currency (docs/design.md §14)', () => {
  test('the valuation is stored in USD and converted when read: POST, GET one and the list, each total converted once', async () => {
    await seedFreshFxRates(t.deps.sql);
    const rates = (await findLatestRates(t.deps.sql))!;
    const currency = rates.rates.has('GBP') ? 'GBP' : 'EUR';
    const ws = await workspace();
    const account = await connectAccount(ws);
    const item = await pricedItem({ default: '12.35' });
    // A Ruby with no Ruby price of its own is unpriced: no fallback to the default version.
    const ruby = await pricedItem({ default: '300.00' });
    const give = await snapshot(account.steamId, [{ catalogId: item }, { catalogId: ruby, paintIndex: 415 }]);
    const response = await t.request(`/v2/trade-intents?currency=${currency}`, {
      method: 'POST',
      headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() },
      json: {
        kind: 'create_offer',
        account_id: account.accountId,
        external_reference: 'fx-1',
        expires_at: inMinutes(30),
        partner_steam_id: randomSteamId(),
        give,
      },
    });
    expect(response.status).toBe(201);
    const intent = (await response.json()) as Intent & { currency: string; fx: { quote: string } };
    const expected = {
      give_total: convertUsd('12.35', rates, currency),
      receive_total: convertUsd('0.00', rates, currency),
      currency,
      unpriced_asset_ids: [give[1]!],
    };
    expect(intent.valuation).toMatchObject(expected);
    expect(intent.currency).toBe(currency);
    expect(intent.fx.quote).toBe(currency);
    const usd = (await (await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: ws.keyHeaders })).json()) as Intent & { currency?: string };
    expect(usd.valuation).toMatchObject({ give_total: '12.35', currency: 'USD' });
    expect(usd.currency).toBeUndefined();
    const one = (await (await t.request(`/v2/trade-intents/${intent.trade_intent_id}?currency=${currency}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect(one.valuation).toMatchObject(expected);
    const list = (await (await t.request(`/v2/trade-intents?currency=${currency}`, { headers: ws.keyHeaders })).json()) as {
      data: Intent[];
      currency?: string;
    };
    expect(list.data.find((entry) => entry.trade_intent_id === intent.trade_intent_id)!.valuation).toMatchObject(expected);
    const bad = await t.request('/v2/trade-intents?currency=usd', { headers: ws.keyHeaders });
    expect(bad.status).toBe(400);
  });
});

describe('POST /v2/trade-intents', () => {
  test('creates a draft that reserves each outgoing asset, valued in exact decimals, with an audit and an outbox event', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const partner = randomSteamId();
    const cheap = await pricedItem({ default: '0.10' });
    const dear = await pricedItem({ default: '12.50' });
    // A Ruby Doppler (paint 415) is valued at its phase price, not the default one.
    const doppler = await pricedItem({ default: '300.00', ruby: '40.00' });
    const give = await snapshot(account.steamId, [{ catalogId: cheap }, { catalogId: dear }, { catalogId: doppler, paintIndex: 415 }]);
    const [unpriced] = await snapshot(partner, [{ catalogId: null }]);
    const response = await post(ws, {
      kind: 'create_offer',
      account_id: account.accountId,
      external_reference: 'order-1',
      expires_at: inMinutes(30),
      partner_steam_id: partner,
      give,
      receive: [unpriced],
      message: 'gl hf',
    });
    const intent = await created(response);
    expect(intent).toMatchObject({
      kind: 'create_offer',
      state: 'draft',
      account_id: account.accountId,
      external_reference: 'order-1',
      give,
      receive: [unpriced],
      partner_steam_id: partner,
      target_trade_id: null,
      valuation: { marketplace: 'skinport', give_total: '52.60', receive_total: '0.00', currency: 'USD', unpriced_asset_ids: [unpriced!] },
    });
    expect(intent.reservations.map((r) => r.asset_id).sort()).toEqual([...give].sort());
    for (const reservation of intent.reservations) expect(reservation).toMatchObject({ expires_at: inMinutes(30), released_at: null });
    for (const assetId of give) expect(await activeReservations(account.steamId, assetId)).toEqual([intent.trade_intent_id]);

    const [audit] = await t.deps.sql<{ source: string; outcome: string; request_id: string }[]>`
      select source, outcome, request_id from audit_events
      where workspace_id = ${ws.workspace.id} and event_type = 'trade_intent.created' and resource_id = ${intent.trade_intent_id}`;
    expect(audit).toMatchObject({ source: 'gameplatform', outcome: 'succeeded', request_id: response.headers.get('x-request-id')! });
    const outbox = await t.deps.sql<{ payload: Record<string, unknown> }[]>`
      select payload from event_outbox where workspace_id = ${ws.workspace.id} and event_type = 'trade_intent.created'`;
    expect(outbox).toHaveLength(1);
    expect(outbox[0]!.payload).toMatchObject({ trade_intent_id: intent.trade_intent_id, state: 'draft', give });
  });

  test('replays the original draft with 200 when the key and body repeat; another body with that key is 409', async () => {
    const { ws, offer } = await tradeSetup();
    const body = offer();
    const first = await created(await post(ws, body, 'same-key'));
    const replay = await post(ws, body, 'same-key');
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(first);
    const reused = await post(ws, { ...body, message: 'other' }, 'same-key');
    expect(reused.status).toBe(409);
    expect((await errorOf(reused)).code).toBe('idempotency_key_reused');
    const missing = await t.request('/v2/trade-intents', { method: 'POST', headers: ws.keyHeaders, json: body });
    expect((await errorOf(missing)).code).toBe('idempotency_key_required');
  });

  test('a value exactly at TRADE_MAX_VALUE_USD passes (decimal sums, never floats)', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    // 33.33 + 33.33 + 33.34 is 100 exactly; in binary floats it is 100.00000000000001.
    const items = [await pricedItem({ default: '33.33' }), await pricedItem({ default: '33.33' }), await pricedItem({ default: '33.34' })];
    const give = await snapshot(
      account.steamId,
      items.map((catalogId) => ({ catalogId })),
    );
    const intent = await created(
      await post(ws, {
        kind: 'create_offer',
        account_id: account.accountId,
        external_reference: 'exact',
        expires_at: inMinutes(5),
        partner_steam_id: randomSteamId(),
        give,
      }),
    );
    expect(intent.valuation.give_total).toBe('100.00');
    expect(intent.valuation.receive_total).toBe('0.00');
  });

  test('accepts a partner in SteamID2 or SteamID3 notation and stores its SteamID64', async () => {
    const { ws, offer } = await tradeSetup();
    const intent = await created(await post(ws, offer({ partner_steam_id: '[U:1:22202]', receive: [] })));
    expect(intent.partner_steam_id).toBe('76561197960287930');
  });
});

describe('validation order (each a 400 invalid_intent naming the first failing check)', () => {
  async function firstFailure(body: Record<string, unknown>, ws: Workspace) {
    const response = await post(ws, body);
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_intent');
    return error.details!.map((detail) => detail.field);
  }

  test('kind comes first, before an unknown account and a past expiry', async () => {
    const { ws, offer } = await tradeSetup();
    expect(await firstFailure(offer({ kind: 'gift', account_id: 999_999_999, expires_at: inMinutes(-5) }), ws)).toEqual(['body.kind']);
  });

  test('the fields of the kind: partner required, not both sides empty, no repeats, no target on create_offer, no sides on accept_offer', async () => {
    const { ws, offer } = await tradeSetup();
    const { partner_steam_id: _partner, ...withoutPartner } = offer();
    expect(await firstFailure({ ...withoutPartner, account_id: 999_999_999 }, ws)).toEqual(['body.partner_steam_id']);
    expect(await firstFailure(offer({ partner_steam_id: 'gaben' }), ws)).toEqual(['body.partner_steam_id']);
    expect(await firstFailure(offer({ give: [], receive: [], account_id: 999_999_999 }), ws)).toEqual(['body.give']);
    expect(await firstFailure(offer({ give: ['5', '5'] }), ws)).toEqual(['body.give']);
    expect(await firstFailure(offer({ target_trade_id: crypto.randomUUID() }), ws)).toEqual(['body.target_trade_id']);
    expect(await firstFailure(offer({ kind: 'accept_offer', target_trade_id: crypto.randomUUID() }), ws)).toEqual(['body.partner_steam_id']);
    const { partner_steam_id: _p, give: _g, receive: _r, ...bare } = offer();
    expect(await firstFailure({ ...bare, kind: 'accept_offer' }, ws)).toEqual(['body.target_trade_id']);
  });

  test('the account: unknown, another workspace’s, or disconnected, before the expiry check', async () => {
    const { ws, offer, account } = await tradeSetup();
    const other = await workspace();
    const foreign = await connectAccount(other);
    expect(await firstFailure(offer({ account_id: 999_999_999, expires_at: inMinutes(-5) }), ws)).toEqual(['body.account_id']);
    expect(await firstFailure(offer({ account_id: foreign.accountId }), ws)).toEqual(['body.account_id']);
    expect(await firstFailure(offer({ partner_steam_id: account.steamId }), ws)).toEqual(['body.partner_steam_id']);
    await t.deps.sql`update gameplatform_accounts set disconnected_at = ${clock.now()} where account_id = ${account.accountId}`;
    expect(await firstFailure(offer(), ws)).toEqual(['body.account_id']);
  });

  test('expires_at: in the past, now, or more than 14 days ahead, before the asset check', async () => {
    const { ws, offer } = await tradeSetup();
    expect(await firstFailure(offer({ expires_at: inMinutes(-1), give: ['424242'] }), ws)).toEqual(['body.expires_at']);
    expect(await firstFailure(offer({ expires_at: clock.now().toISOString() }), ws)).toEqual(['body.expires_at']);
    expect(await firstFailure(offer({ expires_at: inMinutes(14 * 24 * 60 + 1) }), ws)).toEqual(['body.expires_at']);
    await created(await post(ws, offer({ expires_at: inMinutes(14 * 24 * 60) })));
  });

  test('assets: missing, not tradable, on trade hold, or without a snapshot, each named, before the policy', async () => {
    const { ws, offer, account, partner } = await tradeSetup();
    const dear = await pricedItem({ default: '500.00' });
    const [held, untradable, heldBefore, expensive] = await snapshot(account.steamId, [
      { tradeHoldUntil: inMinutes(60 * 24) },
      { tradable: false },
      { tradeHoldUntil: inMinutes(-60) },
      { catalogId: dear },
    ]);
    const response = await post(ws, offer({ give: ['777', held, untradable, expensive] }));
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_intent');
    expect(error.details!.map((detail) => detail.field)).toEqual(['body.give', 'body.give', 'body.give']);
    expect(error.details!.map((detail) => detail.message).join('\n')).toMatch(/777 is not in the inventory[\s\S]*on trade hold until[\s\S]*not tradable/);
    // A hold that already ended does not count.
    await created(await post(ws, offer({ give: [heldBefore], receive: [] })));
    // The partner's side is checked against the partner's inventory.
    expect(await firstFailure(offer({ receive: ['888'] }), ws)).toEqual(['body.receive']);
    expect(await firstFailure(offer({ partner_steam_id: randomSteamId(), receive: ['1'] }), ws)).toEqual(['body.receive']);
    expect(partner).toBeString();
  });

  test('an owner snapshot older than 10 minutes does not count as current', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const [old] = await snapshot(account.steamId, [{}], new Date(clock.now().getTime() - 11 * MINUTE));
    const body = {
      kind: 'create_offer',
      account_id: account.accountId,
      external_reference: 'old',
      expires_at: inMinutes(5),
      partner_steam_id: randomSteamId(),
      give: [old],
    };
    expect(await firstFailure(body, ws)).toEqual(['body.give']);
  });

  test('policy: either side worth more than TRADE_MAX_VALUE_USD', async () => {
    const { ws, offer, account, partner } = await tradeSetup();
    const [a, b] = await snapshot(account.steamId, [
      { catalogId: await pricedItem({ default: '60.00' }) },
      { catalogId: await pricedItem({ default: '40.01' }) },
    ]);
    const error = await errorOf(await post(ws, offer({ give: [a, b], receive: [] })));
    expect(error.code).toBe('invalid_intent');
    expect(error.details).toEqual([{ field: 'body.give', message: expect.stringContaining('100.01') }]);
    const [c] = await snapshot(partner, [{ catalogId: await pricedItem({ default: '100.50' }) }]);
    expect(await firstFailure(offer({ receive: [c] }), ws)).toEqual(['body.receive']);
  });

  test('a malformed body is a 400 invalid_request naming the field', async () => {
    const { ws, offer } = await tradeSetup();
    for (const bad of [
      { account_id: '1' },
      { give: [12] },
      { give: Array.from({ length: 257 }, (_, i) => String(i + 1)) },
      { external_reference: '' },
      { expires_at: 'tomorrow' },
      { extra: true },
    ]) {
      const response = await post(ws, offer(bad));
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_request');
    }
  });
});

describe('authentication and scopes', () => {
  test('401 without a key; 403 without trade:write; reads need trade:read or trade:write', async () => {
    const { ws, offer } = await tradeSetup();
    const noKey = await t.request('/v2/trade-intents', { method: 'POST', headers: { 'idempotency-key': 'x' }, json: offer() });
    expect(noKey.status).toBe(401);
    expect((await t.request('/v2/trade-intents', { headers: { 'x-api-key': 'nope' } })).status).toBe(401);
    const intent = await created(await post(ws, offer()));

    const reader = await workspaceWithKey(t, { scopes: ['trade:read'] });
    const readerKey = await t.deps.sql<{ id: string }[]>`select id from api_keys where workspace_id = ${reader.workspace.id}`;
    expect(readerKey).toHaveLength(1);
    const forbidden = await post(reader, offer());
    expect(forbidden.status).toBe(403);
    expect((await errorOf(forbidden)).code).toBe('insufficient_scope');
    expect((await t.request('/v2/trade-intents', { headers: reader.keyHeaders })).status).toBe(200);
    const cancel = await t.request(`/v2/trade-intents/${intent.trade_intent_id}/cancel`, { method: 'POST', headers: reader.keyHeaders });
    expect(cancel.status).toBe(403);

    const none = await workspaceWithKey(t, { scopes: ['prices:read'] });
    expect((await t.request('/v2/trade-intents', { headers: none.keyHeaders })).status).toBe(403);
    expect((await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: none.keyHeaders })).status).toBe(403);
    const [denied] = await t.deps.sql<{ outcome: string }[]>`
      select outcome from audit_events where workspace_id = ${none.workspace.id} and event_type = 'request.denied' and resource_id = 'trade_intents.list'`;
    expect(denied?.outcome).toBe('rejected');
  });
});

describe('reads', () => {
  test('GET one: 200 in its workspace, 404 from another workspace and for an unknown id', async () => {
    const { ws, offer } = await tradeSetup();
    const intent = await created(await post(ws, offer()));
    const got = await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: ws.keyHeaders });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(intent as never);
    const other = await workspace();
    for (const path of [`/v2/trade-intents/${intent.trade_intent_id}`, `/v2/trade-intents/${crypto.randomUUID()}`]) {
      const response = await t.request(path, { headers: other.keyHeaders });
      expect(response.status).toBe(404);
      expect((await errorOf(response)).code).toBe('not_found');
    }
    const cancel = await t.request(`/v2/trade-intents/${intent.trade_intent_id}/cancel`, { method: 'POST', headers: other.keyHeaders });
    expect(cancel.status).toBe(404);
    expect((await t.request('/v2/trade-intents/not-a-uuid', { headers: ws.keyHeaders })).status).toBe(400);
  });

  test('lists newest first in signed pages bound to the state filter', async () => {
    const { ws, account, offer } = await tradeSetup();
    const assets = await snapshot(account.steamId, [{}, {}, {}]);
    const ids: string[] = [];
    for (const asset of assets) {
      ids.push((await created(await post(ws, offer({ give: [asset], receive: [] })))).trade_intent_id);
      clock.advance(1);
    }
    await t.request(`/v2/trade-intents/${ids[0]}/cancel`, { method: 'POST', headers: ws.keyHeaders });

    const first = await t.request('/v2/trade-intents?limit=2', { headers: ws.keyHeaders });
    const page1 = (await first.json()) as { data: Intent[]; next_cursor: string };
    expect(page1.data.map((intent) => intent.trade_intent_id)).toEqual([ids[2]!, ids[1]!]);
    const second = await t.request(`/v2/trade-intents?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, { headers: ws.keyHeaders });
    const page2 = (await second.json()) as { data: Intent[]; next_cursor: string | null };
    expect(page2.data.map((intent) => intent.trade_intent_id)).toEqual([ids[0]!]);
    expect(page2.next_cursor).toBeNull();

    const drafts = (await (await t.request('/v2/trade-intents?state=draft', { headers: ws.keyHeaders })).json()) as { data: Intent[] };
    expect(drafts.data.map((intent) => intent.trade_intent_id)).toEqual([ids[2]!, ids[1]!]);
    const cancelled = (await (await t.request('/v2/trade-intents?state=cancelled', { headers: ws.keyHeaders })).json()) as { data: Intent[] };
    expect(cancelled.data.map((intent) => intent.state)).toEqual(['cancelled']);

    const refiltered = await t.request(`/v2/trade-intents?state=draft&limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, { headers: ws.keyHeaders });
    expect(refiltered.status).toBe(400);
    expect((await errorOf(refiltered)).code).toBe('invalid_cursor');
    expect((await t.request('/v2/trade-intents?limit=101', { headers: ws.keyHeaders })).status).toBe(400);
    expect((await t.request('/v2/trade-intents?state=open', { headers: ws.keyHeaders })).status).toBe(400);
  });
});

describe('conflicts (409 with details)', () => {
  test('external_reference_conflict within the workspace, audited as rejected', async () => {
    const { ws, account, offer } = await tradeSetup();
    const [other] = await snapshot(account.steamId, [{}]);
    await created(await post(ws, offer({ external_reference: 'dup' })));
    const response = await post(ws, offer({ external_reference: 'dup', give: [other] }));
    expect(response.status).toBe(409);
    const error = await errorOf(response);
    expect(error.code).toBe('external_reference_conflict');
    expect(error.details).toEqual([{ field: 'body.external_reference', message: expect.any(String) }]);
    // The failed draft reserved nothing.
    expect(await activeReservations(account.steamId, other!)).toEqual([]);
    const [audit] = await t.deps.sql<{ outcome: string; metadata: { reason: string } }[]>`
      select outcome, metadata from audit_events where workspace_id = ${ws.workspace.id} and event_type = 'request.denied' and resource_id = 'trade_intents.create'`;
    expect(audit).toMatchObject({ outcome: 'rejected', metadata: { reason: 'external_reference_conflict' } });
    // Another workspace may use the same reference.
    const elsewhere = await tradeSetup();
    await created(await post(elsewhere.ws, elsewhere.offer({ external_reference: 'dup' })));
  });

  test('asset_reserved names the holding intent in the same workspace, and only says "another workspace" otherwise', async () => {
    const { ws, account, offer } = await tradeSetup();
    const holder = await created(await post(ws, offer()));
    const response = await post(ws, offer());
    expect(response.status).toBe(409);
    const error = await errorOf(response);
    expect(error.code).toBe('asset_reserved');
    expect(error.details).toEqual([{ field: 'body.give[0]', message: `asset ${holder.give[0]} is reserved by trade intent ${holder.trade_intent_id}` }]);

    // The same Steam account connected in a second workspace cannot book the asset either.
    const other = await workspace();
    const twin = await connectAccount(other, account.steamId);
    const foreign = await post(other, offer({ account_id: twin.accountId }));
    expect(foreign.status).toBe(409);
    const foreignError = await errorOf(foreign);
    expect(foreignError.code).toBe('asset_reserved');
    expect(foreignError.details![0]!.message).toBe(`asset ${holder.give[0]} is reserved by a trade intent of another workspace`);
    expect(JSON.stringify(foreignError)).not.toContain(holder.trade_intent_id);
    const [audit] = await t.deps.sql<{ metadata: { reason: string; asset_ids: string[] } }[]>`
      select metadata from audit_events where workspace_id = ${other.workspace.id} and event_type = 'request.denied' and outcome = 'rejected'`;
    expect(audit?.metadata).toMatchObject({ reason: 'asset_reserved', asset_ids: [holder.give[0]] });
  });

  test('20 concurrent drafts racing for one asset: exactly one holds it, the others get asset_reserved', async () => {
    const { ws, account, offer } = await tradeSetup();
    const [contested] = await snapshot(account.steamId, [{}]);
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(ws, offer({ give: [contested], receive: [] }))));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(19);
    for (const response of responses.filter((r) => r.status === 409)) expect((await errorOf(response)).code).toBe('asset_reserved');
    const winner = (await responses.find((response) => response.status === 201)!.json()) as Intent;
    expect(await activeReservations(account.steamId, contested!)).toEqual([winner.trade_intent_id]);
  });

  test('accept_offer: takes its sides from the target, reserves what it gives, and one active acceptance per target', async () => {
    const maker = await tradeSetup();
    const taker = await workspace();
    // The partner of the maker's offer is the taker's connected account.
    const takerAccount = await connectAccount(taker, maker.partner);
    const offer = await created(await post(maker.ws, maker.offer()));
    const accept = (extra: Record<string, unknown> = {}) => ({
      kind: 'accept_offer',
      account_id: takerAccount.accountId,
      external_reference: `acc-${crypto.randomUUID()}`,
      expires_at: inMinutes(30),
      target_trade_id: offer.trade_intent_id,
      ...extra,
    });
    const acceptance = await created(await post(taker, accept()));
    expect(acceptance).toMatchObject({
      kind: 'accept_offer',
      give: [maker.receive],
      receive: [maker.give],
      partner_steam_id: maker.account.steamId,
      target_trade_id: offer.trade_intent_id,
    });
    expect(await activeReservations(maker.partner, maker.receive)).toEqual([acceptance.trade_intent_id]);

    const second = await post(taker, accept());
    expect(second.status).toBe(409);
    const error = await errorOf(second);
    expect(error.code).toBe('target_offer_conflict');
    expect(error.details).toEqual([{ field: 'body.target_trade_id', message: expect.any(String) }]);

    // An offer not addressed to this account, or no longer a draft, cannot be accepted.
    const stranger = await workspace();
    const strangerAccount = await connectAccount(stranger);
    const wrong = await post(stranger, accept({ account_id: strangerAccount.accountId }));
    expect((await errorOf(wrong)).details).toEqual([{ field: 'body.target_trade_id', message: expect.any(String) }]);
    await t.request(`/v2/trade-intents/${offer.trade_intent_id}/cancel`, { method: 'POST', headers: maker.ws.keyHeaders });
    const late = await post(taker, accept());
    expect((await errorOf(late)).details![0]!.field).toBe('body.target_trade_id');
  });
});

describe('cancel and expiry release reservations', () => {
  test('cancel → 200 cancelled, the asset is free for a new draft; cancelling again is 409 intent_not_cancellable', async () => {
    const { ws, account, offer } = await tradeSetup();
    const intent = await created(await post(ws, offer()));
    const cancel = await t.request(`/v2/trade-intents/${intent.trade_intent_id}/cancel`, { method: 'POST', headers: ws.keyHeaders });
    expect(cancel.status).toBe(200);
    const cancelled = (await cancel.json()) as Intent;
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.reservations.every((reservation) => reservation.released_at !== null)).toBe(true);
    expect(await activeReservations(account.steamId, intent.give[0]!)).toEqual([]);
    const next = await created(await post(ws, offer()));
    expect(await activeReservations(account.steamId, intent.give[0]!)).toEqual([next.trade_intent_id]);

    const again = await t.request(`/v2/trade-intents/${intent.trade_intent_id}/cancel`, { method: 'POST', headers: ws.keyHeaders });
    expect(again.status).toBe(409);
    const error = await errorOf(again);
    expect(error.code).toBe('intent_not_cancellable');
    expect(error.details).toEqual([{ field: 'path.trade_intent_id', message: 'state is cancelled' }]);
    const events = await t.deps.sql<{ event_type: string; outcome: string }[]>`
      select event_type, outcome from audit_events where workspace_id = ${ws.workspace.id}
        and (resource_id = ${intent.trade_intent_id} or resource_id = 'trade_intents.cancel') order by id`;
    expect([...events]).toEqual([
      { event_type: 'trade_intent.created', outcome: 'succeeded' },
      { event_type: 'trade_intent.cancelled', outcome: 'succeeded' },
      { event_type: 'request.denied', outcome: 'rejected' },
    ]);
  });

  test('the sweeper expires drafts past expires_at and releases their reservations', async () => {
    const { ws, account, offer } = await tradeSetup();
    const due = await created(await post(ws, offer({ expires_at: inMinutes(1) })));
    const [later] = await snapshot(account.steamId, [{}]);
    const notDue = await created(await post(ws, offer({ give: [later], receive: [], expires_at: inMinutes(10) })));

    expect(await expireDueTradeIntents(t.deps.sql, new Date(clock.now().getTime() + 2 * MINUTE))).toBeGreaterThanOrEqual(1);
    const get = async (id: string) => (await (await t.request(`/v2/trade-intents/${id}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect((await get(due.trade_intent_id)).state).toBe('expired');
    expect((await get(notDue.trade_intent_id)).state).toBe('draft');
    expect(await activeReservations(account.steamId, due.give[0]!)).toEqual([]);
    const [audit] = await t.deps.sql<{ actor_type: string; source: string }[]>`
      select actor_type, source from audit_events where resource_id = ${due.trade_intent_id} and event_type = 'trade_intent.expired'`;
    expect(audit).toEqual({ actor_type: 'system', source: 'gameplatform' });

    const cancel = await t.request(`/v2/trade-intents/${due.trade_intent_id}/cancel`, { method: 'POST', headers: ws.keyHeaders });
    expect((await errorOf(cancel)).code).toBe('intent_not_cancellable');
    // The freed asset can be drafted again.
    await created(await post(ws, offer({ give: [due.give[0]], receive: [] })));
  });

  test('a draft past expires_at frees its assets for a new draft even before the sweeper runs', async () => {
    const { ws, account, offer } = await tradeSetup();
    const old = await created(await post(ws, offer({ expires_at: inMinutes(1) })));
    clock.advance(2 * MINUTE);
    await snapshot(account.steamId, [{ assetId: old.give[0] }]);
    await snapshot(offer().partner_steam_id, [{ assetId: old.receive[0] }]);
    const fresh = await created(await post(ws, offer()));
    expect(await activeReservations(account.steamId, old.give[0]!)).toEqual([fresh.trade_intent_id]);
    const state = (await (await t.request(`/v2/trade-intents/${old.trade_intent_id}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect(state.state).toBe('expired');
  });

  test('cancelDraftsOfAccount cancels every draft of a disconnected account, in the caller’s transaction', async () => {
    const { ws, account, offer } = await tradeSetup();
    const intent = await created(await post(ws, offer()));
    const cancelled = await t.deps.sql.begin((tx) =>
      cancelDraftsOfAccount(tx, account.accountId, {
        workspaceId: ws.workspace.id,
        actor: { type: 'api_key', id: ws.keyId },
        requestId: 'req-test',
        now: clock.now(),
      }),
    );
    expect(cancelled).toEqual([intent.trade_intent_id]);
    expect(await activeReservations(account.steamId, intent.give[0]!)).toEqual([]);
    const [audit] = await t.deps.sql<{ metadata: { reason: string } }[]>`
      select metadata from audit_events where resource_id = ${intent.trade_intent_id} and event_type = 'trade_intent.cancelled'`;
    expect(audit?.metadata.reason).toBe('account_disconnected');
  });

  test('the expiry job is registered on the maintenance pool and scheduled about every 30 s', async () => {
    expect(JOBS['trade_intents.expire'].queue).toBe('maintenance');
    const schedules = typeof maintenancePool.schedules === 'function' ? maintenancePool.schedules(t.deps.config) : (maintenancePool.schedules ?? []);
    expect(schedules.find((schedule) => schedule.job === 'trade_intents.expire')?.everyMs).toBe(30_000);
    const { ws, offer } = await tradeSetup();
    const due = await created(await post(ws, offer({ expires_at: inMinutes(1) })));
    const handlers = maintenancePool.handlers({
      config: t.deps.config,
      sql: t.deps.sql,
      redis: undefined as never,
      log: t.deps.log,
      queue: undefined as never,
      enqueue: undefined as never,
      now: () => new Date(clock.now().getTime() + 5 * MINUTE),
    });
    const expire = handlers.find(([name]) => name === 'trade_intents.expire')![1] as (payload: object, context: never) => Promise<unknown>;
    await expire({}, { jobId: 'test', attempt: 1, scheduledAt: new Date() } as never);
    const state = (await (await t.request(`/v2/trade-intents/${due.trade_intent_id}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect(state.state).toBe('expired');
  });
});

describe('inventories fetched through Steam (the local fake)', () => {
  test('fetches missing snapshots of both owners, then drafts; a held asset from Steam is refused', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const partner = randomSteamId();
    const mine = inventoryOf(
      account.steamId,
      [
        { item: 'AK-47 | Redline', wear: 0.2, seed: 7 },
        { item: 'AWP | Asiimov', wear: 0.3, tradeHoldUntil: new Date(Date.now() + 86_400_000) },
      ],
      70_000_000_000n,
    );
    const theirs = inventoryOf(partner, [{ item: 'Container | Revolution Case' }], 71_000_000_000n);
    steam.setInventory(account.steamId, mine);
    steam.setInventory(partner, theirs);
    const [redline, asiimov] = mine.assets.map((asset) => asset.assetid);
    const body = {
      kind: 'create_offer',
      account_id: account.accountId,
      external_reference: 'via-steam',
      expires_at: inMinutes(30),
      partner_steam_id: partner,
      receive: [theirs.assets[0]!.assetid],
    };
    const intent = await created(await post(ws, { ...body, give: [redline] }));
    expect(intent.reservations.map((r) => r.asset_id)).toEqual([redline!]);
    expect(steam.requests.filter((r) => r.path === `/inventory/${account.steamId}/730/2`)).toHaveLength(1);
    expect(steam.requests.filter((r) => r.path === `/inventory/${partner}/730/2`)).toHaveLength(1);
    const held = await errorOf(await post(ws, { ...body, external_reference: 'held', give: [asiimov] }));
    expect(held.details).toEqual([{ field: 'body.give', message: expect.stringContaining('trade hold') }]);
    // The fresh snapshot was reused: no second fetch.
    expect(steam.requests.filter((r) => r.path === `/inventory/${account.steamId}/730/2`)).toHaveLength(1);
  });

  test('a protected asset on either side is a 400 invalid_intent with detail asset_protected (docs/design.md §17): trade-protected, or listed on the Community Market', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const partner = randomSteamId();
    const mine = inventoryOf(
      account.steamId,
      [
        { item: 'AK-47 | Redline', wear: 0.2, seed: 8 },
        { item: 'AWP | Asiimov', wear: 0.3, seed: 9 },
      ],
      72_000_000_000n,
    );
    const theirs = inventoryOf(
      partner,
      [{ item: 'Container | Revolution Case' }, { item: 'AWP | Asiimov', wear: 0.25, seed: 10, marketListing: true }],
      73_000_000_000n,
    );
    steam.setInventory(account.steamId, mine);
    steam.setInventory(partner, theirs);
    const [free, received] = mine.assets.map((asset) => asset.assetid);
    // Whole minutes: the owner read renders the instant as "8 Dec @ 7:00am" (no preserve_bbcode there).
    const until = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 6 * 86_400_000);
    // Received in a trade: Steam protects it for 7 days.
    steam.protectItems(account.steamId, [received!], until);
    const [theirCase, listed] = theirs.assets.map((asset) => asset.assetid);
    const body = { kind: 'create_offer', account_id: account.accountId, external_reference: 'protected', expires_at: inMinutes(30), partner_steam_id: partner };
    // The public read does not show context 16: without the owner's token the received item is missing.
    const unseen = await errorOf(await post(ws, { ...body, give: [free, received], receive: [theirCase] }));
    expect(unseen.details).toEqual([{ field: 'body.give', message: `asset ${received} is not in the inventory of ${account.steamId}` }]);
    // With it, the owner read sees both contexts, and protection is the reason.
    await setOwnerToken(t, ws.workspace.id, account.accountId, steam.issueAccessToken(account.steamId));
    const response = await post(ws, { ...body, give: [free, received], receive: [theirCase, listed] });
    expect(response.status).toBe(400);
    const refused = await errorOf(response);
    expect(refused.code).toBe('invalid_intent');
    expect(refused.details).toEqual([
      {
        field: 'body.give',
        code: 'asset_protected',
        message: `asset_protected: asset ${received} is trade-protected until ${until.toISOString()} and cannot be traded`,
      },
      {
        field: 'body.receive',
        code: 'asset_protected',
        message: `asset_protected: asset ${listed} is listed on the Steam Community Market and cannot be traded`,
      },
    ]);
    // Nothing was reserved; the unprotected assets alone make a draft.
    expect(
      (await created(await post(ws, { ...body, external_reference: 'unprotected', give: [free], receive: [theirCase] }))).reservations.map((r) => r.asset_id),
    ).toEqual([free!]);
  });

  test('a created intent lists its assets, give then receive, with the name, catalog id and image of their inventory records (docs/design.md §18)', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const partner = randomSteamId();
    const mine = inventoryOf(
      account.steamId,
      [
        { item: 'AK-47 | Redline', wear: 0.2, seed: 11 },
        { item: 'P250 | Sand Dune', wear: 0.5, seed: 12 },
      ],
      74_000_000_000n,
    );
    const theirs = inventoryOf(partner, [{ item: 'Container | Revolution Case' }], 75_000_000_000n);
    const [redline, sandDune] = mine.assets.map((asset) => asset.assetid);
    // A description without an icon: the record's image is cs2-lib's image of the skin by wear.
    const bare = mine.descriptions.find((description) => description.classid === mine.assets[1]!.classid)!;
    delete (bare as { icon_url?: string }).icon_url;
    steam.setInventory(account.steamId, mine);
    steam.setInventory(partner, theirs);
    const theirCase = theirs.assets[0]!.assetid;
    const response = await post(ws, {
      kind: 'create_offer',
      account_id: account.accountId,
      external_reference: 'with-images',
      expires_at: inMinutes(30),
      partner_steam_id: partner,
      receive: [theirCase],
      give: [sandDune, redline],
    });
    const intent = await created(response);
    expect(intent.assets.map((asset) => [asset.asset_id, asset.side])).toEqual([
      [sandDune!, 'give'],
      [redline!, 'give'],
      [theirCase, 'receive'],
    ]);

    // Each entry is what the owner's inventory record shows (the snapshot the check read: no new fetch).
    const records = new Map<string, IntentAsset>();
    for (const owner of [account.steamId, partner]) {
      const page = (await (await t.request(`/v2/inventories/${owner}`, { headers: ws.keyHeaders })).json()) as {
        data: (IntentAsset & Record<string, unknown>)[];
      };
      for (const record of page.data) records.set(record.asset_id, record);
    }
    for (const asset of intent.assets) {
      const record = records.get(asset.asset_id)!;
      expect(asset).toEqual({
        asset_id: asset.asset_id,
        side: asset.side,
        market_hash_name: record.market_hash_name,
        catalog_id: record.catalog_id,
        image: record.image,
      });
    }
    // Steam's icon of the asset's own description on STEAM_IMAGE_URL, else cs2-lib's on ITEM_ASSETS_URL.
    const iconOf = (fixture: typeof mine, assetId: string) => {
      const asset = fixture.assets.find((entry) => entry.assetid === assetId)!;
      return fixture.descriptions.find((description) => description.classid === asset.classid && description.instanceid === asset.instanceid)!.icon_url;
    };
    const [giveSandDune, giveRedline, receiveCase] = intent.assets;
    expect(giveRedline!.image).toEqual({ url: `${t.deps.config.STEAM_IMAGE_URL}/economy/image/${iconOf(mine, redline!)}`, source: 'steam' });
    expect(receiveCase!.image).toEqual({ url: `${t.deps.config.STEAM_IMAGE_URL}/economy/image/${iconOf(theirs, theirCase)}`, source: 'steam' });
    expect(giveSandDune!.image!.source).toBe('cs2-lib');
    expect(giveSandDune!.image!.url.startsWith(`${t.deps.config.ITEM_ASSETS_URL}/`)).toBe(true);
    expect(giveRedline!.market_hash_name).toBe('AK-47 | Redline (Field-Tested)');
    expect(receiveCase!.market_hash_name).toBe('Revolution Case');
    // The image fake serves the url.
    const png = await fetch(giveRedline!.image!.url);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('image/png');
    await png.arrayBuffer();

    // The same entries on reads, and in the trade_intent.created payload.
    const one = (await (await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect(one.assets).toEqual(intent.assets);
    const list = (await (await t.request('/v2/trade-intents', { headers: ws.keyHeaders })).json()) as { data: Intent[] };
    expect(list.data.find((entry) => entry.trade_intent_id === intent.trade_intent_id)!.assets).toEqual(intent.assets);
    const [outbox] = await t.deps.sql<{ payload: { assets: IntentAsset[] } }[]>`
      select payload from event_outbox where workspace_id = ${ws.workspace.id} and event_type = 'trade_intent.created'`;
    expect(outbox!.payload.assets).toEqual(intent.assets);

    // An accept_offer lists the target's assets from its own check: it gives what the offer receives.
    const taker = await workspace();
    const takerAccount = await connectAccount(taker, partner);
    const acceptance = await created(
      await post(taker, {
        kind: 'accept_offer',
        account_id: takerAccount.accountId,
        external_reference: 'accept-images',
        expires_at: inMinutes(30),
        target_trade_id: intent.trade_intent_id,
      }),
    );
    expect(acceptance.assets).toEqual([
      { ...receiveCase!, side: 'give' },
      { ...giveSandDune!, side: 'receive' },
      { ...giveRedline!, side: 'receive' },
    ]);
  });

  test('an intent stored before its assets were kept (sql/0025) lists each id of give then receive with null name, catalog id and image', async () => {
    const { ws, offer, give, receive } = await tradeSetup();
    const intent = await created(await post(ws, offer()));
    await t.deps.sql`update trade_intents set assets = '[]' where id = ${intent.trade_intent_id}`;
    const one = (await (await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: ws.keyHeaders })).json()) as Intent;
    expect(one.assets).toEqual([
      { asset_id: give, side: 'give', market_hash_name: null, catalog_id: null, image: null },
      { asset_id: receive, side: 'receive', market_hash_name: null, catalog_id: null, image: null },
    ]);
  });

  test('a private partner inventory is a 400 naming receive; Steam down with no snapshot is 503 upstream_unavailable', async () => {
    const ws = await workspace();
    const account = await connectAccount(ws);
    const [give] = await snapshot(account.steamId, [{}]);
    const partner = randomSteamId();
    steam.setInventory(partner, 'private');
    const body = {
      kind: 'create_offer',
      account_id: account.accountId,
      external_reference: 'private',
      expires_at: inMinutes(30),
      partner_steam_id: partner,
      give: [give],
      receive: ['5'],
    };
    const refused = await errorOf(await post(ws, body));
    expect(refused.code).toBe('invalid_intent');
    expect(refused.details).toEqual([{ field: 'body.receive', message: expect.stringContaining('cannot be read') }]);

    const down = randomSteamId();
    steam.failNext('inventory', { status: 500, times: 20 });
    const response = await post(ws, { ...body, external_reference: 'down', partner_steam_id: down });
    expect(response.status).toBe(503);
    expect((await errorOf(response)).code).toBe('upstream_unavailable');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    steam.failNext('inventory', { status: 500, times: 0 });
  });
});
