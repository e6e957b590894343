import { deleteOldTradableRecords } from '../../shared/gameplatform/inventory-watch-repository.ts';
import { inventoryWatchMetrics, runInventoryWatch, sendItemTradable } from '../../shared/gameplatform/inventory-watch.ts';
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
 * How often a run of the inventory watch starts (DESIGN 15): every 10 s, or the watch interval when
 * shorter. A run lasts at most this long (a read it began is finished), so runs rarely overlap.
 */
export function inventoryWatchRunEveryMs(config: Config): number {
  return Math.min(10_000, config.INVENTORY_WATCH_INTERVAL_SECONDS * 1000);
}

/**
 * Housekeeping: drops idempotency records past 24 h, expired sessions and old sign-in failures;
 * expires trade-intent drafts past their expires_at; keeps the time partitions of the growing
 * tables (created ahead, dropped past their retention: shared/retention/). And the inventory watch
 * (DESIGN 15, shared/gameplatform/inventory-watch.ts): watched inventories re-read within the global
 * Steam budget, and item.tradable when a trade hold ends.
 */
export const maintenancePool: PoolDefinition = {
  pool: 'maintenance',
  schedules: (config) => [
    { id: 'maintenance-cleanup', job: 'maintenance.cleanup', everyMs: 10 * 60_000 },
    { id: 'maintenance-retention', job: 'maintenance.retention', everyMs: 60 * 60_000 },
    { id: 'maintenance-trade-intents-expire', job: 'trade_intents.expire', everyMs: 30_000 },
    { id: 'maintenance-inventory-watch', job: 'inventory_watch.read', everyMs: inventoryWatchRunEveryMs(config) },
  ],
  // A watch run waits for the Steam budget: the other jobs (trade-intent expiry every 30 s) run beside it.
  concurrency: 3,
  metrics: inventoryWatchMetrics,
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
    handle('inventory_watch.tradable', async (payload) => ({ outcome: await sendItemTradable({ sql, now, log }, payload) })),
  ],
};
