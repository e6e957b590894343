import { Counter } from 'prom-client';
import { insertOutboxEvent } from '../events/outbox.ts';
import type { Config } from '../platform/config.ts';
import type { WorkerResources } from '../platform/resources.ts';
import type { RequestBudget } from '../sources/budget.ts';
import { newId } from '../util/ids.ts';
import { joinUrl } from '../util/url.ts';
import { SecretKeyring } from '../webhooks/secrets.ts';
import { acquireSteamBudget, BudgetDeferred, type SteamBudgetSettings, steamRequestBudget } from './steam-budget.ts';
import { DEFAULT_RETRY_AFTER_MS, isObject, parseSteamJson, type SteamRequestOptions, SteamUnavailableError, steamFailure, steamGet } from './steam-client.ts';
import { dropToken, liveTokenFor } from './steam-token.ts';
import {
  advanceTradePoll,
  type ClaimedTradePoll,
  claimDueTradePoll,
  extendTradePollClaim,
  findUnrecordedReversals,
  insertReversal,
  lockClaimedTradePoll,
  type ParsedTrade,
  type PendingReversal,
  recordTradePollFailure,
  releaseTradePollClaim,
  type StoredTradeAsset,
  setReversalEvent,
  syncTradePolls,
  upsertTrades,
} from './trades-repository.ts';

/**
 * Reversal tracking (docs/design.md §17). For every live connected account with a live owner token whose
 * workspace subscribes to trade.reversed or item.protection_ended, runs of the `trade_history.read`
 * job (maintenance pool) read Steam's `IEconService/GetTradeHistory/v1` every
 * TRADE_HISTORY_INTERVAL_SECONDS, one unit of the shared Steam budget per page (steam-budget.ts, the
 * inventory watch's), store each trade once (status updated in place) and detect reversals: a trade
 * at status 12 (TradeProtectionRollback) joined to its return trade by `rollback_trade`. Each
 * reversal is recorded once, and trade.reversed goes to the outbox in that same transaction.
 *
 * A read that Steam fails (429, 5xx, timeout, a body that is not a trade history) stores nothing and
 * sends nothing: the account is read again at its next interval (a 429 also blocks the budget for its
 * Retry-After). A 401/403 means Steam refuses the token: it is dropped (`steam_token.dropped`,
 * audited) and the poll ends. The token travels only in the request's query string: never in a job
 * payload, a log line or an audit record.
 */

export const tradeHistoryReads = new Counter({
  name: 'cs2_trade_history_reads_total',
  help: 'Trade-history reads by outcome: stored, failed (Steam), refused (token dropped), no_token, gone (disconnected or unsubscribed meanwhile), deferred (run ended waiting for budget)',
  labelNames: ['outcome'] as const,
  registers: [],
});
export const tradeHistorySteamRequests = new Counter({
  name: 'cs2_trade_history_steam_requests_total',
  help: 'GetTradeHistory requests the poll made (each spent one unit of the shared Steam budget)',
  registers: [],
});
export const tradeHistorySkipped = new Counter({
  name: 'cs2_trade_history_skipped_total',
  help: 'Entries of GetTradeHistory answers skipped as unreadable, by kind (trade, asset)',
  labelNames: ['kind'] as const,
  registers: [],
});
export const tradeReversalsRecorded = new Counter({
  name: 'cs2_trade_reversals_total',
  help: 'Reversals recorded, by whether trade.reversed was sent (sent, not_sent)',
  labelNames: ['event'] as const,
  registers: [],
});
for (const outcome of ['stored', 'failed', 'refused', 'no_token', 'gone', 'deferred']) tradeHistoryReads.inc({ outcome }, 0);
for (const kind of ['trade', 'asset']) tradeHistorySkipped.inc({ kind }, 0);
for (const event of ['sent', 'not_sent']) tradeReversalsRecorded.inc({ event }, 0);
/** The shared budget's counters are registered with the inventory watch's metrics. */
export const tradeHistoryMetrics = [tradeHistoryReads, tradeHistorySteamRequests, tradeHistorySkipped, tradeReversalsRecorded];

/** Steam's cap per page, and the page size we ask for (docs/design.md §17's request). */
export const TRADE_HISTORY_PAGE_SIZE = 100;
/**
 * Pages are read back to trades this old: a trade can be reversed only during its 7-day protection,
 * and settles when it ends, so older trades no longer change (a day of margin).
 */
