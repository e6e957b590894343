/**
 * The local Steam fake (docs/design.md §11, issue 11): one Bun.serve speaking the Web API, the community
 * inventory and the OpenID 2.0 provider in Steam's real formats, from one origin, so tests and
 * `npm start` set STEAM_API_URL = STEAM_COMMUNITY_URL = fake.url. It can fail, throttle and page
 * on demand.
 *
 * API for tests:
 *   startSteamFake({ port?, apiKey? }) → Promise<SteamFake>
 *   fake.url                                 base URL, e.g. http://127.0.0.1:PORT
 *   fake.apiKey                              the Web API key it accepts (STEAM_WEB_API_KEY)
 *   fake.stop()
 *   fake.setProfile(steamId64, summary|null) fields merged over Steam-like defaults; null removes
 *   fake.setInventory(steamId64, InventoryFixture | 'private' | 'not_found')
 *   fake.failNext(kind, { status, retryAfter?, times?, steamId?, stallMs? })   kind 'profiles' | 'inventory' | 'openid' | 'trade_history';
 *                                            the next `times` (default 1) requests of that kind fail
 *                                            ('openid': checkid_setup and check_authentication alike);
 *                                            failures queue up in call order; with `steamId`, only
 *                                            that account's inventory requests take the failure; with
 *                                            `stallMs`, the (inventory) answer comes that late
 *   fake.requests                            requests received: { path, query }, oldest first (the last
 *                                            10 000, so a long `npm start` does not grow without bound)
 *   fake.openid.{endpoint, signInAs, positiveAssertion, tamper, rejectAll}   (openid-provider.ts)
 *   fake.inventoryRequests                   inventory requests (community and owner reads): { steamId, at (ms), status },
 *                                            oldest first (the last 10 000): what the inventory watch's
 *                                            Steam budget is measured against
 * Inventory changes between reads (inventory-changes.ts; docs/design.md §15's watch is tested against them):
 *   fake.assetIds(steamId64)                 asset ids, newest first
 *   fake.addItems(steamId64, specs)          new items (new asset ids, listed first) → their ids
 *   fake.removeItems(steamId64, assetIds)    items gone (sold, traded away)
 *   fake.tradeItems(steamId64, assetIds)     the same items back under new asset ids → the new ids
 *   fake.endTradeHolds(steamId64, assetIds)  holds and protection over: tradable and marketable, same asset ids
 *   fake.protectItems(steamId64, assetIds, until?)  trade protection (docs/design.md §17) until `until` (default 7 days):
 *                                            sealed 1, untradable, the "⇆ … trade-protected … until [date]…[/date]" line
 *   fake.setInventoryVisibility(steamId64, 'private' | 'public')   403 null while private, items kept
 * Trade history (docs/design.md §17; trade-history.ts): GET /IEconService/GetTradeHistory/v1/?access_token=… as Steam
 * answers it (the token's account's trades, newest first, paged by start_after_time/start_after_tradeid;
 * failNext('trade_history', …), `steamId` = the token's account). Statuses are Steam's ETradeStatus
 * (2 Committed while protected, 3 Complete, 12 TradeProtectionRollback).
 *   fake.recordTrade(steamId64, {partner, give?: asset ids, receive?: ItemSpec[], at?}) → {trade_id, given, received}:
 *                                            Committed; given items leave the account's inventory, received
 *                                            ones arrive under new asset ids, protected until at + 7 days
 *   fake.settleTrade(tradeId, at?)           Complete (3) with time_settlement
 *   fake.reverseTrade(tradeId, at?) → {trade_id, rollback_trade_id, returned, lost}: status 12, and a
 *                                            return trade (rollback_trade = tradeId) moving every item back
 *   fake.tradesOf(steamId64)                 that account's GetTradeHistory entries, newest first
 *   fake.tradeHistoryRequests                GetTradeHistory requests: { steamId, at (ms), status }, oldest first
 * Over HTTP: POST /_control/trades {steam_id, partner, give?, receive?, at?} → the recorded trade;
 * POST /_control/trades/<tradeid>/settle | /reverse {at?}; GET /_control/trades/<steamid> → {trades};
 * POST /_control/trades {fail: {status, retry_after?, times?, stall_ms?, steam_id?}}.
 * Owner inventory (docs/design.md §17; econ-inventory.ts): GET /IEconService/GetInventoryItemsWithDescriptions/v1/
 * ?access_token=…&steamid=…&appid=730&contextid=2|16 → {response: {…one context's page…}}; the public
 * community read serves context 2 only, so protectItems' items (moved to context 16) are absent from it.
 * Owner access tokens (docs/design.md §17; access-tokens.ts): fake.issueAccessToken(steamId64, expiresAt?) → a JWT
 * the fake honours; fake.revokeAccessToken(token). Over HTTP: POST /_control/access-tokens
 * {steam_id, expires_at?} → {token}, or {revoke: token}.
 * The same over HTTP, for `npm start` (another process): GET /_control/inventories/<steamid> → {asset_ids};
 * POST /_control/inventories/<steamid> {add?: ItemSpec[] (dates as ISO strings), remove?, trade?,
 * protect?, end_holds?: asset ids, protect_until?: ISO date, fail?: {status, retry_after?, times?, stall_ms?},
 * visibility?: "public" | "private"} → {asset_ids, added, traded} (public first, then add, trade, protect,
 * end_holds, remove, then private and fail).
 * Hold and protection text (docs/design.md §17): with preserve_bbcode=1 as stored (type "bbcode" lines with
 * `[date]<unix>[/date]`), without it rendered as Steam renders it since 2026-06-24 ("29 Jun @ 7:00am");
 * ItemSpec.holdForm writes an item's instant in any other form (items.ts HOLD_TEXT_FORMS).
 * Fixtures (data.ts): PUBLIC_STEAM_ID, PRIVATE_STEAM_ID, FRIENDS_ONLY_STEAM_ID, EMPTY_STEAM_ID,
 * BIG_STEAM_ID, PARTNER_STEAM_ID, UNKNOWN_STEAM_ID; STEAM_2026_STEAM_ID and STEAM_2026_GERMAN_STEAM_ID
 * (inventories as Steam sends them since 2025: name tags as property 5, charm patterns as property 3
 * and in asset_accessories, a legacy S…A…D… inspect action; the second with German property names);
 * HOLDS_2026_STEAM_ID (every hold and protection text form, a Community Market listing: holds2026InventorySpecs);
 * bigInventory(steamId64, assets = 5000); inventoryOf(owner, specs, firstAssetId, { locale? })
 * (items.ts) builds custom inventories.
 */
