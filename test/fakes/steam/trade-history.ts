/**
 * IEconService/GetTradeHistory/v1 as api.steampowered.com answers it to an owner access token
 * (docs/design.md §17), and the trades behind it: a trade between an account and a partner, settled when its
 * protection ends, or reversed before (trade protection, July 2025).
 *
 *   GET /IEconService/GetTradeHistory/v1/?access_token=…&max_trades=100&include_failed=true&get_descriptions=false
 *       [&start_after_time=<unix>&start_after_tradeid=<id>[&navigating_back=true]]
 *   → {response: {trades: [{tradeid, steamid_other, time_init, time_escrow_end?, time_settlement?, status,
 *      rollback_trade?, assets_given?: [{appid, contextid, assetid, amount, classid, instanceid, new_assetid,
 *      new_contextid}], assets_received?: […]}], more}}
 *
 * Trades of the token's account, newest first (time_init, then tradeid); `more` when older ones
 * remain past `max_trades`. Paging as Steam pages: `start_after_time` + `start_after_tradeid` give
 * the trades after (older than) that one, or before it (newer, still listed newest first) with
 * `navigating_back=true`. `include_failed` other than true/1 leaves out Failed (4) trades. A bad
 * token is Steam's 401 HTML page (access-tokens.ts); a missing or bad `max_trades` a 400 HTML page.
 *
 * Statuses are Steam's ETradeStatus as public client code spells it (csfloat/extension
 * src/lib/types/steam_constants.ts, from the Valve developer wiki's IEconService page): 0 Init,
 * 1 PreCommitted, 2 Committed, 3 Complete, 4 Failed, 5 PartialSupportRollback, 6 FullSupportRollback,
 * 7 SupportRollback_Selective, 8 RollbackFailed, 9 RollbackAbandoned, 10 InEscrow, 11 EscrowRollback,
 * 12 TradeProtectionRollback (undocumented by Valve, observed by CSFloat: "the original trade gets
 * updated to this status once a rollback occurs, and a new complete trade sends the items back").
 * A trade recorded here is Committed (2) while its items are protected, Complete (3) once settled;
 * a reversal sets it to 12 and adds the return trade (status 3, `rollback_trade` = its tradeid).
 *
 * Inventory effects, on the recording account's fake inventory when it has one (inventory-changes.ts):
 * given items leave it; received items arrive under new asset ids, trade-protected until
 * `time_init` + 7 days. A reversal takes the received items away again and brings the given ones
 * back under new asset ids. The partner's inventory is left alone (its trade history shows the trade).
 */

import { checkAccessToken } from './access-tokens.ts';
import { resolveInventory } from './community-inventory.ts';
import { addItems, FakeInventoryError, protectItems, removeItems, tradeItems } from './inventory-changes.ts';
import { buildItem, type ItemSpec } from './items.ts';
import { type FakeState, retryAfterHeaders, takeFailure } from './state.ts';
import type { InventoryFixture, SteamAsset, SteamAssetProperties, SteamDescription } from './types.ts';

export const TRADE_STATUS = {
  Init: 0,
  PreCommitted: 1,
  Committed: 2,
  Complete: 3,
  Failed: 4,
  PartialSupportRollback: 5,
  FullSupportRollback: 6,
  SupportRollbackSelective: 7,
  RollbackFailed: 8,
  RollbackAbandoned: 9,
  InEscrow: 10,
  EscrowRollback: 11,
  TradeProtectionRollback: 12,
} as const;

/** docs/design.md §17: items received in a trade are protected, and the trade reversible, for 7 days. */
export const PROTECTION_MS = 7 * 86_400_000;
/** Steam's own cap on max_trades. */
const MAX_TRADES = 500;

export type TradeHistoryAsset = {
  appid: 730;
  contextid: string;
  assetid: string;
  amount: string;
  classid: string;
  instanceid: string;
  new_assetid: string;
  new_contextid: string;
};

/** One trade as GetTradeHistory lists it to one side. */
export type TradeHistoryEntry = {
  tradeid: string;
  steamid_other: string;
  time_init: number;
  time_escrow_end?: number;
  time_settlement?: number;
  status: number;
  rollback_trade?: string;
  assets_given?: TradeHistoryAsset[];
  assets_received?: TradeHistoryAsset[];
};

type Stashed = { asset: SteamAsset; description: SteamDescription | undefined; properties: SteamAssetProperties | undefined };

