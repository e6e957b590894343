import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import { insertOrFindLiveAccount } from '../../shared/gameplatform/accounts.ts';
import type { SteamBudgetSettings } from '../../shared/gameplatform/steam-budget.ts';
import { SteamUnavailableError } from '../../shared/gameplatform/steam-client.ts';
import {
  fetchTradeHistoryPage,
  parseTradeHistory,
  runTradeHistory,
  type TradeHistoryDeps,
  type TradeReversedPayload,
} from '../../shared/gameplatform/trade-history.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { webhooksPool } from '../../workers/webhooks/index.ts';
import { type ItemSpec, inventoryOf, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { errorOf, eventually, scratchTestApp, type TestApp, testClock, testConfig, workspaceWithKey } from '../helpers.ts';
import {
  createWebhook,
  type Receiver,
  removeQueueKeys,
  retireEndpoints,
  startReceiver,
  subscribedEndpoint,
  uniquePath,
  WEBHOOK_KEY_A,
} from '../webhooks/webhooks-fixtures.ts';

/**
 * Reversal tracking (issue 30, docs/design.md §17) over real Postgres (a scratch database: the poll looks at
 * every workspace) and Redis, Steam played by the fake over HTTP. Poll runs are called directly
 * with an injectable clock ("one interval later" is a clock step); the last part delivers
 * trade.reversed through the real webhooks pool to a receiver, signed.
 */

const INTERVAL_MS = 600_000;
const clock = testClock();
const log = createLogger({ level: 'silent', name: 'trade-history-test' });
const queuePrefix = `th-${process.pid}-${Date.now().toString(36)}`;
let fake: SteamFake;
let t: TestApp;
let receiver: Receiver;
const workspaces: string[] = [];

let steamCounter = 0;
function nextSteamId(): string {
  steamCounter += 1;
  return String(76561198200000000n + BigInt(process.pid % 1000) * 10_000n + BigInt(steamCounter));
}
const PARTNER = '76561198299999999';
const SPECS: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.2, seed: 1 },
  { item: 'AWP | Asiimov', wear: 0.3, seed: 2 },
];

function deps(budget: Partial<SteamBudgetSettings> = {}, extra: Partial<TradeHistoryDeps> = {}): TradeHistoryDeps {
  return {
    config: t.deps.config,
    sql: t.deps.sql,
    redis: t.deps.redis,
    log,
    now: clock.now,
    budget: { requests: 1_000, windowMs: 60_000, marginMs: 0, keyPrefix: `${queuePrefix}-budget`, ...budget },
    ...extra,
  };
}

async function runOnce(budget: Partial<SteamBudgetSettings> = {}, extra: Partial<TradeHistoryDeps> = {}) {
  clock.advance(INTERVAL_MS);
  return runTradeHistory(deps(budget, extra), { runForMs: 30_000 });
}

type Tracked = {
  workspaceId: string;
  key: string;
  headers: Record<string, string>;
  accountId: number;
  steamId: string;
  assetIds: string[];
  token: string | null;
};

/** A workspace (subscribed to trade.reversed unless told otherwise) with one connected account, its inventory and an owner token. */
async function trackedAccount(options: { eventTypes?: string[] | null; token?: boolean; workspace?: { id: string; key: string } } = {}): Promise<Tracked> {
  let owner: { id: string; key: string };
  if (options.workspace) owner = options.workspace;
  else {
    const ws = await workspaceWithKey(t);
    owner = { id: ws.workspace.id, key: ws.key };
  }
  workspaces.push(owner.id);
  const eventTypes = options.eventTypes === undefined ? ['trade.reversed'] : options.eventTypes;
  if (eventTypes && !options.workspace) await subscribedEndpoint(t.deps.sql, owner.id, eventTypes);
  const steamId = nextSteamId();
  fake.setInventory(steamId, inventoryOf(steamId, SPECS, 70_000_000_000n + BigInt(steamCounter) * 1_000n));
  const { account } = await insertOrFindLiveAccount(t.deps.sql, { workspaceId: owner.id, steamId, personaName: null, connectedAt: clock.now() });
  const headers = { 'x-api-key': owner.key };
  let token: string | null = null;
  if (options.token !== false) {
    token = fake.issueAccessToken(steamId, new Date(Date.now() + 30 * 86_400_000));
    const put = await t.request(`/v2/gameplatform/accounts/${account.account_id}/steam-token`, { method: 'PUT', headers, json: { token } });
    expect(put.status).toBe(200);
  }
  return { workspaceId: owner.id, key: owner.key, headers, accountId: account.account_id, steamId, assetIds: fake.assetIds(steamId), token };
}