import type { Server } from 'bun';
import { issueAccessToken, newAccessTokenState, revokeAccessToken } from './access-tokens.ts';
import { inventoryPage } from './community-inventory.ts';
import { defaultInventories, defaultProfiles, PUBLIC_STEAM_ID, profile } from './data.ts';
import { DEFAULT_STEAM_FAKE_API_KEY } from './defaults.ts';
import { econInventory } from './econ-inventory.ts';
import { addItems, assetIdsOf, endTradeHolds, FakeInventoryError, protectItems, removeItems, setInventoryVisibility, tradeItems } from './inventory-changes.ts';
import type { ItemSpec } from './items.ts';
import { createOpenIdProvider, type OpenIdHelpers } from './openid-provider.ts';
import type { FailureKind, FailureSpec, FakeState } from './state.ts';
import {
  newTradeHistoryState,
  type RecordedTrade,
  type RecordTradeInput,
  type ReversedTrade,
  recordTrade,
  reverseTrade,
  routeTradeHistory,
  settleTrade,
  type TradeHistoryEntry,
  tradesOf,
} from './trade-history.ts';
import type { InventoryFixture, PlayerSummary } from './types.ts';
import { getPlayerSummaries } from './web-api.ts';

export {
  BIG_STEAM_ID,
  bigInventory,
  EMPTY_STEAM_ID,
  FRIENDS_ONLY_STEAM_ID,
  HOLDS_2026_STEAM_ID,
  holds2026InventorySpecs,
  PARTNER_STEAM_ID,
  PRIVATE_STEAM_ID,
  PUBLIC_STEAM_ID,
  STEAM_2026_GERMAN_STEAM_ID,
  STEAM_2026_STEAM_ID,
  steam2026InventorySpecs,
  UNKNOWN_STEAM_ID,
} from './data.ts';
export { DEFAULT_STEAM_FAKE_API_KEY } from './defaults.ts';
export { HOLD_TEXT_FORMS, type HoldTextForm, holdLine, INSPECT_LINK, type ItemSpec, inventoryOf, legacyInspectLink, yearlessText } from './items.ts';
export type { InventoryFixture, PlayerSummary } from './types.ts';

