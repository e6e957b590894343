import type { EventType } from '../events/outbox.ts';
import type { Queryable, TransactionSql } from '../platform/db.ts';

/**
 * Repository of connected accounts' Steam trades (docs/design.md §17; tables gameplatform_trades,
 * gameplatform_trade_reversals and gameplatform_trade_polls, sql/0022_trades.sql), one function per
 * query. The poll (trade-history.ts) writes them; the API (trades.ts) and trade intents read them.
 */

/** The webhook event types that make a workspace's accounts with owner tokens polled. */
export const TRADE_POLL_EVENT_TYPES = ['trade.reversed', 'item.protection_ended'] as const satisfies readonly EventType[];

/** Steam's ETradeStatus 12: the trade was reversed within its trade protection. */
export const TRADE_PROTECTION_ROLLBACK = 12;
/** Steam's ETradeStatus 4: the trade failed; no item moved. */
export const TRADE_FAILED = 4;

/** One asset of a trade as stored: Steam's fields, every id as decimal text. */
export type StoredTradeAsset = {
  appid: number;
  contextid: string;
  assetid: string;
  amount: string;
  classid: string;
  instanceid: string;
  new_assetid: string | null;
  new_contextid: string | null;
};

/** One trade of a GetTradeHistory answer, read (trade-history.ts parseTradeHistory). */
export type ParsedTrade = {
  trade_id: string;
  counterparty_steam_id: string;
  status: number;
  initiated_at: Date;
  escrow_ends_at: Date | null;
  settled_at: Date | null;
  rollback_trade_id: string | null;
  assets_given: StoredTradeAsset[];
  assets_received: StoredTradeAsset[];
};

export type TradeRow = ParsedTrade & {
  account_id: string;
  reversed_at: Date | null;
  /** initiated_at with microseconds, for cursor positions. */
  initiated_at_text: string;
};

export type ClaimedTradePoll = { account_id: string; workspace_id: string; steam_id: string; created_at: Date; read_at: Date | null };

// Whether the workspace in `workspaceColumn` has a live endpoint subscribed to a poll event type.
const subscribedWorkspace = (db: Queryable, workspaceColumn: 'a.workspace_id' | 'p.workspace_id') => db`
  exists (
    select 1 from webhook_endpoints w
    where w.workspace_id = ${db.unsafe(workspaceColumn)} and w.deleted_at is null and w.disabled_at is null
      and w.event_types && ${TRADE_POLL_EVENT_TYPES as unknown as string[]}::text[])`;

/**
 * Starts a poll (due now) for every live account with a stored owner token whose workspace has a
 * live endpoint subscribed to a poll event type, and ends the polls of accounts that lost any of
 * those. (Whether the token still lives is decided at each read: liveTokenFor drops a dead one.)
 */
export async function syncTradePolls(db: Queryable, now: Date): Promise<{ started: number; ended: number }> {
  const started = await db`
    insert into gameplatform_trade_polls (account_id, workspace_id, steam_id, created_at, next_read_at)
    select a.account_id, a.workspace_id, a.steam_id, ${now}, ${now}
    from gameplatform_accounts a join gameplatform_steam_tokens t on t.account_id = a.account_id
    where a.disconnected_at is null and ${subscribedWorkspace(db, 'a.workspace_id')}
    on conflict (account_id) do nothing`;
  const ended = await db`
    delete from gameplatform_trade_polls p
    where not exists (select 1 from gameplatform_accounts a where a.account_id = p.account_id and a.disconnected_at is null)
       or not exists (select 1 from gameplatform_steam_tokens t where t.account_id = p.account_id)
       or not ${subscribedWorkspace(db, 'p.workspace_id')}`;
  return { started: started.count, ended: ended.count };
}

/** Claims the poll due longest, skipping those another process holds, as a lease until `claimedUntil`. */
export async function claimDueTradePoll(db: Queryable, now: Date, claimedUntil: Date, token: string): Promise<ClaimedTradePoll | null> {
  const [row] = await db<ClaimedTradePoll[]>`
    update gameplatform_trade_polls p set claim_token = ${token}, claimed_until = ${claimedUntil}, last_attempt_at = ${now}
    where p.account_id = (
      select account_id from gameplatform_trade_polls
      where next_read_at <= ${now} and (claimed_until is null or claimed_until <= ${now})
      order by next_read_at, account_id
      limit 1
      for update skip locked)
    returning p.account_id::text as account_id, p.workspace_id, p.steam_id, p.created_at, p.read_at`;
  return row ?? null;
}

