import { Counter } from 'prom-client';
import type { Config } from '../platform/config.ts';
import type { Redis } from '../platform/redis.ts';
import { createRequestBudget, type RequestBudget } from '../sources/budget.ts';
import { SourceRateLimitedError } from '../sources/types.ts';

/**
 * The one Steam Web budget every owner-side reader shares (docs/design.md §15 and §17): the inventory watch's
 * page reads and the trade-history polls each spend one unit per request of a Redis sliding window
 * (shared/sources/budget.ts), so every process together stays within
 * STEAM_INVENTORY_REQUESTS_PER_MINUTE. A 429 from Steam blocks the window for its Retry-After.
 */

export const steamBudgetWaits = new Counter({
  name: 'cs2_steam_budget_waits_total',
  help: 'Times a Steam read (inventory watch, trade history) waited for the shared Steam request budget, by reader',
  labelNames: ['reader'] as const,
  registers: [],
});
export const steamBudgetWaitSeconds = new Counter({
  name: 'cs2_steam_budget_wait_seconds_total',
  help: 'Seconds Steam reads spent waiting for the shared Steam request budget, by reader',
  labelNames: ['reader'] as const,
  registers: [],
});
export type SteamBudgetReader = 'inventory_watch' | 'trade_history';
for (const reader of ['inventory_watch', 'trade_history'] as const) {
  steamBudgetWaits.inc({ reader }, 0);
  steamBudgetWaitSeconds.inc({ reader }, 0);
}
export const steamBudgetMetrics = [steamBudgetWaits, steamBudgetWaitSeconds];

/**
 * Slack added to the budget's window: the budget admits a request when Redis says so, Steam sees it
 * a moment later, so admissions N apart by a window plus this stay N apart by a window at Steam.
 */
export const BUDGET_MARGIN_MS = 1_000;

export type SteamBudgetSettings = {
  /** Requests admitted per window, across every process. */
  requests: number;
  windowMs: number;
  /** See BUDGET_MARGIN_MS. */
  marginMs?: number;
  /** Redis key namespace (default `<QUEUE_PREFIX>:steam-inventory-budget`). */
  keyPrefix?: string;
};

export function steamBudgetSettings(
  config: Pick<Config, 'STEAM_INVENTORY_REQUESTS_PER_MINUTE' | 'QUEUE_PREFIX'>,
  budget?: SteamBudgetSettings,
): Required<SteamBudgetSettings> {
  return {
    requests: budget?.requests ?? config.STEAM_INVENTORY_REQUESTS_PER_MINUTE,
    windowMs: budget?.windowMs ?? 60_000,
    marginMs: budget?.marginMs ?? BUDGET_MARGIN_MS,
    keyPrefix: budget?.keyPrefix ?? `${config.QUEUE_PREFIX}:steam-inventory-budget`,
  };
}

/** The shared budget as a RequestBudget ('steam' only names the key's hash tag; the prefix keeps it apart from the market price budget). */
export function steamRequestBudget(
  deps: { config: Pick<Config, 'STEAM_INVENTORY_REQUESTS_PER_MINUTE' | 'QUEUE_PREFIX'>; redis: Redis; now: () => Date },
  budget?: SteamBudgetSettings,
): RequestBudget {
  const settings = steamBudgetSettings(deps.config, budget);
  return createRequestBudget(
    deps.redis,
    'steam',
    { requests: settings.requests, windowSeconds: (settings.windowMs + settings.marginMs) / 1000, keyPrefix: settings.keyPrefix },
    { now: deps.now },
  );
}

/** Thrown by acquireSteamBudget when the wait would pass the caller's limit: the read is deferred, not failed. */
export class BudgetDeferred extends Error {}

/** Waits for one unit of the shared budget; BudgetDeferred when that would pass `giveUpAt` (ms). */
export async function acquireSteamBudget(budget: RequestBudget, giveUpAt: number, reader: SteamBudgetReader): Promise<void> {
  let waited = 0;
  for (;;) {
    try {
      await budget.acquire();
      if (waited > 0) steamBudgetWaitSeconds.inc({ reader }, waited / 1000);
      return;
    } catch (error) {
      if (!(error instanceof SourceRateLimitedError)) throw error;
      if (waited === 0) steamBudgetWaits.inc({ reader });
      // A few ms of jitter: processes woken by the same slot do not all ask at the same instant.
      const waitMs = error.retryAfterMs + Math.floor(Math.random() * 25);
      if (Date.now() + waitMs > giveUpAt) {
        if (waited > 0) steamBudgetWaitSeconds.inc({ reader }, waited / 1000);
        throw new BudgetDeferred();
      }
      await Bun.sleep(waitMs);
      waited += waitMs;
    }
  }
}