export type SteamFakeOptions = { port?: number; apiKey?: string; hostname?: string };

export type SteamFake = {
  url: string;
  apiKey: string;
  stop(): Promise<void>;
  setProfile(steamId64: string, summary: (Partial<PlayerSummary> & { personaname?: string }) | null): void;
  setInventory(steamId64: string, inventory: InventoryFixture | 'private' | 'not_found'): void;
  failNext(kind: FailureKind, response: FailureSpec): void;
  requests: { path: string; query: Record<string, string> }[];
  inventoryRequests: { steamId: string; at: number; status: number }[];
  openid: OpenIdHelpers;
  assetIds(steamId64: string): string[];
  addItems(steamId64: string, specs: readonly ItemSpec[]): string[];
  removeItems(steamId64: string, assetIds: readonly string[]): void;
  tradeItems(steamId64: string, assetIds: readonly string[]): string[];
  endTradeHolds(steamId64: string, assetIds: readonly string[]): void;
  protectItems(steamId64: string, assetIds: readonly string[], until?: Date): void;
  setInventoryVisibility(steamId64: string, visibility: 'public' | 'private'): void;
  /** An owner access token for the account, signed by the fake (a hand-made JWT is refused, as Steam refuses it). */
  issueAccessToken(steamId64: string, expiresAt?: Date): string;
  /** Steam stops honouring the token: reads with it answer 401 from now on. */
  revokeAccessToken(token: string): void;
  /** A trade of the account with a partner (trade-history.ts), Committed while its received items are protected. */
  recordTrade(steamId64: string, trade: RecordTradeInput): RecordedTrade;
  settleTrade(tradeId: string, at?: Date): void;
  reverseTrade(tradeId: string, at?: Date): ReversedTrade;
  tradesOf(steamId64: string): TradeHistoryEntry[];
  tradeHistoryRequests: { steamId: string | null; at: number; status: number }[];
};

const MAX_LOGGED_REQUESTS = 10_000;
const PRIVATE_FIELDS = ['realname', 'timecreated', 'loccountrycode', 'commentpermission', 'primaryclanid', 'personastateflags'] as const;
const INVENTORY_PATH = /^\/inventory\/(\d{1,20})\/730\/2\/?$/;
const ECON_INVENTORY_PATH = /^\/IEconService\/GetInventoryItemsWithDescriptions\/v0*1\/?$/;
const CONTROL_INVENTORY_PATH = /^\/_control\/inventories\/(\d{1,20})$/;

type ControlBody = {
  add?: (Omit<ItemSpec, 'tradeHoldUntil' | 'protectedUntil'> & { tradeHoldUntil?: string; protectedUntil?: string })[];
  remove?: string[];
  trade?: string[];
  end_holds?: string[];
  protect?: string[];
  protect_until?: string;
  fail?: { status: number; retry_after?: number; times?: number; stall_ms?: number };
  visibility?: 'public' | 'private';
};