export const TRADE_HISTORY_LOOKBACK_MS = 8 * 86_400_000;
/** At most this many pages per read (500 trades within the lookback); the rest waits for the next. */
const MAX_PAGES_PER_READ = 5;
/** A return trade not in the history this long after status 12 was first read: the reversal is announced without it. */
export const RETURN_TRADE_GRACE_MS = 60 * 60_000;
/** Steam's times are whole seconds: a reversal this close before the poll began still counts as after it. */
const REVERSAL_CLOCK_SLACK_MS = 60_000;
const CLAIM_LEASE_MS = 5 * 60_000;
const MAX_PAGE_WAIT_MS = 3 * 60_000;
const DEFAULT_PAGE_TIMEOUT_MS = 10_000;
/** A real page of 100 trades is a few hundred KB; anything far larger is not a trade history. */
const MAX_BODY_CHARS = 8 * 1024 * 1024;

/** Steam refused the owner token (401, or 403 for a token of another account). */
export class TradeHistoryRefusedError extends Error {
  constructor(readonly status: number) {
    super(`steam refused the owner token (HTTP ${status})`);
    this.name = 'TradeHistoryRefusedError';
  }
}

export type TradeHistoryPage = {
  trades: ParsedTrade[];
  more: boolean;
  /** Entries of the answer skipped as unreadable. */
  skipped: { trades: number; assets: number };
};

// Ids are 64-bit numbers Steam sends as decimal text (some clients' JSON gives numbers: a safe integer is read too).
const ID = /^[0-9]{1,20}$/;
const STEAM_ID64 = /^[0-9]{17}$/;
/** Unix seconds Postgres and JavaScript both hold (1970 … 9999). */
const MAX_UNIX_SECONDS = 253_402_300_799;

function idOf(value: unknown): string | null {
  if (typeof value === 'string') return ID.test(value) ? value : null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  return null;
}

function instantOf(value: unknown): Date | null {
  const seconds = typeof value === 'string' && /^[0-9]{1,12}$/.test(value) ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds <= 0 || seconds > MAX_UNIX_SECONDS) return null;
  return new Date(seconds * 1000);
}

/**
 * One asset of `assets_given` / `assets_received`, as Steam sends it:
 *   {"appid":730,"contextid":"2","assetid":"44567819999","amount":"1","classid":"3069447407",
 *    "instanceid":"2649579725","new_assetid":"60000000001","new_contextid":"2"}
 */
function parseAsset(raw: unknown): StoredTradeAsset | null {
  if (!isObject(raw)) return null;
  const appid =
    typeof raw.appid === 'number' && Number.isSafeInteger(raw.appid) && raw.appid >= 0
      ? raw.appid
      : typeof raw.appid === 'string' && /^[0-9]{1,10}$/.test(raw.appid)
        ? Number(raw.appid)
        : null;
  const contextid = idOf(raw.contextid);
  const assetid = idOf(raw.assetid);
  const amount = idOf(raw.amount ?? '1');
  const classid = idOf(raw.classid ?? '0');
  const instanceid = idOf(raw.instanceid ?? '0');
  if (appid === null || contextid === null || assetid === null || amount === null || classid === null || instanceid === null) return null;
  const newAssetId = raw.new_assetid === undefined ? null : idOf(raw.new_assetid);
  const newContextId = raw.new_contextid === undefined ? null : idOf(raw.new_contextid);
  if ((raw.new_assetid !== undefined && newAssetId === null) || (raw.new_contextid !== undefined && newContextId === null)) return null;
  return { appid, contextid, assetid, amount, classid, instanceid, new_assetid: newAssetId, new_contextid: newContextId };
}

function parseAssets(raw: unknown, skipped: { assets: number }): StoredTradeAsset[] | null {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const assets: StoredTradeAsset[] = [];
  for (const entry of raw) {
    const asset = parseAsset(entry);
    if (asset) assets.push(asset);
    else skipped.assets += 1;
  }
  return assets;
}

/**
 * One trade, as Steam sends it:
 *   {"tradeid":"7300000000000000002","steamid_other":"76561198067890123","time_init":1786384800,
 *    "time_settlement":1786384800,"status":3,"rollback_trade":"7300000000000000001",
 *    "assets_given":[…],"assets_received":[…]}
 * Null when a field the record needs is missing or of the wrong type (the caller counts it).
 */