async function reversedEvents(workspaceId: string): Promise<TradeReversedPayload[]> {
  const rows = await t.deps.sql<{ payload: TradeReversedPayload }[]>`
    select payload from event_outbox where workspace_id = ${workspaceId} and event_type = 'trade.reversed' order by created_at, id`;
  return rows.map((row) => row.payload);
}

/** Puts every other poll of the file far out of due, so runs read only these accounts. */
async function onlyPoll(accountIds: number[]): Promise<void> {
  await t.deps
    .sql`update gameplatform_trade_polls set next_read_at = ${new Date(clock.now().getTime() + 1_000 * INTERVAL_MS)} where not (account_id = any(${accountIds}::bigint[]))`;
}

const readsOf = (steamId: string) => fake.tradeHistoryRequests.filter((request) => request.steamId === steamId);

async function tradesVia(account: Tracked, query = '') {
  const response = await t.request(`/v2/gameplatform/accounts/${account.accountId}/trades${query}`, { headers: account.headers });
  expect(response.status).toBe(200);
  return (await response.json()) as {
    data: {
      trade_id: string;
      status: string;
      status_code: number;
      reversed: boolean;
      rollback_trade_id: string | null;
      settled_at: string | null;
      counterparty_steam_id: string;
    }[];
    next_cursor: string | null;
  };
}

beforeAll(async () => {
  fake = await startSteamFake();
  receiver = startReceiver();
  t = await scratchTestApp({
    tag: 'trade_history',
    now: clock.now,
    config: {
      STEAM_API_URL: fake.url,
      STEAM_COMMUNITY_URL: fake.url,
      STEAM_WEB_API_KEY: fake.apiKey,
      TRADE_HISTORY_INTERVAL_SECONDS: String(INTERVAL_MS / 1000),
      QUEUE_PREFIX: queuePrefix,
      WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
    },
  });
}, 60_000);

afterAll(async () => {
  await retireEndpoints(t.deps.sql, workspaces);
  await removeQueueKeys(process.env.REDIS_URL!, queuePrefix);
  await t?.close();
  await receiver?.stop();
  await fake?.stop();
}, 60_000);

