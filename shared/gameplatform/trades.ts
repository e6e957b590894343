import { z } from 'zod';
import { errors } from '../http/errors.ts';
import type { Queryable } from '../platform/db.ts';
import { findAccountOfWorkspace } from './accounts.ts';
import { steamIdsOf } from './steam-id.ts';
import {
  countCounterparty,
  listTradesOfAccount,
  type StoredTradeAsset,
  TRADE_PROTECTION_ROLLBACK,
  type TradePosition,
  type TradeRow,
} from './trades-repository.ts';

/**
 * The API's reads of connected accounts' Steam trades (docs/design.md §17): an account's stored trades and a
 * counterparty's history with the workspace. The poll that stores them is trade-history.ts.
 */

/**
 * Steam's ETradeStatus by number, as public client code spells it (the Valve developer wiki's
 * IEconService page; 12 is undocumented by Valve and observed since trade protection, July 2025).
 */
export const TRADE_STATUSES = [
  'init',
  'pre_committed',
  'committed',
  'complete',
  'failed',
  'partial_support_rollback',
  'full_support_rollback',
  'support_rollback_selective',
  'rollback_failed',
  'rollback_abandoned',
  'in_escrow',
  'escrow_rollback',
  'trade_protection_rollback',
] as const;
export type TradeStatusName = (typeof TRADE_STATUSES)[number];

export const statusName = (status: number): TradeStatusName | 'unknown' => TRADE_STATUSES[status] ?? 'unknown';
export const statusCode = (name: TradeStatusName): number => TRADE_STATUSES.indexOf(name);

const tradeAssetSchema = z.object({
  app_id: z.number().int(),
  context_id: z.string(),
  asset_id: z.string().describe('The asset id before the trade (in the inventory that gave it)'),
  new_asset_id: z.string().nullable().describe('Its asset id after the trade (in the inventory that received it); Steam gives every traded item a new one'),
  new_context_id: z.string().nullable(),
  class_id: z.string(),
  instance_id: z.string(),
  amount: z.string(),
});

export const tradeSchema = z.object({
  trade_id: z.string().describe("Steam's tradeid"),
  counterparty_steam_id: z.string().describe('SteamID64 of the other side'),
  status: z
    .enum([...TRADE_STATUSES, 'unknown'])
    .describe(
      "Steam's trade status by name: `committed` while the received items are trade-protected, `complete` once settled, `trade_protection_rollback` when reversed, `failed`, …",
    ),
  status_code: z.number().int().describe("Steam's ETradeStatus number (2 committed, 3 complete, 4 failed, 12 trade_protection_rollback, …)"),
  reversed: z.boolean().describe('The trade was reversed during its trade protection (status 12)'),
  reversed_at: z.string().nullable().describe('When it was reversed (its return trade began), or null'),
  rollback_trade_id: z.string().nullable().describe('On a return trade: the trade it reverses'),
  initiated_at: z.string(),
  escrow_ends_at: z.string().nullable(),
  settled_at: z.string().nullable(),
  assets_given: z.array(tradeAssetSchema).describe('Assets this account gave'),
  assets_received: z.array(tradeAssetSchema).describe('Assets this account received'),
});
export type Trade = z.infer<typeof tradeSchema>;

const toAsset = (asset: StoredTradeAsset) => ({
  app_id: asset.appid,
  context_id: asset.contextid,
  asset_id: asset.assetid,
  new_asset_id: asset.new_assetid,
  new_context_id: asset.new_contextid,
  class_id: asset.classid,
  instance_id: asset.instanceid,
  amount: asset.amount,
});

export function toTrade(row: TradeRow): Trade {
  return {
    trade_id: row.trade_id,
    counterparty_steam_id: row.counterparty_steam_id,
    status: statusName(row.status),
    status_code: row.status,
    reversed: row.status === TRADE_PROTECTION_ROLLBACK,
    reversed_at: row.status === TRADE_PROTECTION_ROLLBACK && row.reversed_at ? row.reversed_at.toISOString() : null,
    rollback_trade_id: row.rollback_trade_id,
    initiated_at: row.initiated_at.toISOString(),
    escrow_ends_at: row.escrow_ends_at?.toISOString() ?? null,
    settled_at: row.settled_at?.toISOString() ?? null,
    assets_given: row.assets_given.map(toAsset),
    assets_received: row.assets_received.map(toAsset),
  };
}

/**
 * GET …/accounts/{account_id}/trades: the account's stored trades, newest first; 404 for an account
 * that is not the workspace's live one (another workspace's included).
 */
export async function listAccountTrades(
  db: Queryable,
  workspaceId: string,
  accountId: string,
  filter: { status: TradeStatusName | null },
  after: TradePosition | null,
  limit: number,
): Promise<{ data: Trade[]; next: TradePosition | null }> {
  const account = await findAccountOfWorkspace(db, workspaceId, accountId);
  if (!account) throw errors.notFound('No connected account with this id in your workspace.');
  const page = await listTradesOfAccount(db, accountId, { status: filter.status === null ? null : statusCode(filter.status) }, after, limit);
  return { data: page.rows.map(toTrade), next: page.next };
}

export const counterpartySchema = z.object({
  steam_id: z.string().describe('SteamID64'),
  steam_id2: z.string(),
  steam_id3: z.string(),
  trades: z.number().int().describe("Trades between this SteamID and the workspace's connected accounts (return trades and failed trades not counted)"),
  reversals: z.number().int().describe('Of those, how many were reversed during their trade protection'),
  last_reversal_at: z.string().nullable().describe('When the last of them was reversed'),
});
export type Counterparty = z.infer<typeof counterpartySchema>;

/** GET /v2/gameplatform/counterparties/{id}: counted over this workspace's accounts only; zeros for a SteamID never traded with. */
export async function getCounterparty(db: Queryable, workspaceId: string, steamId64: string): Promise<Counterparty> {
  const counts = await countCounterparty(db, workspaceId, steamId64);
  return { ...steamIdsOf(steamId64), trades: counts.trades, reversals: counts.reversals, last_reversal_at: counts.last_reversal_at?.toISOString() ?? null };
}