type StoredTrade = {
  tradeid: string;
  /** The side that recorded it, and its partner. */
  account: string;
  partner: string;
  time_init: number;
  time_settlement?: number;
  status: number;
  rollback_trade?: string;
  /** Seen from `account`: assetid in its inventory, new_assetid in the partner's. */
  accountGives: TradeHistoryAsset[];
  /** Seen from `account`: assetid in the partner's inventory, new_assetid in its own. */
  accountReceives: TradeHistoryAsset[];
  /** The given items as they were in the account's fake inventory (a reversal brings them back). */
  stashed: Stashed[];
};

export type TradeHistoryState = {
  trades: StoredTrade[];
  nextTradeId: bigint;
  /** GetTradeHistory requests with their arrival time (ms) and answer, oldest first (the last 10 000). */
  requests: { steamId: string | null; at: number; status: number }[];
};

export const newTradeHistoryState = (): TradeHistoryState => ({ trades: [], nextTradeId: 7_300_000_000_000_000_000n, requests: [] });

export class FakeTradeError extends Error {}

export type RecordTradeInput = {
  partner: string;
  /** Asset ids in the account's fake inventory that it gives. */
  give?: readonly string[];
  /** Items the partner gives (they arrive in the account's inventory, protected). */
  receive?: readonly ItemSpec[];
  /** When the trade was made (default now). */
  at?: Date;
};
export type RecordedTrade = { trade_id: string; given: { asset_id: string; new_asset_id: string }[]; received: { asset_id: string; new_asset_id: string }[] };
export type ReversedTrade = { trade_id: string; rollback_trade_id: string; returned: string[]; lost: string[] };

function nextTradeId(state: FakeState): string {
  state.tradeHistory.nextTradeId += 1n;
  return String(state.tradeHistory.nextTradeId);
}

function nextAssetId(state: FakeState): string {
  state.nextAssetId += 1n;
  return String(state.nextAssetId);
}

function fixtureOf(state: FakeState, steamId64: string): InventoryFixture | null {
  const inventory = resolveInventory(state, steamId64);
  return typeof inventory === 'object' ? inventory : null;
}

function findTrade(state: FakeState, tradeId: string): StoredTrade {
  const trade = state.tradeHistory.trades.find((candidate) => candidate.tradeid === tradeId);
  if (!trade) throw new FakeTradeError(`no trade ${tradeId}`);
  return trade;
}

const tradeAsset = (asset: { classid: string; instanceid: string }, assetId: string, newAssetId: string): TradeHistoryAsset => ({
  appid: 730,
  contextid: '2',
  assetid: assetId,
  amount: '1',
  classid: asset.classid,
  instanceid: asset.instanceid,
  new_assetid: newAssetId,
  new_contextid: '2',
});

/**
 * A trade between `account` and `input.partner`, Committed (2): given items leave the account's
 * inventory, received ones arrive under new asset ids, protected until `at` + 7 days.
 */
export function recordTrade(state: FakeState, account: string, input: RecordTradeInput): RecordedTrade {
  if (account === input.partner) throw new FakeTradeError('an account cannot trade with itself');
  const at = input.at ?? new Date();
  const give = input.give ?? [];
  const receive = input.receive ?? [];
  if (give.length === 0 && receive.length === 0) throw new FakeTradeError('a trade gives or receives at least one item');
  const inventory = fixtureOf(state, account);
  if (give.length > 0 && !inventory) throw new FakeTradeError(`no public inventory for ${account} to give from`);

  const stashed: Stashed[] = [];
  const accountGives: TradeHistoryAsset[] = [];
  for (const assetId of give) {
    const asset = inventory!.assets.find((candidate) => candidate.assetid === assetId);
    if (!asset) throw new FakeTradeError(`asset ${assetId} is not in ${account}'s inventory`);
    stashed.push({
      asset,
      description: inventory!.descriptions.find((d) => d.classid === asset.classid && d.instanceid === asset.instanceid),
      properties: inventory!.asset_properties.find((entry) => entry.assetid === assetId),
    });
    accountGives.push(tradeAsset(asset, assetId, nextAssetId(state)));
  }
  if (give.length > 0) removeItems(state, account, give);

  let receivedIds: string[];
  if (inventory) {
    receivedIds = receive.length > 0 ? addItems(state, account, receive) : [];
    if (receivedIds.length > 0) protectItems(state, account, receivedIds, new Date(at.getTime() + PROTECTION_MS));
  } else {
    receivedIds = receive.map(() => nextAssetId(state));
  }
  const after = fixtureOf(state, account);
  const accountReceives = receive.map((spec, index) => {
    const newId = receivedIds[index]!;
    const asset = after?.assets.find((candidate) => candidate.assetid === newId) ?? buildItem(spec, newId, account).asset;
    return tradeAsset(asset, nextAssetId(state), newId);
  });

  const trade: StoredTrade = {
    tradeid: nextTradeId(state),
    account,
    partner: input.partner,
    time_init: Math.floor(at.getTime() / 1000),
    status: TRADE_STATUS.Committed,
    accountGives,
    accountReceives,
    stashed,
  };
  state.tradeHistory.trades.push(trade);
  return {
    trade_id: trade.tradeid,
    given: accountGives.map((asset) => ({ asset_id: asset.assetid, new_asset_id: asset.new_assetid })),
    received: accountReceives.map((asset) => ({ asset_id: asset.assetid, new_asset_id: asset.new_assetid })),
  };
}

