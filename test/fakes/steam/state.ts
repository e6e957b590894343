/** Mutable state shared by the fake's handlers (one per startSteamFake). */
import type { InventoryState } from './data.ts';
import type { InventoryFixture, PlayerSummary } from './types.ts';

export type FailureKind = 'profiles' | 'inventory' | 'openid';
export type FailureSpec = { status: number; retryAfter?: number; times?: number };

export type FakeState = {
  apiKey: string;
  profiles: Map<string, PlayerSummary>;
  inventories: Map<string, InventoryState | (() => InventoryFixture)>;
  failures: Record<FailureKind, { status: number; retryAfter?: number; remaining: number }[]>;
  requests: { path: string; query: Record<string, string> }[];
};

/** The next queued failure for a kind, consumed; null when requests should succeed. */
export function takeFailure(state: FakeState, kind: FailureKind): { status: number; retryAfter?: number } | null {
  const queue = state.failures[kind];
  const next = queue[0];
  if (!next) return null;
  next.remaining -= 1;
  if (next.remaining <= 0) queue.shift();
  return { status: next.status, ...(next.retryAfter === undefined ? {} : { retryAfter: next.retryAfter }) };
}

export function retryAfterHeaders(failure: { retryAfter?: number }): Record<string, string> {
  return failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) };
}
