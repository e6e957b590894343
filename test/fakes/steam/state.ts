/** Mutable state shared by the fake's handlers (one per startSteamFake). */
import type { AccessTokenState } from './access-tokens.ts';
import type { InventoryState } from './data.ts';
import type { TradeHistoryState } from './trade-history.ts';
import type { InventoryFixture, PlayerSummary } from './types.ts';

export type FailureKind = 'profiles' | 'inventory' | 'openid' | 'trade_history';
/**
 * `steamId`: only requests for that account's inventory (or, for 'trade_history', made with that
 * account's token) fail (others are answered as usual).
 * `stallMs` (inventory and trade_history): the answer comes that late (a client with a shorter timeout times out).
 */
export type FailureSpec = { status: number; retryAfter?: number; times?: number; steamId?: string; stallMs?: number };

export type FakeState = {
  apiKey: string;
  profiles: Map<string, PlayerSummary>;
  inventories: Map<string, InventoryState | (() => InventoryFixture)>;
  failures: Record<FailureKind, { status: number; retryAfter?: number; remaining: number; steamId?: string; stallMs?: number }[]>;
  requests: { path: string; query: Record<string, string> }[];
  /** The last asset id handed out by inventory-changes.ts (new items and traded ones count up from it). */
  nextAssetId: bigint;
  /** Requests to the community inventory, with their arrival time in ms (Date.now()), oldest first (the last 10 000). */
  inventoryRequests: { steamId: string; at: number; status: number }[];
  /** Inventories made private by setInventoryVisibility, kept to be public again unchanged. */
  hiddenInventories: Map<string, InventoryFixture>;
  /** Owner access tokens the fake issued and revoked (access-tokens.ts). */
  accessTokens: AccessTokenState;
  /** Trades between accounts, and GetTradeHistory requests (trade-history.ts). */
  tradeHistory: TradeHistoryState;
};

/** The next queued failure for a kind, consumed; null when requests should succeed. */
export function takeFailure(state: FakeState, kind: FailureKind, steamId?: string): { status: number; retryAfter?: number; stallMs?: number } | null {
  const queue = state.failures[kind];
  const index = queue.findIndex((failure) => failure.steamId === undefined || failure.steamId === steamId);
  const next = queue[index];
  if (!next) return null;
  next.remaining -= 1;
  if (next.remaining <= 0) queue.splice(index, 1);
  return {
    status: next.status,
    ...(next.retryAfter === undefined ? {} : { retryAfter: next.retryAfter }),
    ...(next.stallMs === undefined ? {} : { stallMs: next.stallMs }),
  };
}

export function retryAfterHeaders(failure: { retryAfter?: number }): Record<string, string> {
  return failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) };
}
