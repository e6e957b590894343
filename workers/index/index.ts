import { calculateMarketIndex } from '../../shared/market-index/calculate.ts';
import { buildPriceSnapshot, PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/**
 * Work that follows an ingest run: the keyless price snapshot and the market index of the run's
 * marketplace. Kept out of the ingest pool so their memory never adds to an ingest run's.
 */
export const indexPool: PoolDefinition = {
  pool: 'index',
  handlers: ({ sql, redis, log, now }) => [
    handle('prices.snapshot', async () => {
      const build = await buildPriceSnapshot(sql, now(), { log, publish: (id) => redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id)) });
      return { id: build.id, items: build.item_count, unchanged: build.unchanged, ms: build.duration_ms };
    }),
    handle('market_index.calculate', async ({ marketplace, after_run }) => {
      const outcome = await calculateMarketIndex(sql, { marketplace, now });
      if (outcome.status === 'skipped') log.info({ marketplace, after_run, reason: outcome.reason }, 'market index skipped');
      else log.info({ marketplace, after_run, ...outcome }, 'market index calculated');
      return outcome.status === 'skipped' ? outcome : { status: outcome.status, index_run: outcome.indexRunId, ms: outcome.ms };
    }),
  ],
};