/** Extends a held claim (before each page's budget wait); false when the claim is no longer ours. */
export async function extendTradePollClaim(db: Queryable, accountId: string, token: string, claimedUntil: Date): Promise<boolean> {
  const rows = await db`update gameplatform_trade_polls set claimed_until = ${claimedUntil} where account_id = ${accountId}::bigint and claim_token = ${token}`;
  return rows.count === 1;
}

/** Gives a claim back without reading (the run ran out of time): the poll stays due. */
export async function releaseTradePollClaim(db: Queryable, accountId: string, token: string): Promise<void> {
  await db`update gameplatform_trade_polls set claim_token = null, claimed_until = null where account_id = ${accountId}::bigint and claim_token = ${token}`;
}

/** A failed read: nothing stored changes, the poll is due again at `nextReadAt`. */
export async function recordTradePollFailure(db: Queryable, accountId: string, token: string, nextReadAt: Date, reason: string): Promise<void> {
  await db`
    update gameplatform_trade_polls
    set claim_token = null, claimed_until = null, next_read_at = ${nextReadAt}, failures = failures + 1, last_error = ${reason.slice(0, 500)}
    where account_id = ${accountId}::bigint and claim_token = ${token}`;
}

/**
 * The claimed poll locked for storing its read, with whether the workspace's live endpoints
 * subscribe to trade.reversed; null when the claim is gone or the account was disconnected
 * meanwhile. The account row is share-locked so a disconnect waits for this transaction.
 */
export async function lockClaimedTradePoll(tx: TransactionSql, accountId: string, token: string): Promise<{ sendsReversals: boolean } | null> {
  const [row] = await tx<{ sends_reversals: boolean }[]>`
    select exists (
        select 1 from webhook_endpoints w
        where w.workspace_id = p.workspace_id and w.deleted_at is null and w.disabled_at is null
          and 'trade.reversed' = any(w.event_types)) as sends_reversals
    from gameplatform_trade_polls p join gameplatform_accounts a on a.account_id = p.account_id
    where p.account_id = ${accountId}::bigint and p.claim_token = ${token} and a.disconnected_at is null
    for update of p for share of a`;
  return row ? { sendsReversals: row.sends_reversals } : null;
}

/** A good read stored: the poll is due again at `nextReadAt`. */
export async function advanceTradePoll(tx: TransactionSql, accountId: string, readAt: Date, nextReadAt: Date): Promise<void> {
  await tx`
    update gameplatform_trade_polls
    set read_at = ${readAt}, next_read_at = ${nextReadAt}, claim_token = null, claimed_until = null, failures = 0, last_error = null
    where account_id = ${accountId}::bigint`;
}

/**
 * Stores a read's trades: new ones inserted, known ones updated in place when Steam changed them
 * (status, settlement, escrow, rollback link, assets). A trade first seen at status 12 or moving to
 * it gets `reversed_at` = now (the return trade's time replaces it when joined). One statement.
 */
export async function upsertTrades(
  tx: TransactionSql,
  account: { accountId: string; workspaceId: string },
  trades: readonly ParsedTrade[],
  now: Date,
): Promise<void> {
  if (trades.length === 0) return;
  const rows = trades.map((trade) => ({
    trade_id: trade.trade_id,
    counterparty_steam_id: trade.counterparty_steam_id,
    status: trade.status,
    initiated_at: trade.initiated_at.toISOString(),
    escrow_ends_at: trade.escrow_ends_at?.toISOString() ?? null,
    settled_at: trade.settled_at?.toISOString() ?? null,
    rollback_trade_id: trade.rollback_trade_id,
    assets_given: trade.assets_given,
    assets_received: trade.assets_received,
  }));
  await tx`
    insert into gameplatform_trades as t (account_id, trade_id, workspace_id, counterparty_steam_id, status, initiated_at, escrow_ends_at,
                                          settled_at, rollback_trade_id, assets_given, assets_received, reversed_at, first_seen_at, updated_at)
    select ${account.accountId}::bigint, r.trade_id, ${account.workspaceId}::uuid, r.counterparty_steam_id, r.status, r.initiated_at, r.escrow_ends_at,
           r.settled_at, r.rollback_trade_id, r.assets_given, r.assets_received,
           case when r.status = ${TRADE_PROTECTION_ROLLBACK} then ${now}::timestamptz end, ${now}, ${now}
    from jsonb_to_recordset(${tx.json(rows as never)}::jsonb) as r (
      trade_id text, counterparty_steam_id text, status smallint, initiated_at timestamptz, escrow_ends_at timestamptz,
      settled_at timestamptz, rollback_trade_id text, assets_given jsonb, assets_received jsonb)
    on conflict (account_id, trade_id) do update
    set status = excluded.status, escrow_ends_at = excluded.escrow_ends_at, settled_at = excluded.settled_at,
        rollback_trade_id = excluded.rollback_trade_id, assets_given = excluded.assets_given, assets_received = excluded.assets_received,
        counterparty_steam_id = excluded.counterparty_steam_id, initiated_at = excluded.initiated_at,
        reversed_at = case when excluded.status = ${TRADE_PROTECTION_ROLLBACK} then coalesce(t.reversed_at, excluded.reversed_at) else t.reversed_at end,
        updated_at = excluded.updated_at
    where (t.status, t.escrow_ends_at, t.settled_at, t.rollback_trade_id, t.assets_given, t.assets_received, t.counterparty_steam_id, t.initiated_at)
          is distinct from
          (excluded.status, excluded.escrow_ends_at, excluded.settled_at, excluded.rollback_trade_id, excluded.assets_given, excluded.assets_received,
           excluded.counterparty_steam_id, excluded.initiated_at)`;
}