/** Protection over: the trade becomes Complete (3) with `time_settlement` (default now). */
export function settleTrade(state: FakeState, tradeId: string, at = new Date()): void {
  const trade = findTrade(state, tradeId);
  if (trade.status !== TRADE_STATUS.Committed) throw new FakeTradeError(`trade ${tradeId} is not committed (status ${trade.status})`);
  trade.status = TRADE_STATUS.Complete;
  trade.time_settlement = Math.floor(at.getTime() / 1000);
}

/** Puts stashed items back into a fixture (a new object, as inventory-changes.ts does), under their old ids. */
function restore(state: FakeState, steamId64: string, items: readonly Stashed[]): void {
  const current = fixtureOf(state, steamId64);
  if (!current || items.length === 0) return;
  const descriptions = items.flatMap((item) => (item.description ? [item.description] : []));
  const properties = items.flatMap((item) => (item.properties ? [item.properties] : []));
  state.inventories.set(steamId64, {
    ...current,
    assets: [...items.map((item) => item.asset), ...current.assets],
    descriptions: [...current.descriptions, ...descriptions],
    asset_properties: [...properties, ...current.asset_properties],
  });
}

/**
 * The trade is reversed within its protection (docs/design.md §17): its status becomes 12 and a new trade
 * (status 3, `rollback_trade` = its id) moves every item back: what the account received leaves it,
 * what it gave comes back under new asset ids.
 */
export function reverseTrade(state: FakeState, tradeId: string, at = new Date()): ReversedTrade {
  const trade = findTrade(state, tradeId);
  if (trade.status !== TRADE_STATUS.Committed) throw new FakeTradeError(`trade ${tradeId} cannot be reversed (status ${trade.status})`);
  const inventory = fixtureOf(state, trade.account);
  const lost = trade.accountReceives.map((asset) => asset.new_assetid);
  if (inventory) {
    const present = lost.filter((id) => inventory.assets.some((asset) => asset.assetid === id));
    if (present.length > 0) removeItems(state, trade.account, present);
  }
  let returned: string[];
  if (inventory && trade.stashed.length > 0) {
    restore(state, trade.account, trade.stashed);
    returned = tradeItems(
      state,
      trade.account,
      trade.stashed.map((item) => item.asset.assetid),
    );
  } else {
    returned = trade.accountGives.map(() => nextAssetId(state));
  }
  trade.status = TRADE_STATUS.TradeProtectionRollback;
  const back: StoredTrade = {
    tradeid: nextTradeId(state),
    account: trade.account,
    partner: trade.partner,
    time_init: Math.max(Math.floor(at.getTime() / 1000), trade.time_init),
    time_settlement: Math.max(Math.floor(at.getTime() / 1000), trade.time_init),
    status: TRADE_STATUS.Complete,
    rollback_trade: trade.tradeid,
    // Seen from the account: it gives back what it received, and receives what it gave.
    accountGives: trade.accountReceives.map((asset) => ({ ...asset, assetid: asset.new_assetid, new_assetid: nextAssetId(state) })),
    accountReceives: trade.accountGives.map((asset, index) => ({ ...asset, assetid: asset.new_assetid, new_assetid: returned[index]! })),
    stashed: [],
  };
  state.tradeHistory.trades.push(back);
  return { trade_id: trade.tradeid, rollback_trade_id: back.tradeid, returned, lost };
}

