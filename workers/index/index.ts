import { buildPriceSnapshot, PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/**
 * Work that follows an ingest run: the keyless price snapshot (and, with a later issue, the market
 * index). Kept out of the ingest pool so a snapshot's memory never adds to an ingest run's.
 */
export const indexPool: PoolDefinition = {
  pool: 'index',
  handlers: ({ sql, redis, log, now }) => [
    handle('prices.snapshot', async () => {
      const build = await buildPriceSnapshot(sql, now(), { log, publish: (id) => redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id)) });
      return { id: build.id, items: build.item_count, unchanged: build.unchanged, ms: build.duration_ms };
    }),
  ],
};