/** POST /_control/inventories/<steamid>: changes in the order add, trade, protect, end_holds, remove; then fail / visibility. */
async function controlInventory(state: FakeState, steamId64: string, request: Request): Promise<Response> {
  if (request.method === 'GET') {
    try {
      return Response.json({ asset_ids: assetIdsOf(state, steamId64) });
    } catch (error) {
      if (error instanceof FakeInventoryError) return Response.json({ error: error.message }, { status: 404 });
      throw error;
    }
  }
  let body: ControlBody;
  try {
    body = (await request.json()) as ControlBody;
  } catch {
    return Response.json({ error: 'body must be JSON' }, { status: 400 });
  }
  try {
    if (body.visibility === 'public') setInventoryVisibility(state, steamId64, 'public');
    const added = body.add
      ? addItems(
          state,
          steamId64,
          body.add.map(({ tradeHoldUntil, protectedUntil, ...spec }) => ({
            ...spec,
            ...(tradeHoldUntil ? { tradeHoldUntil: new Date(tradeHoldUntil) } : {}),
            ...(protectedUntil ? { protectedUntil: new Date(protectedUntil) } : {}),
          })),
        )
      : [];
    const traded = body.trade ? tradeItems(state, steamId64, body.trade) : [];
    if (body.protect) {
      const until = body.protect_until === undefined ? undefined : new Date(body.protect_until);
      if (until && Number.isNaN(until.getTime())) return Response.json({ error: 'protect_until must be an ISO date' }, { status: 400 });
      protectItems(state, steamId64, body.protect, until);
    }
    if (body.end_holds) endTradeHolds(state, steamId64, body.end_holds);
    if (body.remove) removeItems(state, steamId64, body.remove);
    if (body.visibility === 'private') setInventoryVisibility(state, steamId64, 'private');
    if (body.fail) {
      const { status, retry_after: retryAfter, times, stall_ms: stallMs } = body.fail;
      state.failures.inventory.push({
        status,
        ...(retryAfter === undefined ? {} : { retryAfter }),
        ...(stallMs === undefined ? {} : { stallMs }),
        steamId: steamId64,
        remaining: times ?? 1,
      });
    }
    const current = state.inventories.get(steamId64);
    return Response.json({ asset_ids: typeof current === 'object' ? current.assets.map((asset) => asset.assetid) : [], added, traded });
  } catch (error) {
    if (error instanceof FakeInventoryError) return Response.json({ error: error.message }, { status: 400 });
    throw error;
  }
}

/**
 * POST /_control/access-tokens: `{steam_id, expires_at?}` → `{token}` (a token the fake honours, for
 * `npm start`: PUT it on the connected account), or `{revoke: token}` → `{revoked: true}`.
 */
async function controlAccessTokens(state: FakeState, request: Request): Promise<Response> {
  let body: { steam_id?: unknown; expires_at?: unknown; revoke?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    return Response.json({ error: 'body must be JSON' }, { status: 400 });
  }
  if (typeof body.revoke === 'string') {
    revokeAccessToken(state, body.revoke);
    return Response.json({ revoked: true });
  }
  if (typeof body.steam_id !== 'string' || !/^\d{17}$/.test(body.steam_id)) return Response.json({ error: 'steam_id must be a SteamID64' }, { status: 400 });
  const expiresAt = typeof body.expires_at === 'string' ? new Date(body.expires_at) : undefined;
  if (expiresAt && Number.isNaN(expiresAt.getTime())) return Response.json({ error: 'expires_at must be an ISO date' }, { status: 400 });
  return Response.json({ token: issueAccessToken(state, body.steam_id, expiresAt) });
}