describe('trade history poll', () => {
  test('stores each trade once and updates its status in place', async () => {
    const account = await trackedAccount();
    const { trade_id } = fake.recordTrade(account.steamId, {
      partner: PARTNER,
      give: [account.assetIds[0]!],
      receive: [{ item: 'Glock-18 | Fade', wear: 0.03, seed: 7 }],
      at: clock.now(),
    });
    await onlyPoll([account.accountId]);
    const first = await runOnce();
    expect(first.reads.stored).toBe(1);
    let page = await tradesVia(account);
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({ trade_id, status: 'committed', status_code: 2, reversed: false, settled_at: null, counterparty_steam_id: PARTNER });

    await runOnce();
    fake.settleTrade(trade_id, clock.now());
    await runOnce();
    page = await tradesVia(account);
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({ trade_id, status: 'complete', status_code: 3, reversed: false });
    expect(page.data[0]!.settled_at).toBeString();
    const [count] = await t.deps.sql<{ n: number }[]>`select count(*)::int as n from gameplatform_trades where account_id = ${account.accountId}`;
    expect(count!.n).toBe(1);
    expect(readsOf(account.steamId)).toHaveLength(3);
  });

  test('a reversal is detected once, joined to its return trade, and sent as trade.reversed from the account’s point of view', async () => {
    const account = await trackedAccount();
    const recorded = fake.recordTrade(account.steamId, {
      partner: PARTNER,
      give: [account.assetIds[0]!],
      receive: [{ item: 'AWP | Dragon Lore', wear: 0.1, seed: 9 }],
      at: clock.now(),
    });
    await onlyPoll([account.accountId]);
    await runOnce();
    expect(await reversedEvents(account.workspaceId)).toEqual([]);

    const reversed = fake.reverseTrade(recorded.trade_id, clock.now());
    await onlyPoll([account.accountId]);
    const run = await runOnce();
    expect(run.reversals).toBe(1);
    const sent = await reversedEvents(account.workspaceId);
    expect(sent).toEqual([
      {
        account_id: account.accountId,
        steam_id: account.steamId,
        trade_id: recorded.trade_id,
        rollback_trade_id: reversed.rollback_trade_id,
        counterparty_steam_id: PARTNER,
        initiated_at: expect.any(String),
        reversed_at: expect.any(String),
        assets_returned: reversed.returned,
        assets_lost: reversed.lost,
      },
    ]);
    // What came back is in the inventory under its new id; what was received is gone.
    expect(fake.assetIds(account.steamId)).toContain(reversed.returned[0]!);
    expect(fake.assetIds(account.steamId)).not.toContain(reversed.lost[0]!);

    // Seen again (the same history): still one event.
    await runOnce();
    await runOnce();
    expect(await reversedEvents(account.workspaceId)).toHaveLength(1);

    const page = await tradesVia(account);
    expect(page.data.map((trade) => [trade.trade_id, trade.reversed, trade.rollback_trade_id])).toEqual([
      [reversed.rollback_trade_id, false, recorded.trade_id],
      [recorded.trade_id, true, null],
    ]);
    expect((await tradesVia(account, '?status=trade_protection_rollback')).data.map((trade) => trade.trade_id)).toEqual([recorded.trade_id]);

    const counterparty = await t.request(`/v2/gameplatform/counterparties/${PARTNER}`, { headers: account.headers });
    expect(counterparty.status).toBe(200);
    expect(await counterparty.json()).toMatchObject({ steam_id: PARTNER, trades: 1, reversals: 1, last_reversal_at: expect.any(String) });
  });

  test('two runs at once record one reversal and send one event', async () => {
    const account = await trackedAccount();
    const recorded = fake.recordTrade(account.steamId, { partner: PARTNER, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 3 }], at: clock.now() });
    await onlyPoll([account.accountId]);
    await runOnce();
    fake.reverseTrade(recorded.trade_id, clock.now());
    await onlyPoll([account.accountId]);
    clock.advance(INTERVAL_MS);
    const runs = await Promise.all([runTradeHistory(deps(), { runForMs: 30_000 }), runTradeHistory(deps(), { runForMs: 30_000 })]);
    expect(runs.reduce((sum, run) => sum + run.reversals, 0)).toBe(1);
    // Seen again by two runs at once: nothing more.
    await onlyPoll([account.accountId]);
    await Promise.all([runOnce(), runTradeHistory(deps(), { runForMs: 30_000 })]);
    expect(await reversedEvents(account.workspaceId)).toHaveLength(1);
  });

  test('Steam 429, 5xx and timeouts send nothing, keep what is stored, and the next interval reads again', async () => {
    const account = await trackedAccount();
    const recorded = fake.recordTrade(account.steamId, { partner: PARTNER, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 4 }], at: clock.now() });
    await onlyPoll([account.accountId]);
    await runOnce();
    fake.reverseTrade(recorded.trade_id, clock.now());

    // Retry-After 1: the budget's block lives in Redis's own (real) clock.
    for (const failure of [{ status: 429, retryAfter: 1 }, { status: 500 }, { status: 503 }, { status: 200, stallMs: 1_500 }]) {
      fake.failNext('trade_history', { ...failure, steamId: account.steamId });
      await onlyPoll([account.accountId]);
      const run = await runOnce({}, { pageTimeoutMs: 500 });
      expect(run.reads).toEqual({ failed: 1 });
      expect(await reversedEvents(account.workspaceId)).toEqual([]);
      const page = await tradesVia(account);
      expect(page.data.map((trade) => trade.status)).toEqual(['committed']);
    }
    const [poll] = await t.deps.sql<
      { failures: number; last_error: string }[]
    >`select failures, last_error from gameplatform_trade_polls where account_id = ${account.accountId}`;
    expect(poll!.failures).toBe(4);
    expect(poll!.last_error).toContain('timed out');

    await onlyPoll([account.accountId]);
    const recovered = await runOnce();
    expect(recovered.reads).toEqual({ stored: 1 });
    expect(await reversedEvents(account.workspaceId)).toHaveLength(1);
    // A failed read is never retried within the interval: one request per run.
    expect(readsOf(account.steamId).length).toBe(6);
  });

  test('a 429 blocks the shared budget for its Retry-After', async () => {
    const account = await trackedAccount();
    const other = await trackedAccount();
    fake.failNext('trade_history', { status: 429, retryAfter: 120, steamId: account.steamId });
    await onlyPoll([account.accountId, other.accountId]);
    clock.advance(INTERVAL_MS);
    const before = readsOf(other.steamId).length;
    // A budget of its own: its block (120 s on Redis's clock) must not hold up the other tests.
    const run = await runTradeHistory(deps({ keyPrefix: `${queuePrefix}-blocked` }), { runForMs: 1_000 });
    expect(run.reads).toEqual({ failed: 1, deferred: 1 });
    // The other account was due too, but the budget is blocked: deferred, not read.
    expect(readsOf(other.steamId).length).toBe(before);
  });

  test('401 and 403 drop the token with an audit event, send nothing, and end the poll', async () => {
    for (const refusal of ['revoked', 403] as const) {
      const account = await trackedAccount();
      await onlyPoll([account.accountId]);
      if (refusal === 'revoked') fake.revokeAccessToken(account.token!);
      else fake.failNext('trade_history', { status: 403, steamId: account.steamId });
      const run = await runOnce();
      expect(run.reads).toEqual({ refused: 1 });
      const tokens = await t.deps.sql`select 1 from gameplatform_steam_tokens where account_id = ${account.accountId}`;
      expect(tokens).toHaveLength(0);
      const audit = await t.deps.sql<{ event_type: string; metadata: Record<string, unknown> }[]>`
        select event_type, metadata from audit_events where workspace_id = ${account.workspaceId} and event_type = 'steam_token.dropped'`;
      expect(audit).toHaveLength(1);
      expect(audit[0]!.metadata.reason).toBe('refused');
      expect(JSON.stringify(audit)).not.toContain(account.token!);
      await runOnce();
      const polls = await t.deps.sql`select 1 from gameplatform_trade_polls where account_id = ${account.accountId}`;
      expect(polls).toHaveLength(0);
      // The API still answers (an empty list), never a 5xx.
      expect((await tradesVia(account)).data).toEqual([]);
    }
  });

  test('only accounts with a token whose workspace subscribes to trade.reversed or item.protection_ended are polled', async () => {
    const subscribed = await trackedAccount({ eventTypes: ['item.protection_ended'] });
    const noToken = await trackedAccount({ token: false });
    const otherTypes = await trackedAccount({ eventTypes: ['inventory.changed'] });
    const noEndpoint = await trackedAccount({ eventTypes: null });
    await runOnce();
    expect(readsOf(subscribed.steamId).length).toBeGreaterThanOrEqual(1);
    for (const account of [noToken, otherTypes, noEndpoint]) expect(readsOf(account.steamId)).toHaveLength(0);
    // Subscribed to item.protection_ended only: reversals are stored but no trade.reversed is written.
    const recorded = fake.recordTrade(subscribed.steamId, { partner: PARTNER, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 5 }], at: clock.now() });
    await onlyPoll([subscribed.accountId]);
    await runOnce();
    fake.reverseTrade(recorded.trade_id, clock.now());
    await onlyPoll([subscribed.accountId]);
    await runOnce();
    expect(await reversedEvents(subscribed.workspaceId)).toEqual([]);
    expect((await tradesVia(subscribed)).data.find((trade) => trade.trade_id === recorded.trade_id)?.reversed).toBe(true);
  });

  test('reads stay within the Steam budget: what it cannot admit waits for the next run', async () => {
    const accounts = [await trackedAccount(), await trackedAccount(), await trackedAccount()];
    await onlyPoll(accounts.map((account) => account.accountId));
    clock.advance(INTERVAL_MS);
    const before = fake.tradeHistoryRequests.length;
    const run = await runTradeHistory(deps({ requests: 2, keyPrefix: `${queuePrefix}-tight-${Date.now()}` }), { runForMs: 1_500 });
    expect(fake.tradeHistoryRequests.length - before).toBe(2);
    expect(run.reads).toEqual({ stored: 2, deferred: 1 });
  });

  test('disconnecting an account deletes its trades and its poll', async () => {
    const account = await trackedAccount();
    fake.recordTrade(account.steamId, { partner: PARTNER, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 6 }], at: clock.now() });
    await onlyPoll([account.accountId]);
    await runOnce();
    const deleted = await t.request(`/v2/gameplatform/accounts/${account.accountId}`, { method: 'DELETE', headers: account.headers });
    expect(deleted.status).toBe(204);
    expect(await t.deps.sql`select 1 from gameplatform_trades where account_id = ${account.accountId}`).toHaveLength(0);
    expect(await t.deps.sql`select 1 from gameplatform_trade_polls where account_id = ${account.accountId}`).toHaveLength(0);
  });
});

