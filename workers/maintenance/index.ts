import { inventoryWatchMetrics, runInventoryWatch, sendItemTradable, sendProtectionEnded } from '../../shared/gameplatform/inventory-watch.ts';
import { deleteOldTradableRecords } from '../../shared/gameplatform/inventory-watch-repository.ts';
import { runTradeHistory, tradeHistoryMetrics } from '../../shared/gameplatform/trade-history.ts';
import { expireDueTradeIntents } from '../../shared/gameplatform/trade-intents.ts';
import { deleteStaleHeartbeats } from '../../shared/health/heartbeats.ts';
import { deleteExpiredIdempotencyRecords } from '../../shared/idempotency/records.ts';
import { deleteExpiredSessions } from '../../shared/identity/sessions.ts';
import { deleteOldSignInFailures } from '../../shared/identity/sign-in-limits.ts';
import type { Config } from '../../shared/platform/config.ts';
import { applyRetention } from '../../shared/retention/partitions.ts';
import { retentionPolicy } from '../../shared/retention/policy.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/** item.tradable records are kept this long (a hold that ended then can no longer be scheduled again). */
const TRADABLE_RECORDS_DAYS = 30;

/**
 * How often a run of the inventory watch starts (docs/design.md §15): every 10 s, or the watch interval when
 * shorter. A run lasts at most this long (a read it began is finished), so runs rarely overlap.
 */
export function inventoryWatchRunEveryMs(config: Config): number {
  return Math.min(10_000, config.INVENTORY_WATCH_INTERVAL_SECONDS * 1000);
}

/** How often a run of the trade-history poll starts (docs/design.md §17): as the inventory watch's, from its own interval. */
export function tradeHistoryRunEveryMs(config: Config): number {
  return Math.min(10_000, config.TRADE_HISTORY_INTERVAL_SECONDS * 1000);
}

/**
 * Housekeeping: drops idempotency records past 24 h, expired sessions and old sign-in failures;
 * expires trade-intent drafts past their expires_at; keeps the time partitions of the growing
 * tables (created ahead, dropped past their retention: shared/retention/). And the inventory watch
 * (docs/design.md §15, shared/gameplatform/inventory-watch.ts): watched inventories re-read within the global
 * Steam budget, and item.tradable when a trade hold ends. And the trade-history poll (docs/design.md §17,
 * shared/gameplatform/trade-history.ts): accounts with owner tokens read within the same budget, and
 * trade.reversed when a trade is reversed.
 */
export const maintenancePool: PoolDefinition = {
  pool: 'maintenance',
  schedules: (config) => [
    { id: 'maintenance-cleanup', job: 'maintenance.cleanup', everyMs: 10 * 60_000 },
    { id: 'maintenance-retention', job: 'maintenance.retention', everyMs: 60 * 60_000 },
    { id: 'maintenance-trade-intents-expire', job: 'trade_intents.expire', everyMs: 30_000 },
    { id: 'maintenance-inventory-watch', job: 'inventory_watch.read', everyMs: inventoryWatchRunEveryMs(config) },
    { id: 'maintenance-trade-history', job: 'trade_history.read', everyMs: tradeHistoryRunEveryMs(config) },
  ],
  // A watch run and a trade-history run wait for the Steam budget: the other jobs (trade-intent expiry every 30 s) run beside them.
  concurrency: 4,
  metrics: [...inventoryWatchMetrics, ...tradeHistoryMetrics],
  handlers: ({ config, sql, redis, log, now, enqueue }) => [
    handle('maintenance.cleanup', async () => {
      const at = now();
      const removed = {
        idempotency_records: await deleteExpiredIdempotencyRecords(sql, at),
        sessions: await deleteExpiredSessions(sql, at),
        sign_in_failures: await deleteOldSignInFailures(sql, at),
        heartbeats: await deleteStaleHeartbeats(sql, at),
        inventory_tradable_events: await deleteOldTradableRecords(sql, new Date(at.getTime() - TRADABLE_RECORDS_DAYS * 86_400_000)),
      };
      log.info({ removed }, 'cleanup done');
      return removed;
    }),
    handle('maintenance.retention', async () => {
      const report = await applyRetention(sql, retentionPolicy(config), now(), log);
      log.info({ report }, 'retention done');
      return report;
    }),
    handle('trade_intents.expire', async () => {
      const expired = await expireDueTradeIntents(sql, now());
      if (expired > 0) log.info({ expired }, 'trade intents expired');
      return { expired };
    }),
    handle('inventory_watch.read', async () => {
      const report = await runInventoryWatch({ config, sql, redis, log, now, enqueue }, { runForMs: inventoryWatchRunEveryMs(config) });
      if (Object.keys(report.reads).length > 0) log.info({ report }, 'inventory watch run done');
      return report;
    }),
    handle('trade_history.read', async () => {
      const report = await runTradeHistory({ config, sql, redis, log, now }, { runForMs: tradeHistoryRunEveryMs(config) });
      if (Object.keys(report.reads).length > 0) log.info({ report }, 'trade history run done');
      return report;
    }),
    handle('inventory_watch.tradable', async (payload) => ({ outcome: await sendItemTradable({ sql, now, log }, payload) })),
    handle('inventory_watch.protection_ended', async (payload) => ({ outcome: await sendProtectionEnded({ sql, now, log }, payload) })),
  ],
};
