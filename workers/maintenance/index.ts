import { expireDueTradeIntents } from '../../shared/gameplatform/trade-intents.ts';
import { deleteStaleHeartbeats } from '../../shared/health/heartbeats.ts';
import { deleteExpiredIdempotencyRecords } from '../../shared/idempotency/records.ts';
import { deleteExpiredSessions } from '../../shared/identity/sessions.ts';
import { deleteOldSignInFailures } from '../../shared/identity/sign-in-limits.ts';
import { applyRetention } from '../../shared/retention/partitions.ts';
import { retentionPolicy } from '../../shared/retention/policy.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/**
 * Housekeeping: drops idempotency records past 24 h, expired sessions and old sign-in failures;
 * expires trade-intent drafts past their expires_at; keeps the time partitions of the growing
 * tables (created ahead, dropped past their retention: shared/retention/).
 */
export const maintenancePool: PoolDefinition = {
  pool: 'maintenance',
  schedules: [
    { id: 'maintenance-cleanup', job: 'maintenance.cleanup', everyMs: 10 * 60_000 },
    { id: 'maintenance-retention', job: 'maintenance.retention', everyMs: 60 * 60_000 },
    { id: 'maintenance-trade-intents-expire', job: 'trade_intents.expire', everyMs: 30_000 },
  ],
  handlers: ({ config, sql, log, now }) => [
    handle('maintenance.cleanup', async () => {
      const at = now();
      const removed = {
        idempotency_records: await deleteExpiredIdempotencyRecords(sql, at),
        sessions: await deleteExpiredSessions(sql, at),
        sign_in_failures: await deleteOldSignInFailures(sql, at),
        heartbeats: await deleteStaleHeartbeats(sql, at),
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
  ],
};