describe('reading GetTradeHistory', () => {
  test('hostile bodies: unreadable trades and assets are skipped and counted, never thrown', () => {
    const good = {
      tradeid: '1',
      steamid_other: PARTNER,
      time_init: 1_786_000_000,
      status: 3,
      assets_given: [{ appid: 730, contextid: '2', assetid: '5', amount: '1', classid: '1', instanceid: '0', new_assetid: '6', new_contextid: '2' }],
    };
    const page = parseTradeHistory({
      response: {
        more: true,
        trades: [
          good,
          { ...good, tradeid: '1' },
          { ...good, tradeid: 'x\u0000' },
          // A SteamID sent as a JSON number (76561198299999999 parses to this double: the precision is gone).
          { ...good, tradeid: '2', steamid_other: 76561198300000000 },
          { ...good, tradeid: '3', time_init: 'yesterday' },
          { ...good, tradeid: '4', status: '12' },
          { ...good, tradeid: '5', assets_given: 'none' },
          {
            ...good,
            tradeid: '6',
            assets_received: [{ assetid: '\ud800' }, null, { appid: 730, contextid: 2, assetid: 8, amount: '1', classid: '1', instanceid: '0' }],
          },
          null,
          'trade',
          { ...good, tradeid: '7', rollback_trade: '0', time_settlement: 0 },
        ],
      },
    });
    expect(page.trades.map((trade) => trade.trade_id)).toEqual(['1', '6', '7']);
    expect(page.skipped).toEqual({ trades: 8, assets: 2 });
    expect(page.more).toBe(true);
    expect(page.trades[1]!.assets_received).toEqual([
      { appid: 730, contextid: '2', assetid: '8', amount: '1', classid: '1', instanceid: '0', new_assetid: null, new_contextid: null },
    ]);
    expect(page.trades[2]).toMatchObject({ rollback_trade_id: null, settled_at: null });
    expect(parseTradeHistory({ response: {} }).trades).toEqual([]);
    for (const body of [null, [], 'x', { response: null }, { response: { trades: {} } }]) expect(() => parseTradeHistory(body)).toThrow(SteamUnavailableError);
  });

  test('a truncated or oversized body is a failed read, not a crash', async () => {
    const full = JSON.stringify({ response: { trades: [{ tradeid: '1', steamid_other: PARTNER, time_init: 1_786_000_000, status: 3 }], more: false } });
    const bodies = [full.slice(0, full.length - 7), `{"response":{"trades":[${'{"tradeid":"1"},'.repeat(600_000)}{}]}}`];
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request) => new Response(bodies[Number(new URL(request.url).searchParams.get('start_after_tradeid') ?? 0)]),
    });
    try {
      for (const index of [0, 1]) {
        const error = await fetchTradeHistoryPage(
          { STEAM_API_URL: `http://127.0.0.1:${server.port}` },
          'token',
          index === 0 ? null : { time: new Date(), tradeId: String(index) },
          { timeoutMs: 5_000, now: () => new Date() },
        ).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(SteamUnavailableError);
        expect((error as Error).message).not.toContain('token');
      }
    } finally {
      await server.stop(true);
    }
  });
});