/** The trades of `steamId64` as its own GetTradeHistory shows them, newest first. */
export function tradesOf(state: FakeState, steamId64: string): TradeHistoryEntry[] {
  return state.tradeHistory.trades
    .filter((trade) => trade.account === steamId64 || trade.partner === steamId64)
    .map((trade) => viewOf(trade, steamId64))
    .sort(newestFirst);
}

function viewOf(trade: StoredTrade, viewer: string): TradeHistoryEntry {
  const mine = trade.account === viewer;
  // The partner's view: what it gave is what the account received, ids as its own inventory had them.
  const flip = (asset: TradeHistoryAsset): TradeHistoryAsset => ({
    ...asset,
    assetid: asset.new_assetid,
    new_assetid: asset.assetid,
    contextid: asset.new_contextid,
    new_contextid: asset.contextid,
  });
  const given = mine ? trade.accountGives : trade.accountReceives.map(flip);
  const received = mine ? trade.accountReceives : trade.accountGives.map(flip);
  return {
    tradeid: trade.tradeid,
    steamid_other: mine ? trade.partner : trade.account,
    time_init: trade.time_init,
    ...(trade.time_settlement === undefined ? {} : { time_settlement: trade.time_settlement }),
    status: trade.status,
    ...(trade.rollback_trade === undefined ? {} : { rollback_trade: trade.rollback_trade }),
    ...(given.length > 0 ? { assets_given: given } : {}),
    ...(received.length > 0 ? { assets_received: received } : {}),
  };
}

const newestFirst = (a: TradeHistoryEntry, b: TradeHistoryEntry) =>
  b.time_init - a.time_init || (BigInt(b.tradeid) > BigInt(a.tradeid) ? 1 : BigInt(b.tradeid) < BigInt(a.tradeid) ? -1 : 0);
/** Whether `entry` lists after (is older than) the position (time, tradeid). */
const olderThan = (entry: TradeHistoryEntry, time: number, tradeId: bigint) =>
  entry.time_init < time || (entry.time_init === time && BigInt(entry.tradeid) < tradeId);

const html = (status: number, title: string, body = '', headers: Record<string, string> = {}) =>
  new Response(`<html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`, {
    status,
    headers: { 'content-type': 'text/html; charset=UTF-8', ...headers },
  });
const FAILURE_TEXT: Record<number, string> = { 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };
const badRequest = (message: string) => html(400, 'Bad Request', message);

async function answerTradeHistory(state: FakeState, url: URL, logged: { steamId: string | null }): Promise<Response> {
  const who = checkAccessToken(state, url);
  if (who instanceof Response) return who;
  logged.steamId = who.steamId;
  const failure = takeFailure(state, 'trade_history', who.steamId);
  if (failure?.stallMs !== undefined) await Bun.sleep(failure.stallMs);
  if (failure) return html(failure.status, FAILURE_TEXT[failure.status] ?? 'Error', '', retryAfterHeaders(failure));
  const params = url.searchParams;
  const rawMax = params.get('max_trades');
  if (rawMax === null) return badRequest("Required parameter 'max_trades' is missing");
  const max = Number(rawMax);
  if (!/^\d+$/.test(rawMax) || max < 1) return badRequest("Parameter 'max_trades' is invalid");
  const includeFailed = ['true', '1'].includes(params.get('include_failed') ?? '');
  let trades = tradesOf(state, who.steamId).filter((trade) => includeFailed || trade.status !== TRADE_STATUS.Failed);
  const afterTime = params.get('start_after_time');
  if (afterTime !== null) {
    if (!/^\d+$/.test(afterTime)) return badRequest("Parameter 'start_after_time' is invalid");
    const afterId = params.get('start_after_tradeid') ?? '0';
    if (!/^\d+$/.test(afterId)) return badRequest("Parameter 'start_after_tradeid' is invalid");
    const time = Number(afterTime);
    const id = BigInt(afterId);
    if (['true', '1'].includes(params.get('navigating_back') ?? '')) {
      // The page just newer than the position, nearest to it, still listed newest first.
      const newer = trades.filter((trade) => !olderThan(trade, time, id) && !(trade.time_init === time && BigInt(trade.tradeid) === id));
      const page = newer.slice(-Math.min(max, MAX_TRADES));
      return Response.json({ response: { trades: page, more: newer.length > page.length } });
    }
    trades = trades.filter((trade) => olderThan(trade, time, id));
  }
  const page = trades.slice(0, Math.min(max, MAX_TRADES));
  return Response.json({ response: { trades: page, more: trades.length > page.length } });
}