export async function startSteamFake(options: SteamFakeOptions = {}): Promise<SteamFake> {
  const state: FakeState = {
    apiKey: options.apiKey ?? DEFAULT_STEAM_FAKE_API_KEY,
    profiles: defaultProfiles(),
    inventories: defaultInventories(new Date()),
    failures: { profiles: [], inventory: [], openid: [], trade_history: [] },
    requests: [],
    nextAssetId: 60_000_000_000n,
    inventoryRequests: [],
    hiddenInventories: new Map(),
    accessTokens: newAccessTokenState(),
    tradeHistory: newTradeHistoryState(),
  };
  let baseUrl = '';
  const openid = createOpenIdProvider(state, () => baseUrl, PUBLIC_STEAM_ID);

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url);
      state.requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams) });
      if (state.requests.length > MAX_LOGGED_REQUESTS) state.requests.shift();
      const path = url.pathname;
      if (request.method === 'GET' && /^\/ISteamUser\/GetPlayerSummaries\/v0*2\/?$/.test(path)) return getPlayerSummaries(state, url);
      const inventory = INVENTORY_PATH.exec(path);
      if (request.method === 'GET' && inventory) {
        const logged = { steamId: inventory[1]!, at: Date.now(), status: 0 };
        state.inventoryRequests.push(logged);
        if (state.inventoryRequests.length > MAX_LOGGED_REQUESTS) state.inventoryRequests.shift();
        const response = await inventoryPage(state, inventory[1]!, url);
        logged.status = response.status;
        return response;
      }
      if (request.method === 'GET' && ECON_INVENTORY_PATH.test(path)) {
        // The owner read spends the same Steam inventory budget: logged with the community reads.
        const logged = { steamId: url.searchParams.get('steamid') ?? '', at: Date.now(), status: 0 };
        state.inventoryRequests.push(logged);
        if (state.inventoryRequests.length > MAX_LOGGED_REQUESTS) state.inventoryRequests.shift();
        const response = await econInventory(state, url);
        logged.status = response.status;
        return response;
      }
      const control = CONTROL_INVENTORY_PATH.exec(path);
      if (control && (request.method === 'GET' || request.method === 'POST')) return controlInventory(state, control[1]!, request);
      if (path === '/_control/access-tokens' && request.method === 'POST') return controlAccessTokens(state, request);
      const trades = routeTradeHistory(state, request, url);
      if (trades) return trades;
      if (path === '/openid/login' && (request.method === 'GET' || request.method === 'POST')) return openid.handle(request, url);
      return new Response('<html><body><h1>Not Found</h1></body></html>', { status: 404, headers: { 'content-type': 'text/html; charset=UTF-8' } });
    },
  });
  baseUrl = `http://${options.hostname ?? '127.0.0.1'}:${server.port}`;

  return {
    url: baseUrl,
    apiKey: state.apiKey,
    async stop() {
      await server.stop(true);
    },
    setProfile(steamId64, summary) {
      if (summary === null) {
        state.profiles.delete(steamId64);
        return;
      }
      const current: Partial<PlayerSummary> = { ...state.profiles.get(steamId64) };
      // Steam shows private data only on public profiles: a profile made non-public loses it.
      if ((summary.communityvisibilitystate ?? current.communityvisibilitystate ?? 3) !== 3) for (const field of PRIVATE_FIELDS) delete current[field];
      state.profiles.set(
        steamId64,
        profile(steamId64, { ...current, personaname: current.personaname ?? `fake ${steamId64}`, ...summary, steamid: steamId64 }),
      );
    },
    setInventory(steamId64, inventory) {
      state.inventories.set(steamId64, inventory);
    },
    failNext(kind, response) {
      state.failures[kind].push({
        status: response.status,
        ...(response.retryAfter === undefined ? {} : { retryAfter: response.retryAfter }),
        ...(response.steamId === undefined ? {} : { steamId: response.steamId }),
        ...(response.stallMs === undefined ? {} : { stallMs: response.stallMs }),
        remaining: response.times ?? 1,
      });
    },
    requests: state.requests,
    inventoryRequests: state.inventoryRequests,
    openid: openid.helpers,
    assetIds: (steamId64) => assetIdsOf(state, steamId64),
    addItems: (steamId64, specs) => addItems(state, steamId64, specs),
    removeItems: (steamId64, assetIds) => removeItems(state, steamId64, assetIds),
    tradeItems: (steamId64, assetIds) => tradeItems(state, steamId64, assetIds),
    endTradeHolds: (steamId64, assetIds) => endTradeHolds(state, steamId64, assetIds),
    protectItems: (steamId64, assetIds, until) => protectItems(state, steamId64, assetIds, until),
    setInventoryVisibility: (steamId64, visibility) => setInventoryVisibility(state, steamId64, visibility),
    issueAccessToken: (steamId64, expiresAt) => issueAccessToken(state, steamId64, expiresAt),
    revokeAccessToken: (token) => revokeAccessToken(state, token),
    recordTrade: (steamId64, trade) => recordTrade(state, steamId64, trade),
    settleTrade: (tradeId, at) => settleTrade(state, tradeId, at),
    reverseTrade: (tradeId, at) => reverseTrade(state, tradeId, at),
    tradesOf: (steamId64) => tradesOf(state, steamId64),
    tradeHistoryRequests: state.tradeHistory.requests,
  };
}

/** The most of `times` (ms) within any window of `windowMs`, checked at each one: the sliding maximum of `inventoryRequests`. */
export function maxInSlidingWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end += 1) {
    while (sorted[end]! - sorted[start]! >= windowMs) start += 1;
    max = Math.max(max, end - start + 1);
  }
  return max;
}