describe('the trade endpoints', () => {
  test('every status of GET …/accounts/{id}/trades and GET /v2/gameplatform/counterparties/{id}', async () => {
    const account = await trackedAccount();
    for (let index = 0; index < 3; index += 1)
      fake.recordTrade(account.steamId, {
        partner: PARTNER,
        receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 10 + index }],
        at: new Date(clock.now().getTime() + index * 1_000),
      });
    await onlyPoll([account.accountId]);
    await runOnce();
    const base = `/v2/gameplatform/accounts/${account.accountId}/trades`;
    // 200, paged newest first without skipping or repeating.
    const first = await tradesVia(account, '?limit=2');
    expect(first.data).toHaveLength(2);
    const second = await tradesVia(account, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second.data).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
    const all = [...first.data, ...second.data].map((trade) => trade.trade_id);
    expect(new Set(all).size).toBe(3);
    expect(all).toEqual([...all].sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : -1)));

    const expectError = async (path: string, headers: Record<string, string>, status: number, code: string) => {
      const response = await t.request(path, { headers });
      expect(response.status).toBe(status);
      const error = await errorOf(response);
      expect(error.code).toBe(code);
      expect(error.request_id).toBeString();
    };
    // 400: cursor from other filters, tampered cursor, limit, status, id.
    await expectError(`${base}?status=complete&cursor=${encodeURIComponent(first.next_cursor!)}`, account.headers, 400, 'invalid_cursor');
    await expectError(`${base}?cursor=${encodeURIComponent(`${first.next_cursor!}x`)}`, account.headers, 400, 'invalid_cursor');
    await expectError(`${base}?limit=0`, account.headers, 400, 'invalid_request');
    await expectError(`${base}?limit=201`, account.headers, 400, 'invalid_request');
    await expectError(`${base}?status=reversed`, account.headers, 400, 'invalid_request');
    await expectError(`${base}?other=1`, account.headers, 400, 'invalid_request');
    await expectError('/v2/gameplatform/accounts/abc/trades', account.headers, 400, 'invalid_request');
    await expectError('/v2/gameplatform/accounts/99999999999999999999/trades', account.headers, 400, 'invalid_request');
    await expectError('/v2/gameplatform/counterparties/not-a-steam-id', account.headers, 400, 'invalid_gameplatform_id');
    // 401, 403.
    await expectError(base, {}, 401, 'unauthorized');
    await expectError(`/v2/gameplatform/counterparties/${PARTNER}`, { 'x-api-key': 'cs2_nope' }, 401, 'unauthorized');
    const narrow = await workspaceWithKey(t, { scopes: ['prices:read'] });
    await expectError(base, narrow.keyHeaders, 403, 'insufficient_scope');
    await expectError(`/v2/gameplatform/counterparties/${PARTNER}`, narrow.keyHeaders, 403, 'insufficient_scope');
    // 404: another workspace's account; that workspace sees zero counts for the same counterparty.
    const other = await workspaceWithKey(t);
    await expectError(base, other.keyHeaders, 404, 'not_found');
    await expectError('/v2/gameplatform/accounts/999999999/trades', account.headers, 404, 'not_found');
    const elsewhere = await t.request(`/v2/gameplatform/counterparties/${PARTNER}`, { headers: other.keyHeaders });
    expect(elsewhere.status).toBe(200);
    expect(await elsewhere.json()).toMatchObject({ steam_id: PARTNER, trades: 0, reversals: 0, last_reversal_at: null });
    // Any SteamID form, the same counts.
    const ids = (await (await t.request(`/v2/gameplatform/counterparties/${PARTNER}`, { headers: account.headers })).json()) as {
      trades: number;
      steam_id2: string;
      steam_id3: string;
    };
    expect(ids.trades).toBeGreaterThanOrEqual(3);
    for (const form of [ids.steam_id2, ids.steam_id3]) {
      const response = await t.request(`/v2/gameplatform/counterparties/${encodeURIComponent(form)}`, { headers: account.headers });
      expect(((await response.json()) as { trades: number }).trades).toBe(ids.trades);
    }
  });

  test('hostile input is a 400 with the shared error body', async () => {
    const account = await trackedAccount({ eventTypes: null, token: false });
    const base = `/v2/gameplatform/accounts/${account.accountId}/trades`;
    for (const path of [
      `${base}?status=${encodeURIComponent('complete\u0000')}`,
      `${base}?cursor=%ED%A0%80`,
      `${base}?cursor=${'a'.repeat(1_048_576)}`,
      `/v2/gameplatform/counterparties/${encodeURIComponent('7656119\u0000')}`,
      '/v2/gameplatform/counterparties/%ED%B0%80',
      `/v2/gameplatform/counterparties/${'7'.repeat(1_048_576)}`,
    ]) {
      const response = await t.request(path, { headers: account.headers });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      const error = await errorOf(response);
      expect(error.code).toMatch(/^[a-z_]+$/);
    }
  });

  test('trade intents carry the partner’s risk from the same counts', async () => {
    const account = await trackedAccount();
    const partner = nextSteamId();
    const recorded = fake.recordTrade(account.steamId, { partner, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 20 }], at: clock.now() });
    fake.recordTrade(account.steamId, { partner, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 21 }], at: clock.now() });
    await onlyPoll([account.accountId]);
    await runOnce();
    fake.reverseTrade(recorded.trade_id, clock.now());
    await onlyPoll([account.accountId]);
    await runOnce();
    const id = crypto.randomUUID();
    await t.deps.sql`
      insert into trade_intents (id, workspace_id, account_id, kind, state, external_reference, partner_steam_id, give, receive, valuation, expires_at, created_at, updated_at)
      values (${id}, ${account.workspaceId}, ${account.accountId}, 'create_offer', 'draft', ${`risk-${id}`}, ${partner}, '{}', '{1}',
              ${t.deps.sql.json({ marketplace: 'skinport', give_total: '0.00', receive_total: '0.00', currency: 'USD', unpriced_asset_ids: [] })}, ${new Date(clock.now().getTime() + 86_400_000)}, now(), now())`;
    const response = await t.request(`/v2/trade-intents/${id}`, { headers: account.headers });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { risk: unknown }).risk).toEqual({ partner_reversals: 1, partner_trades: 2 });
    const counterparty = (await (await t.request(`/v2/gameplatform/counterparties/${partner}`, { headers: account.headers })).json()) as {
      trades: number;
      reversals: number;
    };
    expect(counterparty).toMatchObject({ trades: 2, reversals: 1 });
  });
});