function parseTrade(raw: unknown, skipped: { assets: number }): ParsedTrade | null {
  if (!isObject(raw)) return null;
  const tradeId = idOf(raw.tradeid);
  const counterparty = typeof raw.steamid_other === 'string' && STEAM_ID64.test(raw.steamid_other) ? raw.steamid_other : null;
  const initiatedAt = instantOf(raw.time_init);
  const status = typeof raw.status === 'number' && Number.isInteger(raw.status) && raw.status >= 0 && raw.status <= 255 ? raw.status : null;
  if (tradeId === null || counterparty === null || initiatedAt === null || status === null) return null;
  const given = parseAssets(raw.assets_given, skipped);
  const received = parseAssets(raw.assets_received, skipped);
  if (given === null || received === null) return null;
  // Steam sends 0 for "none" in its optional times and ids.
  const rollback = raw.rollback_trade === undefined ? null : idOf(raw.rollback_trade);
  return {
    trade_id: tradeId,
    counterparty_steam_id: counterparty,
    status,
    initiated_at: initiatedAt,
    escrow_ends_at: instantOf(raw.time_escrow_end),
    settled_at: instantOf(raw.time_settlement),
    rollback_trade_id: rollback === '0' ? null : rollback,
    assets_given: given,
    assets_received: received,
  };
}

/**
 * A GetTradeHistory answer `{response: {trades: […], more}}` read defensively: trades and assets
 * that cannot be read are skipped and counted, a repeated tradeid keeps its first entry. A body
 * without `response` (or whose `trades` is not a list) is not a trade history: SteamUnavailableError.
 */
export function parseTradeHistory(body: unknown): TradeHistoryPage {
  const response = isObject(body) ? body.response : undefined;
  if (!isObject(response)) throw new SteamUnavailableError('unexpected body (no response object)', DEFAULT_RETRY_AFTER_MS);
  const rawTrades = response.trades ?? [];
  if (!Array.isArray(rawTrades)) throw new SteamUnavailableError('unexpected body (response.trades is not a list)', DEFAULT_RETRY_AFTER_MS);
  const skipped = { trades: 0, assets: 0 };
  const seen = new Set<string>();
  const trades: ParsedTrade[] = [];
  for (const raw of rawTrades) {
    const trade = parseTrade(raw, skipped);
    if (!trade || seen.has(trade.trade_id)) {
      skipped.trades += 1;
      continue;
    }
    seen.add(trade.trade_id);
    trades.push(trade);
  }
  return { trades, more: response.more === true || response.more === 1, skipped };
}

/**
 * One GET of the owner's trade history, newest first, after `position` (the last trade of the
 * previous page) when given. 401/403 → TradeHistoryRefusedError; any other failure →
 * SteamUnavailableError. The token is in the query string only; no error message carries the URL.
 */
export async function fetchTradeHistoryPage(
  config: Pick<Config, 'STEAM_API_URL'>,
  accessToken: string,
  position: { time: Date; tradeId: string } | null,
  options: SteamRequestOptions,
): Promise<TradeHistoryPage> {
  const query = new URLSearchParams({
    access_token: accessToken,
    max_trades: String(TRADE_HISTORY_PAGE_SIZE),
    include_failed: 'true',
    get_descriptions: 'false',
  });
  if (position) {
    query.set('start_after_time', String(Math.floor(position.time.getTime() / 1000)));
    query.set('start_after_tradeid', position.tradeId);
  }
  const raw = await steamGet(joinUrl(config.STEAM_API_URL, `IEconService/GetTradeHistory/v1/?${query}`), options);
  if (raw.status === 401 || raw.status === 403) throw new TradeHistoryRefusedError(raw.status);
  if (raw.status < 200 || raw.status > 299) throw steamFailure(raw, options);
  if (raw.text.length > MAX_BODY_CHARS) throw new SteamUnavailableError(`body too large (${raw.text.length} characters)`, DEFAULT_RETRY_AFTER_MS);
  return parseTradeHistory(parseSteamJson(raw));
}

export type TradeHistoryDeps = Pick<WorkerResources, 'config' | 'sql' | 'redis' | 'log' | 'now'> & {
  /** Default: STEAM_INVENTORY_REQUESTS_PER_MINUTE per minute, shared with the inventory watch. */
  budget?: SteamBudgetSettings;
  /** One Steam request's timeout (default 10 s). */
  pageTimeoutMs?: number;
};

export type TradeHistoryRunReport = { started: number; ended: number; reads: Record<string, number>; reversals: number };
type ReadOutcome = 'stored' | 'failed' | 'refused' | 'no_token' | 'gone' | 'deferred';

/**
 * One run: starts and ends polls, then reads due accounts one after another, longest due first,
 * until none is due or `runForMs` has passed (a read already begun is finished). Runs in several
 * processes at once claim different accounts.
 */