export type PendingReversal = {
  trade: TradeRow;
  /** The return trade (its rollback_trade is this trade), when the account's history holds it. */
  back: TradeRow | null;
};

const TRADE_COLUMNS = (db: Queryable, alias: string) =>
  db.unsafe(`
  ${alias}.account_id::text as account_id, ${alias}.trade_id, ${alias}.counterparty_steam_id, ${alias}.status, ${alias}.initiated_at,
  ${alias}.escrow_ends_at, ${alias}.settled_at, ${alias}.rollback_trade_id, ${alias}.assets_given, ${alias}.assets_received, ${alias}.reversed_at,
  to_char(${alias}.initiated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as initiated_at_text`);

/** The account's trades at status 12 with no reversal recorded yet, each with its return trade if stored. */
export async function findUnrecordedReversals(tx: TransactionSql, accountId: string): Promise<PendingReversal[]> {
  const rows = await tx<{ trade: TradeRow; back: TradeRow | null }[]>`
    select to_jsonb(t) as trade, to_jsonb(b) as back
    from (select ${TRADE_COLUMNS(tx, 'g')} from gameplatform_trades g
          where g.account_id = ${accountId}::bigint and g.status = ${TRADE_PROTECTION_ROLLBACK}
            and not exists (select 1 from gameplatform_trade_reversals r where r.account_id = g.account_id and r.trade_id = g.trade_id)) t
    left join lateral (
      select ${TRADE_COLUMNS(tx, 'g2')} from gameplatform_trades g2
      where g2.account_id = ${accountId}::bigint and g2.rollback_trade_id = t.trade_id
      order by g2.initiated_at, g2.trade_id
      limit 1) b on true
    order by t.initiated_at, t.trade_id`;
  const revive = (row: Record<string, unknown>): TradeRow => ({
    ...(row as unknown as TradeRow),
    initiated_at: new Date(row.initiated_at as string),
    escrow_ends_at: row.escrow_ends_at ? new Date(row.escrow_ends_at as string) : null,
    settled_at: row.settled_at ? new Date(row.settled_at as string) : null,
    reversed_at: row.reversed_at ? new Date(row.reversed_at as string) : null,
  });
  return rows.map((row) => ({
    trade: revive(row.trade as unknown as Record<string, unknown>),
    back: row.back ? revive(row.back as unknown as Record<string, unknown>) : null,
  }));
}

/**
 * Records a reversal once: false when it was recorded before (another read, another process).
 * Its trade's `reversed_at` becomes the reversal's instant.
 */
export async function insertReversal(
  tx: TransactionSql,
  reversal: {
    accountId: string;
    workspaceId: string;
    tradeId: string;
    rollbackTradeId: string | null;
    counterpartySteamId: string;
    reversedAt: Date;
    eventId: string | null;
    now: Date;
  },
): Promise<boolean> {
  const rows = await tx`
    insert into gameplatform_trade_reversals (account_id, trade_id, workspace_id, rollback_trade_id, counterparty_steam_id, reversed_at, event_id, recorded_at)
    values (${reversal.accountId}::bigint, ${reversal.tradeId}, ${reversal.workspaceId}, ${reversal.rollbackTradeId}, ${reversal.counterpartySteamId},
            ${reversal.reversedAt}, ${reversal.eventId}, ${reversal.now})
    on conflict (account_id, trade_id) do nothing
    returning trade_id`;
  if (rows.length === 0) return false;
  await tx`update gameplatform_trades set reversed_at = ${reversal.reversedAt} where account_id = ${reversal.accountId}::bigint and trade_id = ${reversal.tradeId}`;
  return true;
}

