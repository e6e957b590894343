import { CompatPriceGatherer, gatheredCompatDataset } from '../../shared/compat/dataset.ts';
import { compatWantedKey } from '../../shared/compat/documents.ts';
import { COMPAT_BUILDERS } from '../../shared/compat/registry.ts';
import { type CompatBuildReport, ensureCompatDocuments } from '../../shared/compat/store.ts';
import { calculateMarketIndex } from '../../shared/market-index/calculate.ts';
import { buildPriceSnapshot, PRICE_SNAPSHOT_CHANNEL } from '../../shared/prices/snapshot.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/**
 * Work that follows an ingest run: the keyless price snapshot and the market index of the run's
 * marketplace. Kept out of the ingest pool so their memory never adds to an ingest run's.
 */
export const indexPool: PoolDefinition = {
  pool: 'index',
  handlers: ({ sql, redis, log, now, config }) => [
    handle('prices.snapshot', async () => {
      // docs/design.md §20: the drop-in formats' documents of a new snapshot, built here (off the request path)
      // while someone reads them (a /compat request within the hour), from prices gathered in the
      // snapshot's own pass; otherwise at the first request.
      const wanted = (await redis.exists(compatWantedKey(config.QUEUE_PREFIX)).catch(() => 0)) === 1;
      const gatherer = wanted ? new CompatPriceGatherer(sql) : null;
      const build = await buildPriceSnapshot(sql, now(), { log, publish: (id) => redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id)), onItem: gatherer?.onItem });
      let compat: CompatBuildReport | null = null;
      if (!build.unchanged && gatherer) {
        const [snapshot] = await sql<{ created_at: Date }[]>`select created_at from price_snapshots where id = ${build.id}`;
        if (snapshot) {
          compat = await ensureCompatDocuments(
            { sql, redis, prefix: config.QUEUE_PREFIX },
            { id: build.id, created_at: snapshot.created_at },
            COMPAT_BUILDERS,
            log,
            () => gatheredCompatDataset(sql, gatherer, snapshot.created_at),
          );
        }
      }
      return { id: build.id, items: build.item_count, unchanged: build.unchanged, ms: build.duration_ms, compat_ms: compat?.ms ?? null };
    }),
    handle('market_index.calculate', async ({ marketplace, after_run }) => {
      const outcome = await calculateMarketIndex(sql, { marketplace, now });
      if (outcome.status === 'skipped') log.info({ marketplace, after_run, reason: outcome.reason }, 'market index skipped');
      else log.info({ marketplace, after_run, ...outcome }, 'market index calculated');
      return outcome.status === 'skipped' ? outcome : { status: outcome.status, index_run: outcome.indexRunId, ms: outcome.ms };
    }),
  ],
};