export async function runTradeHistory(deps: TradeHistoryDeps, options: { runForMs: number }): Promise<TradeHistoryRunReport> {
  const runEnds = Date.now() + options.runForMs;
  const synced = await syncTradePolls(deps.sql, deps.now());
  if (synced.started > 0 || synced.ended > 0) deps.log.info(synced, 'trade-history polls started or ended');
  const budget = steamRequestBudget(deps, deps.budget);
  const keyring = SecretKeyring.ofConfig(deps.config);
  const reads: Record<string, number> = {};
  let reversals = 0;
  while (Date.now() < runEnds) {
    const claim = newId();
    const claimedAt = deps.now();
    const poll = await claimDueTradePoll(deps.sql, claimedAt, new Date(claimedAt.getTime() + CLAIM_LEASE_MS), claim);
    if (!poll) break;
    const result = await readTradeHistory(deps, budget, keyring, poll, claim, claimedAt, runEnds);
    reads[result.outcome] = (reads[result.outcome] ?? 0) + 1;
    reversals += result.reversals;
    tradeHistoryReads.inc({ outcome: result.outcome });
    if (result.outcome === 'deferred') break;
  }
  return { started: synced.started, ended: synced.ended, reads, reversals };
}

async function readTradeHistory(
  deps: TradeHistoryDeps,
  budget: RequestBudget,
  keyring: SecretKeyring,
  poll: ClaimedTradePoll,
  claim: string,
  claimedAt: Date,
  runEnds: number,
): Promise<{ outcome: ReadOutcome; reversals: number }> {
  const log = deps.log.child({ account_id: Number(poll.account_id), steam_id: poll.steam_id });
  const nextReadAt = new Date(claimedAt.getTime() + deps.config.TRADE_HISTORY_INTERVAL_SECONDS * 1000);
  const accessToken = await liveTokenFor(deps.sql, keyring, poll.account_id, claimedAt);
  if (!accessToken) {
    // Expired (dropped by liveTokenFor) or not openable under the configured keys: the next sync ends the poll if it is gone.
    await recordTradePollFailure(deps.sql, poll.account_id, claim, nextReadAt, 'no live owner token');
    return { outcome: 'no_token', reversals: 0 };
  }
  const requestOptions = { timeoutMs: deps.pageTimeoutMs ?? DEFAULT_PAGE_TIMEOUT_MS, now: deps.now };
  const lookbackFrom = claimedAt.getTime() - TRADE_HISTORY_LOOKBACK_MS;
  const trades: ParsedTrade[] = [];
  const skipped = { trades: 0, assets: 0 };
  try {
    let position: { time: Date; tradeId: string } | null = null;
    for (let page = 0; page < MAX_PAGES_PER_READ; page += 1) {
      // The first page waits only while the run lasts (then the poll stays due, untouched); a later
      // page finishes the read it belongs to.
      const giveUpAt = page === 0 ? runEnds : Date.now() + MAX_PAGE_WAIT_MS;
      if (!(await extendTradePollClaim(deps.sql, poll.account_id, claim, new Date(deps.now().getTime() + CLAIM_LEASE_MS)))) throw new BudgetDeferred();
      await acquireSteamBudget(budget, giveUpAt, 'trade_history');
      tradeHistorySteamRequests.inc();
      const read = await fetchTradeHistoryPage(deps.config, accessToken, position, requestOptions);
      skipped.trades += read.skipped.trades;
      skipped.assets += read.skipped.assets;
      trades.push(...read.trades);
      const last = read.trades[read.trades.length - 1];
      if (!read.more || !last || last.initiated_at.getTime() < lookbackFrom) break;
      position = { time: last.initiated_at, tradeId: last.trade_id };
    }
  } catch (error) {
    if (error instanceof BudgetDeferred) {
      await releaseTradePollClaim(deps.sql, poll.account_id, claim);
      return { outcome: 'deferred', reversals: 0 };
    }
    if (error instanceof TradeHistoryRefusedError) {
      // docs/design.md §17: a refused token is dropped (audited); the next sync ends the poll.
      await dropToken(deps.sql, poll.account_id, 'refused', { now: deps.now() });
      await recordTradePollFailure(deps.sql, poll.account_id, claim, nextReadAt, `token refused (HTTP ${error.status})`);
      log.warn({ status: error.status }, 'Steam refused the owner token for the trade history; token dropped');
      return { outcome: 'refused', reversals: 0 };
    }
    if (error instanceof SteamUnavailableError) {
      // A 429 holds every process off for its Retry-After (the budget's block key).
      if (error.throttled) await budget.blockUntil(new Date(deps.now().getTime() + error.retryAfterMs));
      log.warn({ reason: error.reason }, 'trade history read failed; nothing stored, read again at the next interval');
      await recordTradePollFailure(deps.sql, poll.account_id, claim, nextReadAt, error.reason);
      return { outcome: 'failed', reversals: 0 };
    }
    await releaseTradePollClaim(deps.sql, poll.account_id, claim);
    throw error;
  }
  if (skipped.trades > 0 || skipped.assets > 0) {
    tradeHistorySkipped.inc({ kind: 'trade' }, skipped.trades);
    tradeHistorySkipped.inc({ kind: 'asset' }, skipped.assets);
    log.warn({ skipped_trades: skipped.trades, skipped_assets: skipped.assets }, 'trade history entries skipped as unreadable');
  }

  // Pages can overlap when trades arrive between them: the first (newest) copy wins.
  const unique = [...new Map(trades.map((trade) => [trade.trade_id, trade] as const)).values()].reverse();
  const readAt = deps.now();
  const stored = await deps.sql.begin(async (tx) => {
    const locked = await lockClaimedTradePoll(tx, poll.account_id, claim);
    // Disconnected or unsubscribed while Steam was read: nothing is stored or sent.
    if (!locked) return null;
    await upsertTrades(tx, { accountId: poll.account_id, workspaceId: poll.workspace_id }, unique, readAt);
    let sent = 0;
    for (const pending of await findUnrecordedReversals(tx, poll.account_id)) {
      if (!pending.back && readAt.getTime() - (pending.trade.reversed_at ?? readAt).getTime() < RETURN_TRADE_GRACE_MS) continue;
      const reversal = reversalPayload(poll, pending);
      const announce = locked.sendsReversals && Date.parse(reversal.reversed_at) >= poll.created_at.getTime() - REVERSAL_CLOCK_SLACK_MS;
      const recorded = await insertReversal(tx, {
        accountId: poll.account_id,
        workspaceId: poll.workspace_id,
        tradeId: pending.trade.trade_id,
        rollbackTradeId: reversal.rollback_trade_id,
        counterpartySteamId: reversal.counterparty_steam_id,
        reversedAt: new Date(reversal.reversed_at),
        eventId: null,
        now: readAt,
      });
      if (!recorded) continue;
      if (!announce) {
        tradeReversalsRecorded.inc({ event: 'not_sent' });
        continue;
      }
      const eventId = await insertOutboxEvent(tx, { type: 'trade.reversed', workspaceId: poll.workspace_id, at: readAt, payload: reversal });
      await setReversalEvent(tx, poll.account_id, pending.trade.trade_id, eventId);
      tradeReversalsRecorded.inc({ event: 'sent' });
      sent += 1;
    }
    await advanceTradePoll(tx, poll.account_id, readAt, nextReadAt);
    return { sent };
  });
  if (!stored) return { outcome: 'gone', reversals: 0 };
  if (stored.sent > 0) log.info({ reversals: stored.sent }, 'trade reversals sent');
  return { outcome: 'stored', reversals: stored.sent };
}