/** Links a recorded reversal to the trade.reversed event written in the same transaction. */
export async function setReversalEvent(tx: TransactionSql, accountId: string, tradeId: string, eventId: string): Promise<void> {
  await tx`update gameplatform_trade_reversals set event_id = ${eventId} where account_id = ${accountId}::bigint and trade_id = ${tradeId}`;
}

export type TradePosition = { initiated_at: string; trade_id: string };

/** The account's stored trades, newest first (initiated_at, then trade_id), optionally of one status. */
export async function listTradesOfAccount(
  db: Queryable,
  accountId: string,
  filter: { status: number | null },
  after: TradePosition | null,
  limit: number,
): Promise<{ rows: TradeRow[]; next: TradePosition | null }> {
  const rows = await db<TradeRow[]>`
    select ${TRADE_COLUMNS(db, 'g')} from gameplatform_trades g
    where g.account_id = ${accountId}::bigint
      ${filter.status === null ? db`` : db`and g.status = ${filter.status}`}
      ${after ? db`and (g.initiated_at, g.trade_id) < (${after.initiated_at}::timestamptz, ${after.trade_id})` : db``}
    order by g.initiated_at desc, g.trade_id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, next: rows.length > limit && last ? { initiated_at: last.initiated_at_text, trade_id: last.trade_id } : null };
}

export type CounterpartyCounts = { trades: number; reversals: number; last_reversal_at: Date | null };

/**
 * A counterparty's history with one workspace (docs/design.md §17: its own accounts only): trades that moved
 * items (return trades and failed ones are not counted), of which reversed, and the last reversal.
 */
export async function countCounterparty(db: Queryable, workspaceId: string, steamId: string): Promise<CounterpartyCounts> {
  const [row] = await db<{ trades: number; reversals: number; last_reversal_at: Date | null }[]>`
    select count(*) filter (where rollback_trade_id is null and status <> ${TRADE_FAILED})::int as trades,
           count(*) filter (where status = ${TRADE_PROTECTION_ROLLBACK})::int as reversals,
           max(reversed_at) filter (where status = ${TRADE_PROTECTION_ROLLBACK}) as last_reversal_at
    from gameplatform_trades
    where workspace_id = ${workspaceId} and counterparty_steam_id = ${steamId}`;
  return row ?? { trades: 0, reversals: 0, last_reversal_at: null };
}

/**
 * The counts of countCounterparty as two columns of a query over `trade_intents i` (trade intents'
 * `risk`): the intent's partner, over its workspace's trades.
 */
export const partnerRiskColumns = (db: Queryable) => db`
  coalesce((select count(*) filter (where t.rollback_trade_id is null and t.status <> ${TRADE_FAILED})
            from gameplatform_trades t where t.workspace_id = i.workspace_id and t.counterparty_steam_id = i.partner_steam_id), 0)::int as partner_trades,
  coalesce((select count(*) filter (where t.status = ${TRADE_PROTECTION_ROLLBACK})
            from gameplatform_trades t where t.workspace_id = i.workspace_id and t.counterparty_steam_id = i.partner_steam_id), 0)::int as partner_reversals`;

/** The same counts for several counterparties at once (trade intent lists), keyed by SteamID64. */
export async function countCounterparties(db: Queryable, workspaceId: string, steamIds: readonly string[]): Promise<Map<string, CounterpartyCounts>> {
  const counts = new Map<string, CounterpartyCounts>();
  if (steamIds.length === 0) return counts;
  const rows = await db<({ steam_id: string } & CounterpartyCounts)[]>`
    select counterparty_steam_id as steam_id,
           count(*) filter (where rollback_trade_id is null and status <> ${TRADE_FAILED})::int as trades,
           count(*) filter (where status = ${TRADE_PROTECTION_ROLLBACK})::int as reversals,
           max(reversed_at) filter (where status = ${TRADE_PROTECTION_ROLLBACK}) as last_reversal_at
    from gameplatform_trades
    where workspace_id = ${workspaceId} and counterparty_steam_id = any(${[...new Set(steamIds)]}::text[])
    group by counterparty_steam_id`;
  for (const row of rows) counts.set(row.steam_id, { trades: row.trades, reversals: row.reversals, last_reversal_at: row.last_reversal_at });
  return counts;
}

/** Inside a disconnect's transaction: the account's trades (reversals cascade) and its poll go. */
export async function deleteTradesOfAccount(tx: Queryable, accountId: string): Promise<number> {
  await tx`delete from gameplatform_trade_polls where account_id = ${accountId}::bigint`;
  const rows = await tx`delete from gameplatform_trades where account_id = ${accountId}::bigint`;
  return rows.count;
}