describe('delivery', () => {
  test('trade.reversed is delivered signed through the webhooks pool', async () => {
    const settings = {
      DATABASE_URL: t.deps.config.DATABASE_URL,
      QUEUE_PREFIX: queuePrefix,
      WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
    };
    const pools: RunningPools = await startPools([webhooksPool], testConfig(settings), log);
    try {
      const ws = await workspaceWithKey(t);
      const path = uniquePath('trade-reversed');
      const webhook = await createWebhook(t, ws.key, { url: receiver.url(path), event_types: ['trade.reversed'] });
      const account = await trackedAccount({ workspace: { id: ws.workspace.id, key: ws.key } });
      const recorded = fake.recordTrade(account.steamId, { partner: PARTNER, give: [account.assetIds[1]!], at: clock.now() });
      await onlyPoll([account.accountId]);
      await runOnce();
      const reversed = fake.reverseTrade(recorded.trade_id, clock.now());
      await onlyPoll([account.accountId]);
      await runOnce();
      const [request] = await eventually(async () => (receiver.received(path).length >= 1 ? receiver.received(path) : undefined), 15_000);
      const body = new Webhook(webhook.secret).verify(request!.body, request!.headers) as { type: string; data: TradeReversedPayload };
      expect(body.type).toBe('trade.reversed');
      expect(body.data).toMatchObject({
        account_id: account.accountId,
        trade_id: recorded.trade_id,
        rollback_trade_id: reversed.rollback_trade_id,
        assets_returned: reversed.returned,
        assets_lost: [],
      });
      expect(request!.body).not.toContain(account.token!);
    } finally {
      await pools.stop(5_000);
    }
  }, 30_000);
});