const MAX_LOGGED = 10_000;
const HISTORY_PATH = /^\/IEconService\/GetTradeHistory\/v0*1\/?$/;
const CONTROL_PATH = /^\/_control\/trades(?:\/(\d{1,20})\/(settle|reverse)|\/(\d{17}))?$/;

/**
 * POST /_control/trades (for `npm start`, another process): `{steam_id, partner, give?: asset ids,
 * receive?: ItemSpec[], at?: ISO date}` → RecordedTrade; POST /_control/trades/<tradeid>/settle
 * `{at?}` → `{settled: true}`; POST /_control/trades/<tradeid>/reverse `{at?}` → ReversedTrade;
 * GET /_control/trades/<steamid> → `{trades}` as that account's history shows them; POST
 * /_control/trades `{fail: {status, retry_after?, times?, stall_ms?, steam_id?}}` queues failures.
 */
async function controlTrades(state: FakeState, request: Request, match: RegExpExecArray): Promise<Response> {
  const [, tradeId, action, steamId] = match;
  if (request.method === 'GET' && steamId) return Response.json({ trades: tradesOf(state, steamId) });
  if (request.method !== 'POST' || steamId) return Response.json({ error: 'method not allowed' }, { status: 405 });
  // Settle and reverse take an optional body; an empty one is `{}`.
  const text = await request.text();
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = text.trim() === '' ? {} : JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    body = parsed as Record<string, unknown>;
  } catch {
    return Response.json({ error: 'body must be a JSON object' }, { status: 400 });
  }
  const at = typeof body.at === 'string' ? new Date(body.at) : undefined;
  if (at && Number.isNaN(at.getTime())) return Response.json({ error: 'at must be an ISO date' }, { status: 400 });
  try {
    if (tradeId && action === 'settle') {
      settleTrade(state, tradeId, at);
      return Response.json({ settled: true });
    }
    if (tradeId && action === 'reverse') return Response.json(reverseTrade(state, tradeId, at));
    const fail = body.fail as { status?: unknown; retry_after?: unknown; times?: unknown; stall_ms?: unknown; steam_id?: unknown } | undefined;
    if (fail && typeof fail === 'object') {
      if (typeof fail.status !== 'number') return Response.json({ error: 'fail.status must be a number' }, { status: 400 });
      state.failures.trade_history.push({
        status: fail.status,
        remaining: typeof fail.times === 'number' ? fail.times : 1,
        ...(typeof fail.retry_after === 'number' ? { retryAfter: fail.retry_after } : {}),
        ...(typeof fail.stall_ms === 'number' ? { stallMs: fail.stall_ms } : {}),
        ...(typeof fail.steam_id === 'string' ? { steamId: fail.steam_id } : {}),
      });
      return Response.json({ queued: true });
    }
    if (typeof body.steam_id !== 'string' || typeof body.partner !== 'string')
      return Response.json({ error: 'steam_id and partner are SteamID64s' }, { status: 400 });
    return Response.json(
      recordTrade(state, body.steam_id, {
        partner: body.partner,
        ...(Array.isArray(body.give) ? { give: body.give as string[] } : {}),
        ...(Array.isArray(body.receive) ? { receive: body.receive as ItemSpec[] } : {}),
        ...(at ? { at } : {}),
      }),
    );
  } catch (error) {
    if (error instanceof FakeTradeError || error instanceof FakeInventoryError) return Response.json({ error: error.message }, { status: 400 });
    throw error;
  }
}

/** The fake's trade-history routes (server.ts asks this first); null when the request is not one of them. */
export function routeTradeHistory(state: FakeState, request: Request, url: URL): Promise<Response> | null {
  if (request.method === 'GET' && HISTORY_PATH.test(url.pathname)) {
    const logged = { steamId: null as string | null, at: Date.now(), status: 0 };
    state.tradeHistory.requests.push(logged);
    if (state.tradeHistory.requests.length > MAX_LOGGED) state.tradeHistory.requests.shift();
    return answerTradeHistory(state, url, logged).then((response) => {
      logged.status = response.status;
      return response;
    });
  }
  const control = CONTROL_PATH.exec(url.pathname);
  if (control) return controlTrades(state, request, control);
  return null;
}