/** The asset ids of one side of a stored trade, as they are in this account's inventory. */
const idsIn = (assets: readonly StoredTradeAsset[], which: 'assetid' | 'new_assetid') => assets.flatMap((asset) => (asset[which] ? [asset[which]!] : []));

export type TradeReversedPayload = {
  account_id: number;
  steam_id: string;
  trade_id: string;
  rollback_trade_id: string | null;
  counterparty_steam_id: string;
  initiated_at: string;
  reversed_at: string;
  assets_returned: string[];
  assets_lost: string[];
};

/**
 * trade.reversed from this account's point of view (docs/design.md §17): what came back to it (the return
 * trade's received assets under their new ids) and what left it (the return trade's given assets,
 * as its inventory had them). Without the return trade (not in the history after the grace period):
 * what the reversed trade had brought it is what it lost, and what comes back is not known yet.
 */
export function reversalPayload(poll: Pick<ClaimedTradePoll, 'account_id' | 'steam_id'>, { trade, back }: PendingReversal): TradeReversedPayload {
  return {
    account_id: Number(poll.account_id),
    steam_id: poll.steam_id,
    trade_id: trade.trade_id,
    rollback_trade_id: back?.trade_id ?? null,
    counterparty_steam_id: trade.counterparty_steam_id,
    initiated_at: trade.initiated_at.toISOString(),
    reversed_at: (back?.initiated_at ?? trade.reversed_at ?? new Date()).toISOString(),
    assets_returned: back ? idsIn(back.assets_received, 'new_assetid') : [],
    assets_lost: back ? idsIn(back.assets_given, 'assetid') : idsIn(trade.assets_received, 'new_assetid'),
  };
}
